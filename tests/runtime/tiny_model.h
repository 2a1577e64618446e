/* tiny_model.h: tiny random qwen35 GGUFs for the runtime tests, written
 * with the library's GGUF writer in llama.cpp's layout (the names, shapes
 * and keys tmem convert emits). Header-only: each test is one executable. */
#ifndef TMRT_TEST_TINY_MODEL_H
#define TMRT_TEST_TINY_MODEL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "typedmem/typedmem.h"

typedef struct tiny_config {
    uint32_t n_layers, interval, n_embd, n_ff, n_vocab;
    uint32_t n_head, n_head_kv, head_dim, n_rot;
    int32_t sections[4];
    uint32_t conv_kernel, ssm_dim, k_heads, v_heads;
    bool tied;
    uint32_t weight_type;     /* matrices: TMEM_GGML_F32 or F16 */
    uint64_t seed;
    const char *skip_tensor;  /* hostile variants: leave this tensor out */
    const char *bad_shape;    /* ... or give it one column too many */
    const char *nan_tensor;   /* ... or a NaN in it */
    uint32_t n_ctx_train;     /* qwen35.context_length; 0 = 4096 */
} tiny_config;

/* 3 DeltaNet layers + 1 attention layer, 2 key heads -> 4 value heads, untied. */
static inline tiny_config tiny_config_a(void) {
    tiny_config c = {4, 4, 64, 96, 97, 4, 2, 16, 8, {2, 1, 1, 0}, 4, 16, 2, 4, false, TMEM_GGML_F32, 1,
                     NULL, NULL, NULL, 0};
    return c;
}
/* 1:1 layer pattern, as many key as value heads, tied embeddings, full rotary. */
static inline tiny_config tiny_config_b(void) {
    tiny_config c = {4, 2, 48, 80, 61, 2, 1, 24, 24, {4, 4, 4, 0}, 3, 12, 2, 2, true, TMEM_GGML_F32, 2,
                     NULL, NULL, NULL, 0};
    return c;
}

static inline float tiny_uniform(tmem_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)((tmem_rng_next(r) >> 11) * (1.0 / 9007199254740992.0));
}

