/* The libFuzzer entry point every fuzz/<name>/fuzz_<name>.c defines. */
#ifndef TMEM_FUZZ_H
#define TMEM_FUZZ_H
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif
