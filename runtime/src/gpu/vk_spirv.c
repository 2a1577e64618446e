/* vk_spirv.c: the kernel table: each kernel's SPIR-V variants (the
 * committed or freshly compiled shaders/tmrt_spirv.h), bindings and
 * specialisation defaults, from the list in vk_kernels.h. */
#include <stddef.h>
#include "gpu/vk_kernels.h"
#include "gpu/shaders/tmrt_spirv.h"

#define SPV(n) {tmrt__spv_##n, (uint32_t)sizeof tmrt__spv_##n}
#define NONE {NULL, 0}
#define VARIANTS_PLAIN(n) {SPV(n), NONE, NONE, NONE}
#define VARIANTS_SG(n) {SPV(n), SPV(n##_sg), NONE, NONE}
#define VARIANTS_S16(n) {SPV(n), NONE, SPV(n##_s16), NONE}
#define VARIANTS_SG16(n) {SPV(n), SPV(n##_sg), SPV(n##_s16), SPV(n##_s16_sg)}
#define ENTRY(id, src, nb, kind, s0, s1, s2, s3) [TMRT_VK_K_##id] = {#src, nb, VARIANTS_##kind(src), {s0, s1, s2, s3}},

const tmrt_vk_kernel_info tmrt__vk_kernels[TMRT_VK_KERNEL_COUNT] = {TMRT_VK_KERNELS(ENTRY)};
