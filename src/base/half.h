/*
 * IEEE 754 binary16 and bfloat16 <-> binary32, in portable C11 (no
 * _Float16, no F16C): the library's one copy (surface conversions, ggml
 * rows). Widening is exact. Narrowing rounds to nearest even; overflow
 * goes to infinity; subnormals are kept; a NaN stays a quiet NaN with the
 * top payload bits kept. The runtime keeps its own inline copy for its
 * kernels (runtime/src/kern/kern_half.h: it sees only the public API);
 * tests/runtime/test_half_twins checks both give the same bits.
 */
#ifndef TMEM_BASE_HALF_H
#define TMEM_BASE_HALF_H

#include <stdint.h>

uint16_t tmem__f32_to_f16(float f);
float tmem__f16_to_f32(uint16_t h);
uint16_t tmem__f32_to_bf16(float f);
float tmem__bf16_to_f32(uint16_t h);

#endif /* TMEM_BASE_HALF_H */
