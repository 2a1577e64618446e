/* vk_kernels.h: the compute kernels, one line each:
 *   X(ID, source, bindings, variants, spec0 .. spec3)
 * source: shaders/<source>.comp; bindings: storage buffers 0..n-1;
 * variants: PLAIN (one SPIR-V), SG (+ <source>_sg: subgroup reductions),
 * S16 (+ _s16: 16-bit storage reads), SG16 (+ _sg, _s16, _s16_sg). spec: the
 * specialisation constants' defaults (constant_id 0 = workgroup size);
 * tmrt__vk_tune overrides them (benches).
 * runtime/src/gpu/gpu.cmake reads this list to compile the SPIR-V, so keep
 * one X( per line. */
#ifndef TMRT_VK_KERNELS_H
#define TMRT_VK_KERNELS_H

#include <stdint.h>

#define TMRT_VK_MAX_SPEC 4u

#define TMRT_VK_KERNELS(X) \
    X(MATVEC_F32, matvec_f32, 4, SG, 32, 2, 0, 0) \
    X(MATVEC_F16, matvec_f16, 4, SG, 32, 2, 0, 0) \
    X(MATVEC_BF16, matvec_bf16, 4, SG, 32, 2, 0, 0) \
    X(MATVEC_Q8_0, matvec_q8_0, 4, SG16, 32, 2, 0, 0) \
    X(MATVEC_Q4_K, matvec_q4_k, 4, SG, 32, 2, 0, 0) \
    X(MATVEC_Q6_K, matvec_q6_k, 4, SG16, 32, 2, 0, 0) \
    X(MATMAT_F32, matmat_f32, 3, PLAIN, 256, 64, 64, 0) \
    X(MATMAT_F16, matmat_f16, 3, S16, 256, 64, 64, 0) \
    X(MATMAT_BF16, matmat_bf16, 3, S16, 256, 64, 64, 0) \
    X(MATMAT_Q8_0, matmat_q8_0, 3, S16, 256, 64, 64, 0) \
    X(MATMAT_Q4_K, matmat_q4_k, 3, PLAIN, 256, 64, 64, 0) \
    X(MATMAT_Q6_K, matmat_q6_k, 3, S16, 256, 64, 64, 0) \
    X(GET_ROWS_F32, get_rows_f32, 3, PLAIN, 256, 0, 0, 0) \
    X(GET_ROWS_F16, get_rows_f16, 3, S16, 256, 0, 0, 0) \
    X(GET_ROWS_BF16, get_rows_bf16, 3, S16, 256, 0, 0, 0) \
    X(GET_ROWS_Q8_0, get_rows_q8_0, 3, S16, 256, 0, 0, 0) \
    X(GET_ROWS_Q4_K, get_rows_q4_k, 3, PLAIN, 256, 0, 0, 0) \
    X(GET_ROWS_Q6_K, get_rows_q6_k, 3, S16, 256, 0, 0, 0) \
    X(RMSNORM, rmsnorm, 7, PLAIN, 256, 0, 0, 0) \
    X(L2NORM, l2norm, 1, PLAIN, 128, 0, 0, 0) \
    X(ADD, add, 3, PLAIN, 256, 0, 0, 0) \
    X(SWIGLU, swiglu, 3, PLAIN, 256, 0, 0, 0) \
    X(SIGMOID_GATE, sigmoid_gate, 2, PLAIN, 256, 0, 0, 0) \
    X(DN_GATES, dn_gates, 5, PLAIN, 64, 0, 0, 0) \
    X(ROPE, rope, 3, PLAIN, 64, 0, 0, 0) \
    X(KV_STORE, kv_store, 8, PLAIN, 128, 0, 0, 0) \
    X(CONV, conv, 4, PLAIN, 64, 0, 0, 0) \
    X(ATTENTION, attention, 10, PLAIN, 128, 0, 0, 0) \
    X(ATTN_COMBINE, attn_combine, 3, PLAIN, 256, 0, 0, 0) \
    X(DN_RECURRENT, dn_recurrent, 9, PLAIN, 128, 0, 0, 0) \
    X(DN_CHUNK_PREP, dn_chunk_prep, 8, PLAIN, 256, 0, 0, 0) \
    X(DN_CHUNK_SCAN, dn_chunk_scan, 8, PLAIN, 128, 0, 0, 0) \
    X(ATTENTION_DENSE, attention_dense, 6, PLAIN, 128, 0, 0, 0) \
    X(LAYERNORM, layernorm, 4, PLAIN, 256, 0, 0, 0) \
    X(GELU, gelu, 1, PLAIN, 256, 0, 0, 0) \
    X(BIAS_ADD, bias_add, 2, PLAIN, 256, 0, 0, 0) \
    X(PATCH_F32, patch_f32, 3, PLAIN, 256, 64, 64, 0) \
    X(PATCH_F16, patch_f16, 3, S16, 256, 64, 64, 0) \
    X(PATCH_BF16, patch_bf16, 3, S16, 256, 64, 64, 0) \
    X(PATCH_Q8_0, patch_q8_0, 3, S16, 256, 64, 64, 0) \
    X(PATCH_Q4_K, patch_q4_k, 3, PLAIN, 256, 64, 64, 0) \
    X(PATCH_Q6_K, patch_q6_k, 3, S16, 256, 64, 64, 0) \
    X(POS_EMBED, pos_embed, 2, PLAIN, 256, 0, 0, 0) \
    X(VIS_ROPE, vis_rope, 1, PLAIN, 64, 0, 0, 0)

typedef enum tmrt_vk_kernel {
#define TMRT_VK_ENUM(id, ...) TMRT_VK_K_##id,
    TMRT_VK_KERNELS(TMRT_VK_ENUM)
#undef TMRT_VK_ENUM
    TMRT_VK_KERNEL_COUNT
} tmrt_vk_kernel;

/* Variant bits: which SPIR-V of a kernel the device runs. */
enum { TMRT_VK_V_SG = 1u, TMRT_VK_V_S16 = 2u };

typedef struct tmrt_vk_spirv {
    const uint32_t *code;
    uint32_t bytes;
} tmrt_vk_spirv;

typedef struct tmrt_vk_kernel_info {
    const char *name;
    uint32_t bindings;
    tmrt_vk_spirv spv[4];             /* by variant bits; {NULL, 0} = not built */
    uint32_t spec[TMRT_VK_MAX_SPEC];
} tmrt_vk_kernel_info;

/* The table (vk_spirv.c). */
extern const tmrt_vk_kernel_info tmrt__vk_kernels[TMRT_VK_KERNEL_COUNT];

#endif /* TMRT_VK_KERNELS_H */
