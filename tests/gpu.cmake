# GPU backend tests (tests/gpu/test_*.c): they link typedmem_gpu and skip
# (CTest code 77, with a message) where no device or driver is present.
file(GLOB TMEM_GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.c)
foreach(src ${TMEM_GPU_TESTS})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^test_([a-z]+).*" "\\1" api ${name})
  if(NOT TMEM_GPU_BUILT_${api})
    # The API was not compiled in: a visible skip, not a silent pass.
    add_test(NAME gpu/${name} COMMAND sh -c "echo 'SKIP: typedmem_gpu built without ${api} (headers not found)'; exit 77")
    set_tests_properties(gpu/${name} PROPERTIES SKIP_RETURN_CODE 77)
    continue()
  endif()
  add_executable(gpu_${name} ${src})
  target_link_libraries(gpu_${name} PRIVATE tmem_testlib typedmem_gpu)
  set_target_properties(gpu_${name} PROPERTIES TMEM_TESTING ON)
  add_test(NAME gpu/${name} COMMAND gpu_${name})
  set_tests_properties(gpu/${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "TMEM_SHARED_DIR=${CMAKE_SOURCE_DIR}/../shared;TMEM_SOURCE_DIR=${CMAKE_SOURCE_DIR};LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
endforeach()
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
if(TARGET gpu_test_vulkan AND EXISTS /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json)
  add_test(NAME gpu/test_vulkan_validation COMMAND gpu_test_vulkan)
  set_tests_properties(gpu/test_vulkan_validation PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    FAIL_REGULAR_EXPRESSION "Validation Error"
    ENVIRONMENT "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation;LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/gpu/lsan.supp")
endif()
