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
  "9 upward or private include.*\
src/core/context.c:3: includes tlsf.h, which is not a file of src/core/.*\
src/core/context.c:4: includes ../heap/heap_internal.h: no include climbs.*\
src/core/internal.h:2: core includes typedmem/heap.h of layer heap.*\
src/device/device.c:3: includes heap/heap_internal.h, private to src/heap/.*\
src/os/os_bad.c:3: os includes core/internal.h.*src/plan/solve.c:3: plan includes core/internal.h.*\
include/typedmem/context.h:2: core header includes heap.h.*\
runtime/src/convert/convert_vision.c:2: includes vision/vision_internal.h, private to runtime/src/vision/.*\
runtime/src/forward/forward.c:3: the runtime includes ../../../src/core/internal.h: not the public API.*exit=1")

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
  # Objects are mapped to layers by basename: a tree with two sources of one
  # name (the fixture's src/plan/solve.c and src/core/solve.c) is refused.
  add_test(NAME regress/layering_calls_catches_duplicate COMMAND sh -c
    "${CMAKE_COMMAND} -DROOT=${_tmem_fixture} -DNM=${TMEM_NM} \
     '-DARCHIVES=$<TARGET_FILE:tmem_layering_fixture>' -P ${_tmem_calls} 2>&1; echo exit=$?")
  set_tests_properties(regress/layering_calls_catches_duplicate PROPERTIES PASS_REGULAR_EXPRESSION
    "two sources named solve.c \\(src/[a-z]+/solve.c and src/[a-z]+/solve.c\\).*exit=1")
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

# "Only os/ calls the OS" (docs/os.md): no file of src/ outside src/os/ calls
# a listed OS function or includes an OS header; a fixture with planted
# calls (and comments, strings, member calls that are not calls) must give
# exactly its three violations.
set(_tmem_os_calls ${CMAKE_SOURCE_DIR}/tests/regress/check_os_calls.cmake)
add_test(NAME regress/os_calls_only_in_os
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -P ${_tmem_os_calls})
set_tests_properties(regress/os_calls_only_in_os PROPERTIES PASS_REGULAR_EXPRESSION "no OS call")
add_test(NAME regress/os_calls_catches_planted COMMAND sh -c
  "${CMAKE_COMMAND} -DROOT=${_tmem_fixture} -P ${_tmem_os_calls} 2>&1; echo exit=$?")
set_tests_properties(regress/os_calls_catches_planted PROPERTIES PASS_REGULAR_EXPRESSION
  "3 OS call\\(s\\) outside src/os/:.*src/core/config.c:4: includes <dlfcn.h>, an OS header.*\
src/core/config.c:10: calls pthread_mutex_lock\\(\\).*src/core/config.c:11: calls getenv\\(\\).*exit=1")
