# The checks of the layering rule, each run on the real tree and on a
# fixture with planted violations, so each is shown to catch what it claims
# (tests/regress/check_*.cmake; the fixture: tests/regress/layering_fixture).
#   tmem_check_test(NAME PASS_REGEX ARGS...)  `cmake ARGS` must print PASS_REGEX
#   tmem_catch_test(NAME PASS_REGEX "ARGS")   `cmake ARGS` (one string, for sh)
#                                             must fail (exit=1) printing PASS_REGEX
function(tmem_check_test name pass)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} ${ARGN})
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${pass}")
endfunction()
function(tmem_catch_test name pass args)
  add_test(NAME ${name} COMMAND sh -c "${CMAKE_COMMAND} ${args} 2>&1; echo exit=$?")
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${pass}.*exit=1")
endfunction()

# The layering rule (README, "Architecture"): no #include upward or into
# another directory's private header (tests/regress/check_layering.cmake).
set(_tmem_layering ${CMAKE_SOURCE_DIR}/tests/regress/check_layering.cmake)
set(_tmem_fixture ${CMAKE_SOURCE_DIR}/tests/regress/layering_fixture)
tmem_check_test(regress/layering "none upward" -DROOT=${CMAKE_SOURCE_DIR} -P ${_tmem_layering})
tmem_catch_test(regress/layering_catches_upward
  "9 upward or private include.*\
src/core/context.c:3: includes tlsf.h, which is not a file of src/core/.*\
src/core/context.c:4: includes ../heap/heap_internal.h: no include climbs.*\
src/core/internal.h:2: core includes typedmem/heap.h of layer heap.*\
src/device/device.c:3: includes heap/heap_internal.h, private to src/heap/.*\
src/os/os_bad.c:3: os includes core/internal.h.*src/plan/solve.c:3: plan includes core/internal.h.*\
include/typedmem/context.h:2: core header includes heap.h.*\
runtime/src/convert/convert_vision.c:2: includes vision/vision_internal.h, private to runtime/src/vision/.*\
runtime/src/forward/forward.c:3: the runtime includes ../../../src/core/internal.h: not the public API"
  "-DROOT=${_tmem_fixture} -P ${_tmem_layering}")

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
  tmem_check_test(regress/layering_calls "none upward" -DROOT=${CMAKE_SOURCE_DIR} -DNM=${TMEM_NM}
    "-DARCHIVES=${_tmem_archives}" -P ${_tmem_calls})
  add_library(tmem_layering_fixture STATIC ${_tmem_fixture}/calls/solve.c)
  tmem_catch_test(regress/layering_calls_catches_upward
    "solve.c.o \\(plan\\) calls tmem__context_lock of layer core: upward"
    "-DROOT=${CMAKE_SOURCE_DIR} -DNM=${TMEM_NM} \
     '-DARCHIVES=$<TARGET_FILE:typedmem_static>\;$<TARGET_FILE:tmem_layering_fixture>' -P ${_tmem_calls}")
  # Objects are mapped to layers by basename: a tree with two sources of one
  # name (the fixture's src/plan/solve.c and src/core/solve.c) is refused.
  tmem_catch_test(regress/layering_calls_catches_duplicate
    "two sources named solve.c \\(src/[a-z]+/solve.c and src/[a-z]+/solve.c\\)"
    "-DROOT=${_tmem_fixture} -DNM=${TMEM_NM} '-DARCHIVES=$<TARGET_FILE:tmem_layering_fixture>' -P ${_tmem_calls}")
else()
  message(STATUS "nm not found: regress/layering_calls not registered")
endif()

# Symbol prefixes (issue 18): every global symbol of the library archives is
# tmem_*/tmem__*, of the runtime's tmrt_*/tmrt__*; a fixture object with an
# unprefixed global must be caught.
if(TMEM_NM)
  set(_tmem_prefix ${CMAKE_SOURCE_DIR}/tests/regress/check_prefix.cmake)
  tmem_check_test(regress/prefix_library "all tmem_" -DNM=${TMEM_NM} "-DARCHIVES=${_tmem_archives}"
    -DPREFIX=tmem_ -P ${_tmem_prefix})
  set(_tmem_rt_archives "$<TARGET_FILE:typedmem_runtime>")
  if(TARGET typedmem_runtime_codecs)
    set(_tmem_rt_archives "${_tmem_rt_archives}\;$<TARGET_FILE:typedmem_runtime_codecs>")
  endif()
  tmem_check_test(regress/prefix_runtime "all tmrt_" -DNM=${TMEM_NM} "-DARCHIVES=${_tmem_rt_archives}"
    -DPREFIX=tmrt_ -P ${_tmem_prefix})
  add_library(tmem_prefix_fixture STATIC ${CMAKE_SOURCE_DIR}/tests/regress/prefix_fixture/unprefixed.c)
  tmem_catch_test(regress/prefix_catches_unprefixed
    "1 global symbol\\(s\\) without the prefix tmrt_:.*libtmem_prefix_fixture.a: kern_fixture_bad"
    "-DNM=${TMEM_NM} '-DARCHIVES=$<TARGET_FILE:tmem_prefix_fixture>' -DPREFIX=tmrt_ -P ${_tmem_prefix}")
endif()

# "Only os/ calls the OS" (docs/os.md): no file of src/ outside src/os/ calls
# a listed OS function or includes an OS header; a fixture with planted
# calls (and comments, strings, member calls that are not calls) must give
# exactly its three violations.
set(_tmem_os_calls ${CMAKE_SOURCE_DIR}/tests/regress/check_os_calls.cmake)
tmem_check_test(regress/os_calls_only_in_os "no OS call" -DROOT=${CMAKE_SOURCE_DIR} -P ${_tmem_os_calls})
tmem_catch_test(regress/os_calls_catches_planted
  "3 OS call\\(s\\) outside src/os/:.*src/core/config.c:4: includes <dlfcn.h>, an OS header.*\
src/core/config.c:10: calls pthread_mutex_lock\\(\\).*src/core/config.c:11: calls getenv\\(\\)"
  "-DROOT=${_tmem_fixture} -P ${_tmem_os_calls}")
