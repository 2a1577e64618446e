/* kern_matmul_avx2.c: AVX2/FMA/F16C tiles of kern_matmul. */
#include <immintrin.h>
#include "kern_impl.h"

kern_tile_fn kern__tile_avx2(uint32_t type) {
    (void)type;
    return NULL;
}
