/* KV and recurrent-state sizes against hand-computed values. */
#include "harness.h"
#include <string.h>
#include "typedmem/kv.h"

/* Qwen3.5-0.8B: 24 layers, 3 Gated DeltaNet per full-attention layer, so 6
 * attention layers (8 query / 2 KV heads of 256) and 18 DeltaNet layers (16
 * key / 16 value heads of 128, conv kernel 4). */
static const tmem_kv_layout qwen35_kv = {6, 2, 256, TMEM_KV_DTYPE_F16, 0};
static const tmem_recurrent_layout qwen35_rec = {18, 16, 16, 128, 128, 4, 0, TMEM_KV_DTYPE_F16};

static void test_qwen35_kv(void) {
    uint64_t b;
    CHECK_OK(tmem_kv_layout_token_bytes(&qwen35_kv, &b));
    CHECK(b == 12288); /* 6 x 2 (K,V) x 2 heads x 256 x 2 B */
    CHECK_OK(tmem_kv_layout_block_bytes(&qwen35_kv, &b));
    CHECK(b == 12288ull * 16);
    tmem_kv_layout l = qwen35_kv;
    l.dtype = TMEM_KV_DTYPE_DEFAULT; /* f16 */
    CHECK_OK(tmem_kv_layout_token_bytes(&l, &b));
    CHECK(b == 12288);
    l.dtype = TMEM_KV_DTYPE_BF16;
    CHECK_OK(tmem_kv_layout_token_bytes(&l, &b));
    CHECK(b == 12288);
    l.dtype = TMEM_KV_DTYPE_F32;
    CHECK_OK(tmem_kv_layout_token_bytes(&l, &b));
    CHECK(b == 24576);
    l.dtype = TMEM_KV_DTYPE_Q8_0; /* 256 = 8 blocks of 34 B per head */
    CHECK_OK(tmem_kv_layout_token_bytes(&l, &b));
    CHECK(b == 6ull * 2 * 2 * 8 * 34);
    /* 8192 tokens = 512 blocks */
    uint64_t blocks, bytes;
    CHECK_OK(tmem_kv_layout_bytes(&qwen35_kv, 8192, &blocks, &bytes));
    CHECK(blocks == 512 && bytes == 8192ull * 12288);
    CHECK_OK(tmem_kv_layout_bytes(&qwen35_kv, 0, &blocks, &bytes));
    CHECK(blocks == 0 && bytes == 0);
    CHECK_OK(tmem_kv_layout_bytes(&qwen35_kv, 17, &blocks, &bytes));
    CHECK(blocks == 2 && bytes == 2ull * 16 * 12288);
    l = qwen35_kv;
    l.block_tokens = 1;
    CHECK_OK(tmem_kv_layout_bytes(&l, 17, &blocks, &bytes));
    CHECK(blocks == 17 && bytes == 17ull * 12288);
}

static void test_dense_models(void) {
    uint64_t b;
    /* Llama-3.2-1B: 16 layers, 8 KV heads of 64 */
    tmem_kv_layout llama = {16, 8, 64, TMEM_KV_DTYPE_F16, 0};
    CHECK_OK(tmem_kv_layout_token_bytes(&llama, &b));
    CHECK(b == 32768);
    /* Qwen3-0.6B: 28 layers, 8 KV heads of 128 */
    tmem_kv_layout q3 = {28, 8, 128, TMEM_KV_DTYPE_F16, 0};
    CHECK_OK(tmem_kv_layout_token_bytes(&q3, &b));
    CHECK(b == 114688);
}

static void test_qwen35_recurrent(void) {
    uint64_t b;
    CHECK_OK(tmem_recurrent_layout_bytes(&qwen35_rec, &b));
    CHECK(b == 10100736); /* 18 x (16 x 128 x 128 + 3 x 6144) x 2 B */
    tmem_recurrent_sizes s;
    CHECK_OK(tmem_recurrent_layout_sizes(&qwen35_rec, &s));
    CHECK(s.conv_bytes == 3ull * 6144 * 2);
    CHECK(s.ssm_bytes == 16ull * 128 * 128 * 2);
    CHECK(s.layer_bytes == s.conv_bytes + s.ssm_bytes);
    CHECK(s.total_bytes == 18 * s.layer_bytes);
    /* f32 is the default, as llama.cpp stores it */
    tmem_recurrent_layout r = qwen35_rec;
    r.dtype = TMEM_KV_DTYPE_DEFAULT;
    CHECK_OK(tmem_recurrent_layout_bytes(&r, &b));
    CHECK(b == 2ull * 10100736);
    /* explicit conv channels win over the q,k,v default */
    r = qwen35_rec;
    r.conv_channels = 6144;
    CHECK_OK(tmem_recurrent_layout_bytes(&r, &b));
    CHECK(b == 10100736);
    r.conv_channels = 100;
    CHECK_OK(tmem_recurrent_layout_bytes(&r, &b));
    CHECK(b == 18ull * (16 * 128 * 128 + 3 * 100) * 2);
    /* no conv */
    r = qwen35_rec;
    r.conv_kernel = 1;
    CHECK_OK(tmem_recurrent_layout_sizes(&r, &s));
    CHECK(s.conv_bytes == 0 && s.total_bytes == 18ull * 16 * 128 * 128 * 2);
    r.dtype = TMEM_KV_DTYPE_Q8_0;
    CHECK_OK(tmem_recurrent_layout_bytes(&r, &b));
    CHECK(b == 18ull * 16 * 128 * 128 / 32 * 34);
}

