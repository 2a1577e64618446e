# The docs compile as written: the trace recording snippet with -Werror (GCC's
# warn_unused_result included), and no (void)tmem_...() idiom anywhere.
add_test(NAME docs/trace_snippet_compiles
  COMMAND ${CMAKE_C_COMPILER} -std=c11 -Wall -Wextra -Werror -I ${PROJECT_SOURCE_DIR}/include
          -c ${PROJECT_SOURCE_DIR}/tests/docs/trace_recording.c -o ${PROJECT_BINARY_DIR}/docs_trace_recording.o)
add_test(NAME docs/no_void_cast_idiom COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/tests/docs/check_docs.cmake)
set_tests_properties(docs/no_void_cast_idiom PROPERTIES PASS_REGULAR_EXPRESSION "PASS: no")
