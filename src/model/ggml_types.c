/* ggml tensor type traits (block size and bytes per block) and the small
 * dtype enum of the fit calculator. Sizes follow ggml's block structs
 * (ggml-common.h): e.g. block_q4_K = 2 halves + 12 scale bytes + 128 quant
 * bytes = 144 bytes for 256 elements. */
#include "model_internal.h"
#include <string.h>
#include <strings.h>

typedef struct type_row {
    const char *name;
    uint32_t block_size, type_size;
} type_row;

/* Indexed by ggml type id; a NULL name marks a removed or unknown id. */
static const type_row type_table[TMEM_GGML_TYPE_LIMIT] = {
    [TMEM_GGML_F32] = {"f32", 1, 4},
    [TMEM_GGML_F16] = {"f16", 1, 2},
    [TMEM_GGML_Q4_0] = {"q4_0", 32, 18},
    [TMEM_GGML_Q4_1] = {"q4_1", 32, 20},
    [TMEM_GGML_Q5_0] = {"q5_0", 32, 22},
    [TMEM_GGML_Q5_1] = {"q5_1", 32, 24},
    [TMEM_GGML_Q8_0] = {"q8_0", 32, 34},
    [TMEM_GGML_Q8_1] = {"q8_1", 32, 36},
    [TMEM_GGML_Q2_K] = {"q2_K", 256, 84},
    [TMEM_GGML_Q3_K] = {"q3_K", 256, 110},
    [TMEM_GGML_Q4_K] = {"q4_K", 256, 144},
    [TMEM_GGML_Q5_K] = {"q5_K", 256, 176},
    [TMEM_GGML_Q6_K] = {"q6_K", 256, 210},
    [TMEM_GGML_Q8_K] = {"q8_K", 256, 292},
    [TMEM_GGML_IQ2_XXS] = {"iq2_xxs", 256, 66},
    [TMEM_GGML_IQ2_XS] = {"iq2_xs", 256, 74},
    [TMEM_GGML_IQ3_XXS] = {"iq3_xxs", 256, 98},
    [TMEM_GGML_IQ1_S] = {"iq1_s", 256, 50},
    [TMEM_GGML_IQ4_NL] = {"iq4_nl", 32, 18},
    [TMEM_GGML_IQ3_S] = {"iq3_s", 256, 110},
    [TMEM_GGML_IQ2_S] = {"iq2_s", 256, 82},
    [TMEM_GGML_IQ4_XS] = {"iq4_xs", 256, 136},
    [TMEM_GGML_I8] = {"i8", 1, 1},
    [TMEM_GGML_I16] = {"i16", 1, 2},
    [TMEM_GGML_I32] = {"i32", 1, 4},
    [TMEM_GGML_I64] = {"i64", 1, 8},
    [TMEM_GGML_F64] = {"f64", 1, 8},
    [TMEM_GGML_IQ1_M] = {"iq1_m", 256, 56},
    [TMEM_GGML_BF16] = {"bf16", 1, 2},
    [TMEM_GGML_TQ1_0] = {"tq1_0", 256, 54},
    [TMEM_GGML_TQ2_0] = {"tq2_0", 256, 66},
    [TMEM_GGML_MXFP4] = {"mxfp4", 32, 17},
};

tmem_status tmem_ggml_type_get_info(uint32_t type, tmem_ggml_type_info *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    if (type >= TMEM_GGML_TYPE_LIMIT || !type_table[type].name) return tmem__err(TMEM_E_UNSUPPORTED);
    out->name = type_table[type].name;
    out->block_size = type_table[type].block_size;
    out->type_size = type_table[type].type_size;
    return TMEM_OK;
}

tmem_status tmem_ggml_row_size(uint32_t type, uint64_t n, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    if (type >= TMEM_GGML_TYPE_LIMIT || !type_table[type].name) return tmem__err(TMEM_E_UNSUPPORTED);
    const type_row *t = &type_table[type];
    if (n % t->block_size) return tmem__err(TMEM_E_INVALID_ARG);
    if (tmem__mul_overflow(n / t->block_size, t->type_size, out)) {
        *out = 0;
        return tmem__err(TMEM_E_OVERFLOW);
    }
    return TMEM_OK;
}

