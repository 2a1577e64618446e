# fuzz_tok_encode links the runtime: tmem_add_fuzz links typedmem_runtime into the
# corpus replay and compiles these runtime sources into the libFuzzer binary
# (the tokenizer and the runtime's one fail formatter, util/fail.c).
file(GLOB TMEM_FUZZ_RUNTIME_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/src/tok/*.c)
list(APPEND TMEM_FUZZ_RUNTIME_SOURCES ${CMAKE_SOURCE_DIR}/runtime/src/util/fail.c)