static void test_dtypes(void) {
    uint64_t b;
    CHECK_OK(tmem_kv_dtype_bytes(TMEM_KV_DTYPE_Q8_0, 64, &b));
    CHECK(b == 68);
    CHECK_ST(tmem_kv_dtype_bytes(TMEM_KV_DTYPE_Q8_0, 33, &b), TMEM_E_INVALID_ARG);
    CHECK(b == 0);
    CHECK_ST(tmem_kv_dtype_bytes(TMEM_KV_DTYPE_COUNT, 1, &b), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_dtype_bytes(TMEM_KV_DTYPE_F32, UINT64_MAX / 2, &b), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_kv_dtype_bytes(TMEM_KV_DTYPE_Q8_0, UINT64_MAX / 32 * 32, &b), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_kv_dtype_bytes(TMEM_KV_DTYPE_F16, 1, NULL), TMEM_E_INVALID_ARG);
    CHECK(!strcmp(tmem_kv_dtype_name(TMEM_KV_DTYPE_Q8_0), "q8_0"));
    CHECK(!strcmp(tmem_kv_dtype_name((tmem_kv_dtype)99), "?"));
}

static void test_bad_layouts(void) {
    uint64_t b = 1;
    tmem_kv_layout l = {0};
    CHECK_ST(tmem_kv_layout_token_bytes(&l, &b), TMEM_E_INVALID_ARG);
    CHECK(b == 0);
    CHECK_ST(tmem_kv_layout_token_bytes(NULL, &b), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_layout_token_bytes(&qwen35_kv, NULL), TMEM_E_INVALID_ARG);
    l = (tmem_kv_layout){6, 2, 100, TMEM_KV_DTYPE_Q8_0, 0};
    CHECK_ST(tmem_kv_layout_token_bytes(&l, &b), TMEM_E_INVALID_ARG);
    l = (tmem_kv_layout){UINT32_MAX, UINT32_MAX, UINT32_MAX, TMEM_KV_DTYPE_F32, UINT32_MAX};
    CHECK_ST(tmem_kv_layout_token_bytes(&l, &b), TMEM_E_OVERFLOW);
    l = (tmem_kv_layout){1u << 20, 1u << 10, 1u << 10, TMEM_KV_DTYPE_F32, UINT32_MAX};
    CHECK_OK(tmem_kv_layout_token_bytes(&l, &b));
    CHECK_ST(tmem_kv_layout_block_bytes(&l, &b), TMEM_E_OVERFLOW);
    l = (tmem_kv_layout){6, 2, 256, (tmem_kv_dtype)42, 0};
    CHECK_ST(tmem_kv_layout_token_bytes(&l, &b), TMEM_E_INVALID_ARG);
    tmem_recurrent_sizes s;
    tmem_recurrent_layout r = qwen35_rec;
    r.value_dim = 0;
    CHECK_ST(tmem_recurrent_layout_sizes(&r, &s), TMEM_E_INVALID_ARG);
    CHECK(s.total_bytes == 0);
    r = qwen35_rec;
    r.dtype = TMEM_KV_DTYPE_Q8_0;
    r.conv_channels = 33; /* 3 x 33 conv elements: not whole q8_0 blocks */
    CHECK_ST(tmem_recurrent_layout_sizes(&r, &s), TMEM_E_INVALID_ARG);
    r = (tmem_recurrent_layout){UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, 0, 0};
    CHECK_ST(tmem_recurrent_layout_sizes(&r, &s), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_recurrent_layout_sizes(NULL, &s), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_recurrent_layout_bytes(&qwen35_rec, NULL), TMEM_E_INVALID_ARG);
}

int main(void) {
    RUN(test_qwen35_kv);
    RUN(test_dense_models);
    RUN(test_qwen35_recurrent);
    RUN(test_dtypes);
    RUN(test_bad_layouts);
    return tmem_test_finish();
}