tmem_status tmem_ggml_type_from_name(const char *name, uint32_t *out) {
    if (!name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    for (uint32_t i = 0; i < TMEM_GGML_TYPE_LIMIT; i++)
        if (type_table[i].name && !strcasecmp(type_table[i].name, name)) {
            *out = i;
            return TMEM_OK;
        }
    return tmem__err(TMEM_E_NOT_FOUND);
}

/* ---- the fit calculator's dtypes ---- */

static const struct { const char *name; uint32_t ggml; } dtype_table[TMEM_WEIGHT_COUNT] = {
    [TMEM_WEIGHT_DEFAULT] = {"default", TMEM_GGML_TYPE_LIMIT},
    [TMEM_WEIGHT_F32] = {"f32", TMEM_GGML_F32},
    [TMEM_WEIGHT_F16] = {"f16", TMEM_GGML_F16},
    [TMEM_WEIGHT_BF16] = {"bf16", TMEM_GGML_BF16},
    [TMEM_WEIGHT_Q8_0] = {"q8_0", TMEM_GGML_Q8_0},
    [TMEM_WEIGHT_Q4_0] = {"q4_0", TMEM_GGML_Q4_0},
    [TMEM_WEIGHT_Q4_K] = {"q4_k", TMEM_GGML_Q4_K},
    [TMEM_WEIGHT_Q5_K] = {"q5_k", TMEM_GGML_Q5_K},
    [TMEM_WEIGHT_Q6_K] = {"q6_k", TMEM_GGML_Q6_K},
};

uint32_t tmem_weight_dtype_ggml(tmem_weight_dtype dtype) {
    if ((unsigned)dtype >= TMEM_WEIGHT_COUNT) return TMEM_GGML_TYPE_LIMIT;
    return dtype_table[dtype].ggml;
}

/* llama.cpp's file types (LLAMA_FTYPE_MOSTLY_*) whose tensors are, apart
 * from a few, of one of our dtypes. */
static const struct { const char *name; tmem_weight_dtype dtype; } ftype_table[] = {
    {"q4_k_m", TMEM_WEIGHT_Q4_K}, {"q4_k_s", TMEM_WEIGHT_Q4_K}, {"q5_k_m", TMEM_WEIGHT_Q5_K},
    {"q5_k_s", TMEM_WEIGHT_Q5_K},
};

tmem_status tmem_weight_dtype_from_name(const char *name, tmem_weight_dtype *out) {
    if (out) *out = TMEM_WEIGHT_DEFAULT;
    if (!name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (!strncasecmp(name, "mostly_", 7)) name += 7;
    for (int i = 1; i < TMEM_WEIGHT_COUNT; i++)
        if (!strcasecmp(dtype_table[i].name, name)) {
            *out = (tmem_weight_dtype)i;
            return TMEM_OK;
        }
    for (size_t i = 0; i < sizeof ftype_table / sizeof ftype_table[0]; i++)
        if (!strcasecmp(ftype_table[i].name, name)) {
            *out = ftype_table[i].dtype;
            return TMEM_OK;
        }
    return tmem__err(TMEM_E_NOT_FOUND);
}

tmem_status tmem_kv_dtype_from_name(const char *name, tmem_kv_dtype *out) {
    if (out) *out = TMEM_KV_DTYPE_DEFAULT;
    if (!name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    for (int i = 1; i < TMEM_KV_DTYPE_COUNT; i++)
        if (!strcasecmp(tmem_kv_dtype_name((tmem_kv_dtype)i), name)) {
            *out = (tmem_kv_dtype)i;
            return TMEM_OK;
        }
    return tmem__err(TMEM_E_NOT_FOUND);
}
