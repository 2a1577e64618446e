# tools/ stays on the public API (the tmem target compiles tools/tmem/ without
# src/ on its include path; this catches names that would still link).
add_test(NAME tools/public_api_only
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/tests/tools/check_public_api.cmake)
set_tests_properties(tools/public_api_only PROPERTIES PASS_REGULAR_EXPRESSION "PASS: ")
