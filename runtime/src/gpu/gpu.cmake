# The runtime's Vulkan compute layer (runtime/src/gpu/*.c) and its shaders,
# built when the library's Vulkan backend is (vulkan/vulkan.h found): the
# runtime then links typedmem_gpu and defines TMRT_HAVE_VULKAN=1 for itself
# and its users; without it the runtime builds as before.
#
# Shaders: every kernel of vk_kernels.h (one "X(" line each) is compiled
# from shaders/<source>.comp by glslangValidator when present, in its
# variants (SG: _sg with SUBGROUP=1; S16: _s16 with STORAGE16=1; SG16:
# _sg, _s16 and _s16_sg), and the outputs are joined into one header, tmrt_spirv.h.
# Without glslangValidator the committed shaders/tmrt_spirv.h is used;
# gpu/spirv_runtime_fresh checks the committed one equals the rebuilt one
# (`cmake --build build --target tmrt_spirv_update` refreshes it).
set(TMRT_GPU_DIR ${PROJECT_SOURCE_DIR}/runtime/src/gpu)
set(TMRT_SHADER_DIR ${TMRT_GPU_DIR}/shaders)
if(NOT TMEM_GPU_BUILT_vulkan)
  message(STATUS "typedmem_runtime: Vulkan compute not built (no Vulkan backend)")
  return()
endif()
# The sources go into the object library the runtime's copies share
# (runtime/CMakeLists.txt: typedmem_runtime, _testing, _planted); each copy
# and the object library get the define and typedmem_gpu.
file(GLOB _tmrt_vk_src CONFIGURE_DEPENDS ${TMRT_GPU_DIR}/*.c ${PROJECT_SOURCE_DIR}/runtime/src/gpurun/*.c)
target_sources(typedmem_runtime_common PRIVATE ${_tmrt_vk_src})
foreach(_t typedmem_runtime_common typedmem_runtime typedmem_runtime_testing typedmem_runtime_planted)
  if(TARGET ${_t})
    target_compile_definitions(${_t} PUBLIC TMRT_HAVE_VULKAN=1)
    target_link_libraries(${_t} PUBLIC typedmem_gpu)
  endif()
endforeach()

# kernel list -> (variant name, defines)
file(READ ${TMRT_GPU_DIR}/vk_kernels.h _tmrt_text)
string(REGEX MATCHALL "X\\([A-Z0-9_]+, [a-z0-9_]+, [0-9]+, [A-Z0-9]+" _tmrt_lines "${_tmrt_text}")
set(_tmrt_vars "")
foreach(_l ${_tmrt_lines})
  string(REGEX MATCH "X\\([A-Z0-9_]+, ([a-z0-9_]+), [0-9]+, ([A-Z0-9]+)" _m "${_l}")
  set(_src ${CMAKE_MATCH_1})
  set(_kind ${CMAKE_MATCH_2})
  list(APPEND _tmrt_vars "${_src}:${_src}:0:0")
  if(_kind STREQUAL "SG" OR _kind STREQUAL "SG16")
    list(APPEND _tmrt_vars "${_src}_sg:${_src}:0:1")
  endif()
  if(_kind STREQUAL "SG16" OR _kind STREQUAL "S16")
    list(APPEND _tmrt_vars "${_src}_s16:${_src}:1:0")
  endif()
  if(_kind STREQUAL "SG16")
    list(APPEND _tmrt_vars "${_src}_s16_sg:${_src}:1:1")
  endif()
endforeach()

if(TMEM_GLSLANG)
  set(_out ${CMAKE_BINARY_DIR}/rt_shaders)
  file(MAKE_DIRECTORY ${_out})
  file(GLOB _tmrt_glsl CONFIGURE_DEPENDS ${TMRT_SHADER_DIR}/*.glsl)
  set(_parts "")
  foreach(_v ${_tmrt_vars})
    string(REPLACE ":" ";" _f "${_v}")
    list(GET _f 0 _name)
    list(GET _f 1 _src)
    list(GET _f 2 _s16)
    list(GET _f 3 _sg)
    add_custom_command(OUTPUT ${_out}/${_name}.spv.h
      COMMAND ${TMEM_GLSLANG} -V -g0 --target-env vulkan1.1 -DSTORAGE16=${_s16} -DSUBGROUP=${_sg}
              --vn tmrt__spv_${_name} -o ${_out}/${_name}.spv.h ${TMRT_SHADER_DIR}/${_src}.comp
      DEPENDS ${TMRT_SHADER_DIR}/${_src}.comp ${_tmrt_glsl}
      COMMENT "glslangValidator ${_name}")
    list(APPEND _parts ${_out}/${_name}.spv.h)
  endforeach()
  string(REPLACE ";" "|" _parts_arg "${_parts}")
  # joined as gpu/shaders/tmrt_spirv.h under _out, which comes first on the
  # include path: vk_spirv.c includes "gpu/shaders/tmrt_spirv.h" (the
  # committed one under runtime/src without glslangValidator)
  file(MAKE_DIRECTORY ${_out}/gpu/shaders)
  set(_joined ${_out}/gpu/shaders/tmrt_spirv.h)
  add_custom_command(OUTPUT ${_joined}
    COMMAND ${CMAKE_COMMAND} "-DPARTS=${_parts_arg}" -DOUT=${_joined} -P ${TMRT_GPU_DIR}/spirv_join.cmake
    DEPENDS ${_parts} ${TMRT_GPU_DIR}/spirv_join.cmake
    COMMENT "SPIR-V of the runtime's kernels -> tmrt_spirv.h" VERBATIM)
  add_custom_target(tmrt_spirv DEPENDS ${_joined})
  add_dependencies(typedmem_runtime_common tmrt_spirv)
  target_include_directories(typedmem_runtime_common BEFORE PRIVATE ${_out})
  add_custom_target(tmrt_spirv_update
    COMMAND ${CMAKE_COMMAND} -E copy ${_joined} ${TMRT_SHADER_DIR}/tmrt_spirv.h
    DEPENDS ${_joined} COMMENT "refresh the committed runtime/src/gpu/shaders/tmrt_spirv.h")
  if(TMEM_BUILD_TESTS)
    add_test(NAME gpu/spirv_runtime_fresh
      COMMAND ${CMAKE_COMMAND} -E compare_files ${TMRT_SHADER_DIR}/tmrt_spirv.h ${_joined})
  endif()
  message(STATUS "typedmem_runtime: Vulkan compute, shaders compiled by ${TMEM_GLSLANG}")
else()
  message(STATUS "typedmem_runtime: Vulkan compute, committed SPIR-V (no glslangValidator)")
endif()
