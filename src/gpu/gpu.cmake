# typedmem_gpu: the GPU backends, a library of its own so the core links
# nothing new. Each API is compiled in when its headers are found; the
# drivers themselves are dlopen'ed at run time (libvulkan.so.1,
# libcuda.so.1), so nothing here adds a link dependency.
set(TMEM_GPU_SOURCES ${PROJECT_SOURCE_DIR}/src/gpu/gpu.c)
set(TMEM_GPU_DEFS "")
set(TMEM_GPU_INCLUDES "")
set(TMEM_GPU_SHADER_DIR "")

option(TMEM_VULKAN "Build the Vulkan backend when the headers are found" ON)
find_path(TMEM_VULKAN_INCLUDE vulkan/vulkan.h)
if(TMEM_VULKAN AND TMEM_VULKAN_INCLUDE)
  file(GLOB _vk CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/vulkan/vulkan*.c)
  list(APPEND TMEM_GPU_SOURCES ${_vk})
  list(APPEND TMEM_GPU_DEFS TMEM_HAVE_VULKAN=1)
  set(TMEM_GPU_BUILT_vulkan ON)
  list(APPEND TMEM_GPU_INCLUDES ${TMEM_VULKAN_INCLUDE})
  # The compute shader: compiled now when glslangValidator is here, else the
  # committed SPIR-V (src/gpu/vulkan/shaders/*.spv.h) is used as is.
  find_program(TMEM_GLSLANG glslangValidator)
  set(_spv_dir ${PROJECT_SOURCE_DIR}/src/gpu/vulkan/shaders)
  if(TMEM_GLSLANG)
    set(_spv_dir ${CMAKE_BINARY_DIR}/shaders)
    file(MAKE_DIRECTORY ${_spv_dir})
    # Twice: the exact-division variant for devices with shaderFloat64 and
    # the plain one for the rest (the shader's comment says why).
    set(_nv12 ${PROJECT_SOURCE_DIR}/src/gpu/vulkan/shaders/nv12_to_chw.comp)
    add_custom_command(
      OUTPUT ${_spv_dir}/nv12_to_chw.spv.h
      COMMAND ${TMEM_GLSLANG} -V --target-env vulkan1.1 -DTMEM_DIV_F64 --vn tmem__spv_nv12_to_chw
              -o ${_spv_dir}/nv12_to_chw.spv.h ${_nv12}
      DEPENDS ${_nv12}
      COMMENT "glslangValidator nv12_to_chw.comp (exact division)")
    add_custom_command(
      OUTPUT ${_spv_dir}/nv12_to_chw_f32.spv.h
      COMMAND ${TMEM_GLSLANG} -V --target-env vulkan1.1 --vn tmem__spv_nv12_to_chw_f32
              -o ${_spv_dir}/nv12_to_chw_f32.spv.h ${_nv12}
      DEPENDS ${_nv12}
      COMMENT "glslangValidator nv12_to_chw.comp (plain division)")
    list(APPEND TMEM_GPU_SOURCES ${_spv_dir}/nv12_to_chw.spv.h ${_spv_dir}/nv12_to_chw_f32.spv.h)
  endif()
  set(TMEM_GPU_SHADER_DIR ${_spv_dir})
  message(STATUS "typedmem_gpu: Vulkan backend (shader from ${_spv_dir})")
else()
  unset(TMEM_GLSLANG CACHE)
  message(STATUS "typedmem_gpu: Vulkan backend not built (TMEM_VULKAN off or no vulkan/vulkan.h)")
endif()

option(TMEM_CUDA "Build the CUDA backend when the toolkit is found" ON)
find_package(CUDAToolkit QUIET)
find_path(TMEM_CUDA_INCLUDE cuda.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include ENV CUDA_PATH PATH_SUFFIXES include)
if(TMEM_CUDA AND TMEM_CUDA_INCLUDE)
  file(GLOB _cu CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/cuda/cuda*.c)
  list(APPEND TMEM_GPU_SOURCES ${_cu})
  list(APPEND TMEM_GPU_DEFS TMEM_HAVE_CUDA=1)
  set(TMEM_GPU_BUILT_cuda ON)
  list(APPEND TMEM_GPU_INCLUDES ${TMEM_CUDA_INCLUDE})
  message(STATUS "typedmem_gpu: CUDA backend (cuda.h in ${TMEM_CUDA_INCLUDE})")
else()
  message(STATUS "typedmem_gpu: CUDA backend not built (TMEM_CUDA off or no cuda.h)")
endif()

add_library(typedmem_gpu STATIC ${TMEM_GPU_SOURCES})
target_include_directories(typedmem_gpu
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
# Vulkan/CUDA headers are system headers: their own warnings are not ours.
target_include_directories(typedmem_gpu SYSTEM PUBLIC ${TMEM_GPU_INCLUDES})
if(TMEM_GPU_SHADER_DIR)
  target_include_directories(typedmem_gpu PRIVATE ${TMEM_GPU_SHADER_DIR})
endif()
target_compile_definitions(typedmem_gpu PUBLIC ${TMEM_GPU_DEFS})
set_target_properties(typedmem_gpu PROPERTIES C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
# Like the runtime: the tests' copy of the library for targets with the
# TMEM_TESTING property, typedmem_static otherwise.
target_link_libraries(typedmem_gpu PUBLIC typedmem_for_runtime ${CMAKE_DL_LIBS})
target_link_libraries(tmem PRIVATE typedmem_gpu)
add_library(typedmem::gpu ALIAS typedmem_gpu)
if(TMEM_INSTALL)
  # find_package(typedmem) -> typedmem::gpu (install.cmake exports the set)
  set_target_properties(typedmem_gpu PROPERTIES EXPORT_NAME gpu)
  install(TARGETS typedmem_gpu EXPORT typedmemTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
