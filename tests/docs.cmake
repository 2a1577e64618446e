# The docs compile as written: the trace recording snippet with -Werror (GCC's
# warn_unused_result included), and no (void)tmem_...() idiom anywhere.
add_test(NAME docs/trace_snippet_compiles
  COMMAND ${CMAKE_C_COMPILER} -std=c11 -Wall -Wextra -Werror -I ${PROJECT_SOURCE_DIR}/include
          -c ${PROJECT_SOURCE_DIR}/tests/docs/trace_recording.c -o ${PROJECT_BINARY_DIR}/docs_trace_recording.o)
add_test(NAME docs/no_void_cast_idiom COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/tests/docs/check_docs.cmake)
set_tests_properties(docs/no_void_cast_idiom PROPERTIES PASS_REGULAR_EXPRESSION "PASS: no")

# Issue 12: every public function with an out-parameter says what it holds on
# failure (tests/docs/check_out_params.py lists offenders). Needs python3.
find_program(TMEM_PYTHON3 python3)
if(TMEM_PYTHON3)
  add_test(NAME docs/outputs_on_failure
    COMMAND ${TMEM_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_out_params.py
            ${PROJECT_SOURCE_DIR}/include)
  set_tests_properties(docs/outputs_on_failure PROPERTIES PASS_REGULAR_EXPRESSION "PASS: every")
else()
  add_test(NAME docs/outputs_on_failure COMMAND ${CMAKE_COMMAND} -E echo "SKIP: python3 not found")
  set_tests_properties(docs/outputs_on_failure PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP:")
endif()
