# fuzz_sample links the runtime: the pure sampler alone (sampler.c) is compiled
# into the libFuzzer binary; the corpus replay links typedmem_runtime.
set(TMEM_FUZZ_RUNTIME_SOURCES ${CMAKE_SOURCE_DIR}/runtime/src/sample/sampler.c)