static inline uint16_t tiny_f16(float f) {
    /* round to nearest even, normal range only (the weights are small) */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t e = (int32_t)((u >> 23) & 0xFF) - 127 + 15;
    if (e <= 0) return (uint16_t)sign;
    uint32_t man = u & 0x7FFFFFu, r = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

typedef struct tiny_writer {
    tmem_gguf_writer *w;
    const tiny_config *c;
    tmem_rng rng;
    bool ok;
} tiny_writer;

static inline void tiny_u32(tiny_writer *t, const char *key, uint32_t v) {
    tmem_gguf_value val = {0};
    val.type = TMEM_GGUF_UINT32;
    val.v.u = v;
    if (tmem_gguf_writer_set(t->w, key, &val)) t->ok = false;
}
static inline void tiny_f32(tiny_writer *t, const char *key, double v) {
    tmem_gguf_value val = {0};
    val.type = TMEM_GGUF_FLOAT32;
    val.v.f = v;
    if (tmem_gguf_writer_set(t->w, key, &val)) t->ok = false;
}

/* A tensor of n_in x n_out values uniform in [lo, hi] (a vector: n_out 0). */
static inline void tiny_tensor(tiny_writer *t, const char *name, uint64_t n_in, uint64_t n_out, float lo, float hi,
                               bool matrix) {
    const tiny_config *c = t->c;
    if (c->skip_tensor && !strcmp(c->skip_tensor, name)) return;
    uint64_t dims[2] = {n_in, n_out ? n_out : 1};
    if (c->bad_shape && !strcmp(c->bad_shape, name)) dims[0]++;
    uint64_t n = dims[0] * dims[1];
    uint32_t type = matrix ? c->weight_type : TMEM_GGML_F32;
    void *data = malloc(n * 4);
    if (!data) {
        t->ok = false;
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        float x = tiny_uniform(&t->rng, lo, hi);
        if (i == 0 && c->nan_tensor && !strcmp(c->nan_tensor, name)) x = NAN;
        if (type == TMEM_GGML_F16) ((uint16_t *)data)[i] = tiny_f16(x);
        else ((float *)data)[i] = x;
    }
    if (tmem_gguf_writer_add_tensor(t->w, name, type, n_out ? 2 : 1, dims, data)) t->ok = false;
    free(data);
}

static inline void tiny_matrix(tiny_writer *t, const char *name, uint64_t n_in, uint64_t n_out) {
    float s = 1.0f / sqrtf((float)n_in);
    tiny_tensor(t, name, n_in, n_out, -s, s, true);
}

/* Write the model to `path`. Returns false on any writer error. */
static inline bool tiny_model_write(const tiny_config *c, const char *path) {
    tiny_writer t = {NULL, c, {{0}}, true};
    tmem_rng_init(&t.rng, c->seed);
    if (tmem_gguf_writer_create(NULL, 0, &t.w)) return false;
    tmem_gguf_value arch = {0};
    arch.type = TMEM_GGUF_STRING;
    arch.v.s.data = "qwen35";
    arch.v.s.len = 6;
    if (tmem_gguf_writer_set(t.w, "general.architecture", &arch)) t.ok = false;
    tiny_u32(&t, "qwen35.block_count", c->n_layers);
    tiny_u32(&t, "qwen35.context_length", c->n_ctx_train ? c->n_ctx_train : 4096);
    tiny_u32(&t, "qwen35.embedding_length", c->n_embd);
    tiny_u32(&t, "qwen35.feed_forward_length", c->n_ff);
    tiny_u32(&t, "qwen35.attention.head_count", c->n_head);
    tiny_u32(&t, "qwen35.attention.head_count_kv", c->n_head_kv);
    tiny_u32(&t, "qwen35.attention.key_length", c->head_dim);
    tiny_u32(&t, "qwen35.attention.value_length", c->head_dim);
    tiny_f32(&t, "qwen35.attention.layer_norm_rms_epsilon", 1e-6);
    tiny_f32(&t, "qwen35.rope.freq_base", 10000000.0);
    tiny_u32(&t, "qwen35.rope.dimension_count", c->n_rot);
    if (tmem_gguf_writer_set_array(t.w, "qwen35.rope.dimension_sections", TMEM_GGUF_INT32, c->sections, 4))
        t.ok = false;
    tiny_u32(&t, "qwen35.full_attention_interval", c->interval);
    tiny_u32(&t, "qwen35.ssm.conv_kernel", c->conv_kernel);
    tiny_u32(&t, "qwen35.ssm.state_size", c->ssm_dim);
    tiny_u32(&t, "qwen35.ssm.group_count", c->k_heads);
    tiny_u32(&t, "qwen35.ssm.time_step_rank", c->v_heads);
    tiny_u32(&t, "qwen35.ssm.inner_size", c->v_heads * c->ssm_dim);
    tiny_u32(&t, "qwen35.vocab_size", c->n_vocab);
    tiny_u32(&t, "tokenizer.ggml.eos_token_id", c->n_vocab - 1);

    uint32_t E = c->n_embd, I = c->v_heads * c->ssm_dim, C = 2 * c->k_heads * c->ssm_dim + I;
    tiny_tensor(&t, "token_embd.weight", E, c->n_vocab, -1.0f, 1.0f, true);
    tiny_tensor(&t, "output_norm.weight", E, 0, 0.8f, 1.2f, false);
    if (!c->tied) tiny_matrix(&t, "output.weight", E, c->n_vocab);
    char n[96];
    for (uint32_t il = 0; il < c->n_layers; il++) {
        bool rec = (il + 1) % c->interval != 0;
#define T(fmt) (snprintf(n, sizeof n, fmt, il), n)
        tiny_tensor(&t, T("blk.%u.attn_norm.weight"), E, 0, 0.8f, 1.2f, false);
        tiny_tensor(&t, T("blk.%u.post_attention_norm.weight"), E, 0, 0.8f, 1.2f, false);
        tiny_matrix(&t, T("blk.%u.ffn_gate.weight"), E, c->n_ff);
        tiny_matrix(&t, T("blk.%u.ffn_up.weight"), E, c->n_ff);
        tiny_matrix(&t, T("blk.%u.ffn_down.weight"), c->n_ff, E);
        if (!rec) {
            tiny_matrix(&t, T("blk.%u.attn_q.weight"), E, 2 * c->n_head * c->head_dim);
            tiny_matrix(&t, T("blk.%u.attn_k.weight"), E, c->n_head_kv * c->head_dim);
            tiny_matrix(&t, T("blk.%u.attn_v.weight"), E, c->n_head_kv * c->head_dim);
            tiny_matrix(&t, T("blk.%u.attn_output.weight"), c->n_head * c->head_dim, E);
            tiny_tensor(&t, T("blk.%u.attn_q_norm.weight"), c->head_dim, 0, 0.8f, 1.2f, false);
            tiny_tensor(&t, T("blk.%u.attn_k_norm.weight"), c->head_dim, 0, 0.8f, 1.2f, false);
        } else {
            tiny_matrix(&t, T("blk.%u.attn_qkv.weight"), E, C);
            tiny_matrix(&t, T("blk.%u.attn_gate.weight"), E, I);
            tiny_matrix(&t, T("blk.%u.ssm_beta.weight"), E, c->v_heads);
            tiny_matrix(&t, T("blk.%u.ssm_alpha.weight"), E, c->v_heads);
            tiny_matrix(&t, T("blk.%u.ssm_out.weight"), I, E);
            tiny_tensor(&t, T("blk.%u.ssm_conv1d.weight"), c->conv_kernel, C, -0.5f, 0.5f, false);
            tiny_tensor(&t, T("blk.%u.ssm_dt.bias"), c->v_heads, 0, -1.0f, 1.0f, false);
            tiny_tensor(&t, T("blk.%u.ssm_a"), c->v_heads, 0, -2.0f, -0.05f, false);
            tiny_tensor(&t, T("blk.%u.ssm_norm.weight"), c->ssm_dim, 0, 0.8f, 1.2f, false);
        }
#undef T
    }
    size_t need = 0;
    void *buf = NULL;
    tmem_status sized = tmem_gguf_writer_write(t.w, NULL, 0, &need); /* sizing: OK or FULL */
    bool ok = t.ok && (sized == TMEM_OK || sized == TMEM_E_FULL) && need && (buf = malloc(need)) &&
              tmem_gguf_writer_write(t.w, buf, need, &need) == TMEM_OK;
    tmem_gguf_writer_destroy(t.w);
    FILE *f = ok ? fopen(path, "wb") : NULL;
    ok = f && fwrite(buf, 1, need, f) == need;
    if (f) ok = fclose(f) == 0 && ok;
    free(buf);
    return ok;
}

#endif /* TMRT_TEST_TINY_MODEL_H */
