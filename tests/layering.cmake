# The layering rule (README, "Architecture"): no #include upward, checked on
# the real tree, and on a fixture with planted upward includes so the check
# is shown to catch them (tests/regress/check_layering.cmake).
add_test(NAME regress/layering
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -P ${CMAKE_SOURCE_DIR}/tests/regress/check_layering.cmake)
set_tests_properties(regress/layering PROPERTIES PASS_REGULAR_EXPRESSION "none upward")
add_test(NAME regress/layering_catches_upward COMMAND sh -c
  "${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR}/tests/regress/layering_fixture -P ${CMAKE_SOURCE_DIR}/tests/regress/check_layering.cmake 2>&1; echo exit=$?")
set_tests_properties(regress/layering_catches_upward PROPERTIES PASS_REGULAR_EXPRESSION
  "4 upward include.*src/core/internal.h:2: core includes typedmem/heap.h of layer heap.*src/os/os_bad.c:3: os includes core/internal.h.*src/plan/solve.c:3: plan includes core/internal.h.*include/typedmem/context.h:2: core header includes heap.h.*exit=1")
