/* kern_matmul_dotprod_neon.c: the quantised NEON tiles with SDOT (ARMv8.2
 * dotprod; this file alone is compiled with +dotprod, and runs only where
 * getauxval(AT_HWCAP) has HWCAP_ASIMDDP: kern_cpu.c). */
#include "kern_neon.h"

#define KERN_DOT16(acc, a, b) vdotq_s32((acc), (a), (b))
#define KERN_QNAME tmrt__kern__tile_qdotprod
#include "kern_qdot_neon.h"
