# Fuzz targets: one per parser, in fuzz/<name>/ with
#   fuzz/<name>/fuzz_<name>.c   the libFuzzer entry (LLVMFuzzerTestOneInput)
#   fuzz/<name>/corpus/         seed inputs (and every crash found, as a regression)
#
# Every directory following that layout is registered automatically below;
# nothing else to edit. For a different layout call, from your own
# fuzz/<x>.cmake (include this file first, it is guarded):
#   include(${CMAKE_SOURCE_DIR}/fuzz/fuzz.cmake)
#   tmem_add_fuzz(<name> <path/to/entry.c>)
#
# tmem_add_fuzz(name source) gives
#  - CTest test fuzz/<name>: the corpus replayed through the same entry point
#    by fuzz/replay_main.c, built with the project's compiler (gcc) and flags,
#    so `make test` and `make test-asan` cover the corpus;
#  - when clang is found, target fuzz_<name> (not built by default):
#      cmake --build build --target fuzz_<name>
#      ./build/fuzz/fuzz_<name> fuzz/<name>/corpus      # explore, grow corpus
#    linked against the library compiled by clang with
#    -fsanitize=fuzzer-no-link,address,undefined (build/fuzz/libtypedmem_fuzz.a);
#    target `fuzz` builds them all. Without clang a message says so.
#    Sanitizers do not recover (-fno-sanitize-recover=all): a UBSan finding
#    is a crash, and libFuzzer saves its input as a reproducer.
#  `make fuzz` builds them and runs each briefly (fuzz/run.sh; FUZZ_SECONDS,
#  default 10); `make fuzz-smoke` runs each for 30 s.
include_guard(GLOBAL)

find_program(TMEM_CLANG NAMES clang clang-16 clang-15 clang-14)
if(TMEM_CLANG)
  message(STATUS "typedmem: clang found (${TMEM_CLANG}): libFuzzer targets fuzz_<name> available (cmake --build build --target fuzz)")
else()
  message(STATUS "typedmem: clang NOT found: libFuzzer targets skipped; seed corpora are still replayed by ctest (fuzz/<name>)")
endif()
if(NOT TARGET fuzz)
  add_custom_target(fuzz)
endif()

set(TMEM_FUZZ_FLAGS -std=c11 -D_GNU_SOURCE -DTMEM_FAULT_INJECTION=1 -DTMEM_DEBUG=2 -g -O1 -fno-omit-frame-pointer
    -fno-sanitize-recover=all
    -I "${CMAKE_SOURCE_DIR}/include" -I "${CMAKE_SOURCE_DIR}/src" -I "${CMAKE_SOURCE_DIR}/fuzz")
set(TMEM_FUZZ_DIR "${CMAKE_BINARY_DIR}/fuzz")
set(TMEM_FUZZ_LIB "${TMEM_FUZZ_DIR}/libtypedmem_fuzz.a")

# The library compiled once by clang with coverage + sanitizers, as an
# archive, so each target links only what its entry point reaches.
if(TMEM_CLANG)
  set(_objs "")
  # Every object depends on every library header: IMPLICIT_DEPENDS resolves
  # includes only through the directory's include paths, which lack src/, so
  # a changed src/core/internal.h left stale objects (undefined symbols at
  # link after a merge). Coarse, but a header change then rebuilds them all.
  file(GLOB_RECURSE _tmem_fuzz_headers CONFIGURE_DEPENDS
       "${CMAKE_SOURCE_DIR}/src/*.h" "${CMAKE_SOURCE_DIR}/include/*.h")
  foreach(_src ${TMEM_SOURCES})
    file(RELATIVE_PATH _rel "${CMAKE_SOURCE_DIR}" "${_src}")
    string(REPLACE "/" "_" _obj "${_rel}")
    set(_obj "${TMEM_FUZZ_DIR}/obj/${_obj}.o")
    add_custom_command(OUTPUT "${_obj}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${TMEM_FUZZ_DIR}/obj"
      COMMAND "${TMEM_CLANG}" ${TMEM_FUZZ_FLAGS} -fsanitize=fuzzer-no-link,address,undefined -c "${_src}" -o "${_obj}"
      DEPENDS "${_src}" ${_tmem_fuzz_headers}
      VERBATIM)
    list(APPEND _objs "${_obj}")
  endforeach()
  add_custom_command(OUTPUT "${TMEM_FUZZ_LIB}"
    COMMAND ${CMAKE_COMMAND} -E rm -f "${TMEM_FUZZ_LIB}"
    COMMAND ${CMAKE_AR} qc "${TMEM_FUZZ_LIB}" ${_objs}
    COMMAND ${CMAKE_RANLIB} "${TMEM_FUZZ_LIB}"
    DEPENDS ${_objs}
    COMMENT "typedmem library for libFuzzer targets"
    VERBATIM)
  add_custom_target(tmem_fuzz_lib DEPENDS "${TMEM_FUZZ_LIB}")
