# The runtime's tests that skip (77) when their data or tool is absent, and
# the parity test's budget (it converts and runs two checkpoints many times).
set_tests_properties(runtime/test_parity PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
set_tests_properties(runtime/test_cli_run PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_cli_nonfinite PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_attention_simd PROPERTIES SKIP_RETURN_CODE 77)

# The graph-lifetime check must catch a planted reorder (issue 18): the same
# test against the runtime built with TMRT_PLANT_REORDER (runtime/CMakeLists.txt:
# the FFN's up projection after the down projection, the vision block's output
# projection after the residual) expects the violations, named.
add_executable(runtime_test_graph_lifetimes_planted ${CMAKE_SOURCE_DIR}/tests/runtime/test_graph_lifetimes.c)
target_compile_definitions(runtime_test_graph_lifetimes_planted PRIVATE TMRT_TEST_PLANTED=1)
target_link_libraries(runtime_test_graph_lifetimes_planted PRIVATE tmem_testlib typedmem_runtime_planted)
target_include_directories(runtime_test_graph_lifetimes_planted PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
set_target_properties(runtime_test_graph_lifetimes_planted PROPERTIES TMEM_TESTING ON)
add_test(NAME runtime/test_graph_lifetimes_planted COMMAND runtime_test_graph_lifetimes_planted)
set_tests_properties(runtime/test_graph_lifetimes_planted PROPERTIES TIMEOUT 300
  ENVIRONMENT "TMEM_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
