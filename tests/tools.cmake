# tools/ stays on the public API (the tmem target compiles tools/tmem/ without
# src/ on its include path; this catches names that would still link).
add_test(NAME tools/public_api_only
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/tests/tools/check_public_api.cmake)
set_tests_properties(tools/public_api_only PROPERTIES PASS_REGULAR_EXPRESSION "PASS: ")
# ... and catches a fixture bench that reaches the runtime's kernels and the
# library's core (exactly its three lines; the testing APIs pass).
add_test(NAME tools/public_api_catches_internals COMMAND sh -c
  "${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}/tests/tools/public_api_fixture \
   -P ${PROJECT_SOURCE_DIR}/tests/tools/check_public_api.cmake 2>&1; echo exit=$?")
set_tests_properties(tools/public_api_catches_internals PROPERTIES PASS_REGULAR_EXPRESSION
  "3 line\\(s\\) reach library or runtime internals:.*bench_bad.c: #include \"kern/kern.h\".*\
bench_bad.c: #include \"core/internal.h\".*bench_bad.c: static void bad.*tmrt__kern_matmul.*exit=1")