endif()

function(tmem_add_fuzz name source)
  get_filename_component(src "${source}" ABSOLUTE BASE_DIR "${CMAKE_SOURCE_DIR}")
  set(corpus "${CMAKE_SOURCE_DIR}/fuzz/${name}/corpus")

  add_executable(fuzz_replay_${name} "${CMAKE_SOURCE_DIR}/fuzz/replay_main.c" "${src}")
  target_include_directories(fuzz_replay_${name} PRIVATE "${CMAKE_SOURCE_DIR}/src" "${CMAKE_SOURCE_DIR}/fuzz")
  target_link_libraries(fuzz_replay_${name} PRIVATE typedmem_testing)
  set_target_properties(fuzz_replay_${name} PROPERTIES TMEM_TESTING ON)
  add_test(NAME fuzz/${name} COMMAND fuzz_replay_${name} "${corpus}")
  set_tests_properties(fuzz/${name} PROPERTIES TIMEOUT 120 LABELS fuzz)
  # A target of the runtime has fuzz/<name>/runtime_sources.cmake (setting
  # TMEM_FUZZ_RUNTIME_SOURCES): the replay links typedmem_runtime, clang
  # compiles those sources into the libFuzzer binary.
  set(rt_extra "")
  set(rt_deps "")
  if(EXISTS "${CMAKE_SOURCE_DIR}/fuzz/${name}/runtime_sources.cmake")
    include("${CMAKE_SOURCE_DIR}/fuzz/${name}/runtime_sources.cmake")
    target_link_libraries(fuzz_replay_${name} PRIVATE typedmem_runtime)
    set(rt_extra -I "${CMAKE_SOURCE_DIR}/runtime/include" -I "${CMAKE_SOURCE_DIR}/runtime/src"
        ${TMEM_FUZZ_RUNTIME_SOURCES})
    set(rt_deps ${TMEM_FUZZ_RUNTIME_SOURCES})
  endif()

  if(TMEM_CLANG)
    set(out "${TMEM_FUZZ_DIR}/fuzz_${name}")
    add_custom_command(OUTPUT "${out}"
      COMMAND "${TMEM_CLANG}" ${TMEM_FUZZ_FLAGS} -fsanitize=fuzzer,address,undefined
              "${src}" ${rt_extra} "${TMEM_FUZZ_LIB}" -lpthread -lm -o "${out}"
      DEPENDS "${src}" ${rt_deps} "${TMEM_FUZZ_LIB}" tmem_fuzz_lib
      COMMENT "libFuzzer target fuzz_${name}"
      VERBATIM)
    add_custom_target(fuzz_${name} DEPENDS "${out}")
    add_dependencies(fuzz fuzz_${name})
  endif()
endfunction()

# Auto-register fuzz/<name>/fuzz_<name>.c.
file(GLOB _tmem_fuzz_entries CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/fuzz/*/fuzz_*.c")
foreach(_entry ${_tmem_fuzz_entries})
  get_filename_component(_dir "${_entry}" DIRECTORY)
  get_filename_component(_name "${_dir}" NAME)
  get_filename_component(_file "${_entry}" NAME_WE)
  if(_file STREQUAL "fuzz_${_name}")
    tmem_add_fuzz(${_name} "${_entry}")
  endif()
endforeach()
