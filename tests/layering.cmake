# The layering rule (README, "Architecture"): no #include upward, checked on
# the real tree, and on a fixture with planted upward includes so the check
# is shown to catch them (tests/regress/check_layering.cmake).
set(_tmem_layering ${CMAKE_SOURCE_DIR}/tests/regress/check_layering.cmake)
set(_tmem_fixture ${CMAKE_SOURCE_DIR}/tests/regress/layering_fixture)
add_test(NAME regress/layering
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -P ${_tmem_layering})
set_tests_properties(regress/layering PROPERTIES PASS_REGULAR_EXPRESSION "none upward")
add_test(NAME regress/layering_catches_upward COMMAND sh -c
  "${CMAKE_COMMAND} -DROOT=${_tmem_fixture} -P ${_tmem_layering} 2>&1; echo exit=$?")
set_tests_properties(regress/layering_catches_upward PROPERTIES PASS_REGULAR_EXPRESSION
  "4 upward include.*src/core/internal.h:2: core includes typedmem/heap.h of layer heap.*\
src/os/os_bad.c:3: os includes core/internal.h.*src/plan/solve.c:3: plan includes core/internal.h.*\
include/typedmem/context.h:2: core header includes heap.h.*exit=1")

# The same rule on calls: each library object's undefined tmem_* symbols
# against the layer of the object that defines them (nm), and a fixture
# object named like a planner file that calls into core, which must be caught.
find_program(TMEM_NM NAMES nm ${CMAKE_NM})
if(TMEM_NM)
  set(_tmem_calls ${CMAKE_SOURCE_DIR}/tests/regress/check_calls.cmake)
  set(_tmem_archives "$<TARGET_FILE:typedmem_static>")
  if(TARGET typedmem_gpu)
    set(_tmem_archives "${_tmem_archives}\;$<TARGET_FILE:typedmem_gpu>")
  endif()
  add_test(NAME regress/layering_calls COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR}
    -DNM=${TMEM_NM} "-DARCHIVES=${_tmem_archives}" -P ${_tmem_calls})
  set_tests_properties(regress/layering_calls PROPERTIES PASS_REGULAR_EXPRESSION "none upward")
  add_library(tmem_layering_fixture STATIC ${_tmem_fixture}/calls/solve.c)
  add_test(NAME regress/layering_calls_catches_upward COMMAND sh -c
    "${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -DNM=${TMEM_NM} \
     '-DARCHIVES=$<TARGET_FILE:typedmem_static>\;$<TARGET_FILE:tmem_layering_fixture>' \
     -P ${_tmem_calls} 2>&1; echo exit=$?")
  set_tests_properties(regress/layering_calls_catches_upward PROPERTIES PASS_REGULAR_EXPRESSION
    "solve.c.o \\(plan\\) calls tmem__context_lock of layer core: upward.*exit=1")
else()
  message(STATUS "nm not found: regress/layering_calls not registered")
endif()

# Symbol prefixes (issue 18): every global symbol of the library archives is
# tmem_*/tmem__*, of the runtime's tmrt_*/tmrt__*; a fixture object with an
# unprefixed global must be caught.
if(TMEM_NM)
  set(_tmem_prefix ${CMAKE_SOURCE_DIR}/tests/regress/check_prefix.cmake)
  add_test(NAME regress/prefix_library COMMAND ${CMAKE_COMMAND} -DNM=${TMEM_NM}
    "-DARCHIVES=${_tmem_archives}" -DPREFIX=tmem_ -P ${_tmem_prefix})
  set_tests_properties(regress/prefix_library PROPERTIES PASS_REGULAR_EXPRESSION "all tmem_")
  set(_tmem_rt_archives "$<TARGET_FILE:typedmem_runtime>")
  if(TARGET typedmem_runtime_codecs)
    set(_tmem_rt_archives "${_tmem_rt_archives}\;$<TARGET_FILE:typedmem_runtime_codecs>")
  endif()
  add_test(NAME regress/prefix_runtime COMMAND ${CMAKE_COMMAND} -DNM=${TMEM_NM}
    "-DARCHIVES=${_tmem_rt_archives}" -DPREFIX=tmrt_ -P ${_tmem_prefix})
  set_tests_properties(regress/prefix_runtime PROPERTIES PASS_REGULAR_EXPRESSION "all tmrt_")
  add_library(tmem_prefix_fixture STATIC ${CMAKE_SOURCE_DIR}/tests/regress/prefix_fixture/unprefixed.c)
  add_test(NAME regress/prefix_catches_unprefixed COMMAND sh -c
    "${CMAKE_COMMAND} -DNM=${TMEM_NM} '-DARCHIVES=$<TARGET_FILE:tmem_prefix_fixture>' \
     -DPREFIX=tmrt_ -P ${_tmem_prefix} 2>&1; echo exit=$?")
  set_tests_properties(regress/prefix_catches_unprefixed PROPERTIES PASS_REGULAR_EXPRESSION
    "1 global symbol\\(s\\) without the prefix tmrt_:.*libtmem_prefix_fixture.a: kern_fixture_bad.*exit=1")
endif()
