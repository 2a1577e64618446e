# GPU backend tests (tests/gpu/test_*.c): they link typedmem_gpu and skip
# (CTest code 77, with a message) where no device or driver is present.
file(GLOB TMEM_GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.c)
foreach(src ${TMEM_GPU_TESTS})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^test_([a-z]+).*" "\\1" api ${name})
  if(api STREQUAL "vk")
    set(api vulkan) # the runtime's Vulkan ops (runtime/src/gpu/)
  endif()
  if(NOT TMEM_GPU_BUILT_${api})
    # The API was not compiled in: a visible skip, not a silent pass.
    add_test(NAME gpu/${name} COMMAND sh -c "echo 'SKIP: typedmem_gpu built without ${api} (headers not found)'; exit 77")
    set_tests_properties(gpu/${name} PROPERTIES SKIP_RETURN_CODE 77)
    continue()
  endif()
  add_executable(gpu_${name} ${src})
  target_link_libraries(gpu_${name} PRIVATE tmem_testlib typedmem_gpu)
  if(name MATCHES "^test_vk_")
    target_link_libraries(gpu_${name} PRIVATE typedmem_runtime_link)
    target_include_directories(gpu_${name} PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
  endif()
  set_target_properties(gpu_${name} PROPERTIES TMEM_TESTING ON)
  add_test(NAME gpu/${name} COMMAND gpu_${name})
  set_tests_properties(gpu/${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "TMEM_SHARED_DIR=${CMAKE_SOURCE_DIR}/../shared;TMEM_SOURCE_DIR=${CMAKE_SOURCE_DIR};LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
endforeach()
# The GPU vision encoder's benchmark (tests/gpu/bench_vk_vision.c: encode
# time at 1024x1024, the 1080p NV12 frame loop; /work/notes/device/gpuvis.sh
# runs it on the H200) and its smoke run on the tiny preset.
if(TARGET gpu_test_vk_vision)
  add_executable(gpu_bench_vk_vision ${CMAKE_SOURCE_DIR}/tests/gpu/bench_vk_vision.c)
  target_link_libraries(gpu_bench_vk_vision PRIVATE tmem_testlib typedmem_gpu typedmem_runtime_link)
  set_target_properties(gpu_bench_vk_vision PROPERTIES TMEM_TESTING ON)
  add_test(NAME gpu/bench_vk_vision_quick COMMAND gpu_bench_vk_vision --quick)
  set_tests_properties(gpu/bench_vk_vision_quick PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    PASS_REGULAR_EXPRESSION "encode nv12.*image copies 1.*encode rgb8.*frames .*heaps.*flat"
    ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
endif()
# The GPU vision encoder's test reads the committed PNG where a decoder was built.
if(TARGET gpu_test_vk_vision_encoder AND TARGET typedmem_runtime_codecs)
  target_link_libraries(gpu_test_vk_vision_encoder PRIVATE typedmem_runtime_codecs)
endif()
# The committed SPIR-V must be what the committed GLSL compiles to.
if(TMEM_GLSLANG AND TARGET typedmem_gpu)
  add_test(NAME gpu/spirv_committed_fresh
    COMMAND ${CMAKE_COMMAND} -E compare_files ${CMAKE_SOURCE_DIR}/src/gpu/vulkan/shaders/nv12_to_chw.spv.h
            ${CMAKE_BINARY_DIR}/shaders/nv12_to_chw.spv.h)
  add_test(NAME gpu/spirv_committed_fresh_f32
    COMMAND ${CMAKE_COMMAND} -E compare_files ${CMAKE_SOURCE_DIR}/src/gpu/vulkan/shaders/nv12_to_chw_f32.spv.h
            ${CMAKE_BINARY_DIR}/shaders/nv12_to_chw_f32.spv.h)
endif()
# The Vulkan test again under the Khronos validation layer, where installed
# (Debian: vulkan-validationlayers): any spec violation fails it.
foreach(_n test_vulkan test_vulkan_kv test_vulkan_weights)
  if(TARGET gpu_${_n} AND EXISTS /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json)
    add_test(NAME gpu/${_n}_validation COMMAND gpu_${_n})
    set_tests_properties(gpu/${_n}_validation PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
      FAIL_REGULAR_EXPRESSION "Validation Error"
      ENVIRONMENT "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation;LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
  endif()
endforeach()
# The runtime's ops again with the fallbacks forced (shared-memory
# reductions, 32-bit-word reads: TMRT_VK_NO_SUBGROUP | TMRT_VK_NO_STORAGE16),
# and under the validation layer.
foreach(_t ${TMEM_GPU_TESTS})
  get_filename_component(_n ${_t} NAME_WE)
  if(NOT _n MATCHES "^test_vk_" OR NOT TARGET gpu_${_n})
    continue()
  endif()
  add_test(NAME gpu/${_n}_fallback COMMAND gpu_${_n})
  set_tests_properties(gpu/${_n}_fallback PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "TMRT_VK_TEST_FLAGS=3;TMEM_SOURCE_DIR=${CMAKE_SOURCE_DIR};LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
  if(EXISTS /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json)
    add_test(NAME gpu/${_n}_validation COMMAND gpu_${_n})
    set_tests_properties(gpu/${_n}_validation PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
      FAIL_REGULAR_EXPRESSION "Validation Error"
      ENVIRONMENT "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation;TMEM_SOURCE_DIR=${CMAKE_SOURCE_DIR};LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
  endif()
endforeach()
# The runtime's Vulkan op benchmark (tests/gpu/bench_vk_ops.c: the 0.8B's
# matmul shapes per weight type, attention, DeltaNet; GB/s and GFLOP/s from
# GPU timestamps; /work/notes/device/gpukern.sh runs it on the H200), and its
# smoke run on small shapes, which asserts no timing.
if(TARGET gpu_test_vk_ops)
  add_executable(gpu_bench_vk_ops ${CMAKE_SOURCE_DIR}/tests/gpu/bench_vk_ops.c)
  target_link_libraries(gpu_bench_vk_ops PRIVATE tmem_testlib typedmem_gpu typedmem_runtime_link)
  target_include_directories(gpu_bench_vk_ops PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
  set_target_properties(gpu_bench_vk_ops PROPERTIES TMEM_TESTING ON)
  add_test(NAME gpu/bench_vk_ops_quick COMMAND gpu_bench_vk_ops --quick)
  set_tests_properties(gpu/bench_vk_ops_quick PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    PASS_REGULAR_EXPRESSION "decode  q6_K.*prefill q6_K.*deltanet chunked"
    ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
endif()
