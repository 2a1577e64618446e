# ARM64-only pieces (docs/arm64.md): in an aarch64 build, the kernel tests
# run a second time with qemu's -cpu cortex-a53 (plain ARMv8.0 NEON: the
# dispatch's other branch; the default qemu CPU, max, has dotprod), and
# kern_insn, the driver of tests/arm64/insn_count.sh.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  add_executable(kern_insn ${CMAKE_SOURCE_DIR}/tests/arm64/kern_insn.c)
  target_link_libraries(kern_insn PRIVATE tmem_testlib typedmem_runtime_link)
  target_include_directories(kern_insn PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src ${CMAKE_SOURCE_DIR}/tests/runtime)
  set_target_properties(kern_insn PROPERTIES TMEM_TESTING ON)
  if(CMAKE_CROSSCOMPILING AND CMAKE_CROSSCOMPILING_EMULATOR)
    foreach(t test_kern_matmul test_kern_vec test_attention_simd)
      add_test(NAME runtime/${t}_cortex_a53
        COMMAND ${CMAKE_CROSSCOMPILING_EMULATOR} -cpu cortex-a53 $<TARGET_FILE:runtime_${t}>)
      set_tests_properties(runtime/${t}_cortex_a53 PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
        ENVIRONMENT "TMEM_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
    endforeach()
  endif()
endif()
