# Line length (issue 12): no .c/.h line under src/, runtime/, tools/, bench/,
# include/ over 120 bytes, checked on the real tree and on a fixture with
# planted long lines so the check is shown to catch them and name file:line.
set(_tmem_line_length ${CMAKE_SOURCE_DIR}/tests/regress/check_line_length.cmake)
set(_tmem_long_fixture ${CMAKE_SOURCE_DIR}/tests/regress/line_length_fixture)
add_test(NAME style/line_length
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -P ${_tmem_line_length})
set_tests_properties(style/line_length PROPERTIES PASS_REGULAR_EXPRESSION "no line over 120 bytes")
add_test(NAME style/line_length_catches_long COMMAND sh -c
  "${CMAKE_COMMAND} -DROOT=${_tmem_long_fixture} -P ${_tmem_line_length} 2>&1; echo exit=$?")
set_tests_properties(style/line_length_catches_long PROPERTIES PASS_REGULAR_EXPRESSION
  "2 line\\(s\\) over 120 bytes:.*include/long.h:1: 129 bytes.*\
src/long.c:3: 181 bytes.*exit=1")
