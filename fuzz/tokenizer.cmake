# Fuzz targets of the runtime's tokenizer (fuzz/tokenizer/): the metadata
# loader (fuzz_tok_meta.c, seeds corpus_meta/) and encoding
# (fuzz_tok_encode.c, seeds corpus_encode/). They link the runtime, so they
# are registered here rather than by fuzz.cmake's auto-registration:
#  - CTest fuzz/tok_meta and fuzz/tok_encode replay the seed corpora (gcc,
#    the project's flags: `make test` / `make test-asan` run them);
#  - with clang, targets fuzz_tok_meta / fuzz_tok_encode (part of `fuzz`):
#      cmake --build build --target fuzz_tok_meta
#      ./build/fuzz/fuzz_tok_meta fuzz/tokenizer/corpus_meta
include(${CMAKE_SOURCE_DIR}/fuzz/fuzz.cmake)
file(GLOB TMRT_TOK_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/src/tok/*.c)
foreach(_t tok_meta tok_encode)
  if(_t STREQUAL "tok_meta")
    set(_corpus "${CMAKE_SOURCE_DIR}/fuzz/tokenizer/corpus_meta")
  else()
    set(_corpus "${CMAKE_SOURCE_DIR}/fuzz/tokenizer/corpus_encode")
  endif()
  set(_src "${CMAKE_SOURCE_DIR}/fuzz/tokenizer/fuzz_${_t}.c")
  add_executable(fuzz_replay_${_t} "${CMAKE_SOURCE_DIR}/fuzz/replay_main.c" "${_src}")
  target_include_directories(fuzz_replay_${_t} PRIVATE "${CMAKE_SOURCE_DIR}/fuzz")
  target_link_libraries(fuzz_replay_${_t} PRIVATE typedmem_runtime typedmem_static)
  add_test(NAME fuzz/${_t} COMMAND fuzz_replay_${_t} "${_corpus}")
  set_tests_properties(fuzz/${_t} PROPERTIES TIMEOUT 300 LABELS fuzz)
  if(TMEM_CLANG)
    set(_out "${TMEM_FUZZ_DIR}/fuzz_${_t}")
    add_custom_command(OUTPUT "${_out}"
      COMMAND "${TMEM_CLANG}" ${TMEM_FUZZ_FLAGS} -I "${CMAKE_SOURCE_DIR}/runtime/include"
              -I "${CMAKE_SOURCE_DIR}/runtime/src" -fsanitize=fuzzer,address,undefined
              "${_src}" ${TMRT_TOK_SOURCES} "${TMEM_FUZZ_LIB}" -lpthread -lm -o "${_out}"
      DEPENDS "${_src}" ${TMRT_TOK_SOURCES} "${TMEM_FUZZ_LIB}" tmem_fuzz_lib
      COMMENT "libFuzzer target fuzz_${_t}"
      VERBATIM)
    add_custom_target(fuzz_${_t} DEPENDS "${_out}")
    add_dependencies(fuzz fuzz_${_t})
  endif()
endforeach()
