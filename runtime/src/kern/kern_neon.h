/* kern_neon.h: what the *_neon.c kernel files share (aarch64 only).
 *
 * The quantised dot products are written once, in kern_qdot_neon.h, over
 * one primitive, kern_dot16: the sum of 16 int8 x int8 products added into
 * four int32 lanes. kern_matmul_neon.c includes it with the plain ARMv8.0
 * primitive (vmull_s8 + vpadalq_s16), kern_matmul_dotprod_neon.c (compiled
 * with +dotprod) with SDOT. Integer sums are exact either way, so the two
 * paths give the same bits. */
#ifndef TMRT_KERN_NEON_H
#define TMRT_KERN_NEON_H

#include <arm_neon.h>

#define KERN_ALWAYS_INLINE inline __attribute__((always_inline))

/* Quantised tiles by weight type, one set per primitive (NULL: not a
 * quantised type). */
#include "kern_impl.h"
kern_tile_fn tmrt__kern__tile_qneon(uint32_t type);
kern_tile_fn tmrt__kern__tile_qdotprod(uint32_t type);

#endif /* TMRT_KERN_NEON_H */
