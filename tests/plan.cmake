# `tmem plan` smoke tests: a plan with its summary, SVG and CSV outputs; bad
# input named by line and field; an infeasible capacity.
set(_plan_data "${CMAKE_SOURCE_DIR}/../shared/bench/minimalloc/examples/input.12.csv")
if(EXISTS "${_plan_data}")
  add_test(NAME cli/plan_example
    COMMAND $<TARGET_FILE:tmem> plan "${_plan_data}" --svg "${CMAKE_BINARY_DIR}/plan_example.svg"
            --out "${CMAKE_BINARY_DIR}/plan_example.csv")
  set_tests_properties(cli/plan_example PROPERTIES
    PASS_REGULAR_EXPRESSION "lower bound 12.*arena       12.*optimal     yes")
  add_test(NAME cli/plan_json COMMAND $<TARGET_FILE:tmem> plan "${_plan_data}" --json)
  set_tests_properties(cli/plan_json PROPERTIES
    PASS_REGULAR_EXPRESSION "\"lower_bound\":12,\"arena\":12,\"ratio\":1.000000")
  add_test(NAME cli/plan_infeasible COMMAND $<TARGET_FILE:tmem> plan "${_plan_data}" --capacity 11)
  set_tests_properties(cli/plan_infeasible PROPERTIES WILL_FAIL TRUE)
endif()
file(WRITE "${CMAKE_BINARY_DIR}/plan_bad.csv" "id,lower,upper,size\na,0,3,4\nb,2,x,4\n")
add_test(NAME cli/plan_bad_input COMMAND $<TARGET_FILE:tmem> plan "${CMAKE_BINARY_DIR}/plan_bad.csv")
set_tests_properties(cli/plan_bad_input PROPERTIES PASS_REGULAR_EXPRESSION "plan_bad.csv:3: upper: 'x' is not a 64-bit integer")
