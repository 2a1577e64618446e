/*
 * One tensor's bytes, row by row into a bounded buffer streamed to the file:
 * from a checkpoint tensor (source dtype -> f32, V-head reorder, element-wise
 * op, finiteness check, target type) or from the seeded generator. Rows are
 * the HF matrix's rows = GGUF rows of ne[0] elements (conv1d: one channel's
 * kernel). Memory: two rows of f32 and a 4 MiB output buffer.
 */
#include "convert_internal.h"
#include "kern/kern.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OUT_BUF (4u << 20)
/* Largest finite f16: a larger weight would silently become infinity. */
#define F16_MAX 65504.0f

void tmrt__cv_progress_add(cv_progress *p, uint64_t bytes) {
    p->done += bytes;
    if (p->fn && (p->done - p->last >= (8u << 20) || p->done == p->total)) {
        p->last = p->done;
        p->fn(p->user, p->done, p->total);
    }
}

/* Index of the source element for output index `o` under a V-head reorder:
 * grouped by key head [k0v0, k0v1, .., k1v0, ..] -> tiled [k0v0, k1v0, ..,
 * k0v1, k1v1, ..], what ggml's broadcast over key heads expects. */
static uint64_t reorder_src(const cv_reorder *r, const cv_hparams *h, uint64_t o) {
    if (!r->axis || o < r->start) return o;
    uint64_t j = o - r->start, head = j / r->hd, i = j % r->hd;
    uint64_t K = h->ssm_k_heads, R = h->ssm_v_heads / h->ssm_k_heads;
    uint64_t v = head / K, k = head % K;
    return r->start + (k * R + v) * r->hd + i;
}

/* Encode one f32 row as `type`: the float types through the library, Q8_0
 * through the kernels' quantizer (the one the matmuls are tested against). */
static tmem_status encode_row(uint32_t type, const float *x, void *dst, uint64_t n) {
    if (type == TMEM_GGML_Q8_0) return tmrt__kern_quantize_row(type, x, dst, (int64_t)n) ? TMEM_OK : TMEM_E_UNSUPPORTED;
    return tmem_ggml_row_from_f32(type, x, dst, n);
}

typedef struct rowbuf {
    tmem_gguf_stream *s;
    uint8_t *buf;
    size_t len;
    cv_progress *p;
} rowbuf;

static tmem_status rb_flush(rowbuf *b) {
    if (!b->len) return TMEM_OK;
    tmem_status st = tmem_gguf_stream_write(b->s, b->buf, b->len);
    if (!st) tmrt__cv_progress_add(b->p, b->len);
    b->len = 0;
    return st;
}

/* Room for one row of `bytes` (flushing first if needed). */
static uint8_t *rb_row(rowbuf *b, size_t bytes, tmem_status *st) {
    if (b->len + bytes > OUT_BUF && (*st = rb_flush(b))) return NULL;
    uint8_t *p = b->buf + b->len;
    b->len += bytes;
    return p;
}

static uint32_t ggml_of(tmem_st_dtype d) {
    switch (d) {
    case TMEM_ST_F32: return TMEM_GGML_F32;
    case TMEM_ST_F16: return TMEM_GGML_F16;
    case TMEM_ST_BF16: return TMEM_GGML_BF16;
    default: return TMEM_GGML_TYPE_LIMIT;
    }
}

static void load_row(const tmem_safetensors_tensor *src, uint64_t row, uint64_t n, float *out) {
    uint32_t es = tmem_st_dtype_size(src->dtype);
    const uint8_t *p = (const uint8_t *)src->data + row * n * es;
    if (src->dtype == TMEM_ST_F64) {
        for (uint64_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, p + 8 * i, 8);
            out[i] = (float)d;
        }
        return;
    }
    if (tmem_ggml_row_to_f32(ggml_of(src->dtype), p, out, n)) /* dtype checked by tmrt__cv_rows_check */
        memset(out, 0, (size_t)n * sizeof *out);
}

static void shape_str(char *buf, size_t cap, uint32_t n, const uint64_t *d) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%llu", i ? ", " : "", (unsigned long long)d[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

tmem_status tmrt__cv_rows_check(const cv_tensor *t, const tmem_safetensors_tensor *src, tmrt_error *err) {
    bool same = src->n_dims == t->hf_dims;
    for (uint32_t d = 0; same && d < t->hf_dims; d++) same = src->shape[d] == t->hf_shape[d];
    if (!same) {
        char got[96], want[96];
        shape_str(got, sizeof got, src->n_dims, src->shape);
        shape_str(want, sizeof want, t->hf_dims, t->hf_shape);
        return tmrt__fail(err, TMEM_E_CORRUPT, "tensor '%s': shape %s, but config.json implies %s", t->hf,
                             got, want);
    }
    if (src->dtype != TMEM_ST_F64 && ggml_of(src->dtype) == TMEM_GGML_TYPE_LIMIT)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "tensor '%s': dtype %s (F32, F16, BF16 or F64 expected)", t->hf,
                       tmem_st_dtype_name(src->dtype));
    return TMEM_OK;
}

static tmem_status write_rows(tmem_gguf_stream *s, const cv_tensor *t, const cv_hparams *h,
                              const tmem_safetensors_tensor *src, uint64_t seed, cv_progress *p,
                              tmrt_error *err);

tmem_status tmrt__cv_rows_convert(tmem_gguf_stream *s, const cv_tensor *t, const cv_hparams *h,
                            const tmem_safetensors_tensor *src, cv_progress *p, tmrt_error *err) {
    tmem_status st = tmrt__cv_rows_check(t, src, err);
    return st ? st : write_rows(s, t, h, src, 0, p, err);
}

tmem_status tmrt__cv_rows_generate(tmem_gguf_stream *s, const cv_tensor *t, const cv_hparams *h, uint64_t seed,
                             cv_progress *p, tmrt_error *err) {
    return write_rows(s, t, h, NULL, seed, p, err);
}

/* ---- the generator: splitmix64 seeded from (seed, tensor name) ---- */

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t name_seed(uint64_t seed, const char *name) {
    uint64_t x = 0xCBF29CE484222325ull ^ seed;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) x = (x ^ *c) * 0x100000001B3ull;
    return x;
}

/* Uniform in [0, 1). */
static float unit(uint64_t *st) { return (float)(splitmix(st) >> 40) * (1.0f / 16777216.0f); }

static void gen_row(const cv_tensor *t, const cv_hparams *h, uint64_t *rng, float *x, uint64_t n) {
    float std = 1.0f / sqrtf((float)t->ne[0]);
    switch (t->init) {
    case CV_INIT_PROJ_OUT: std /= sqrtf(2.0f * (float)h->n_layers); /* fall through */
    case CV_INIT_PROJ:
    case CV_INIT_EMBD: {
        float a = std * 1.7320508f; /* uniform(-a, a) has std a / sqrt(3) */
        for (uint64_t i = 0; i < n; i++) x[i] = (2.0f * unit(rng) - 1.0f) * a;
        break;
    }
    case CV_INIT_NORM:
        for (uint64_t i = 0; i < n; i++) x[i] = 1.0f + (2.0f * unit(rng) - 1.0f) * 0.0346f; /* std 0.02 */
        break;
    case CV_INIT_SSM_A:
        for (uint64_t i = 0; i < n; i++) x[i] = -(1.0f + 15.0f * unit(rng));
        break;
    case CV_INIT_DT_BIAS:
        for (uint64_t i = 0; i < n; i++) {
            double dt = exp(log(1e-3) + unit(rng) * (log(1e-1) - log(1e-3)));
            x[i] = (float)(dt + log(-expm1(-dt))); /* softplus(x) = dt */
        }
        break;
    }
}

static tmem_status write_rows(tmem_gguf_stream *s, const cv_tensor *t, const cv_hparams *h,
                              const tmem_safetensors_tensor *src, uint64_t seed, cv_progress *p,
                              tmrt_error *err) {
    uint64_t n = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3], row_bytes;
    tmem_status st = tmem_ggml_row_size(t->type, n, &row_bytes);
    if (st) return tmrt__fail(err, st, "tensor '%s': rows of %llu cannot be stored as type %u", t->name,
                           (unsigned long long)n, t->type);
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    rowbuf rb = {s, malloc(OUT_BUF), 0, p};
    if (!a || !b || !rb.buf || row_bytes > OUT_BUF) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "tensor '%s': out of memory for a row", t->name);
        goto done;
    }
    uint64_t rng = name_seed(seed, t->name);
    for (uint64_t o = 0; o < rows && !st; o++) {
        float *x = a;
        if (src) {
            load_row(src, t->reorder.axis == 1 ? reorder_src(&t->reorder, h, o) : o, n, a);
            if (t->reorder.axis == 2) {
                for (uint64_t i = 0; i < n; i++) b[i] = a[reorder_src(&t->reorder, h, i)];
                x = b;
            }
            for (uint64_t i = 0; i < n; i++) {
                if (!isfinite(x[i])) {
                    st = tmrt__fail(err, TMEM_E_CORRUPT, "tensor '%s': non-finite value %g at row %llu, column %llu",
                                 t->hf, (double)x[i], (unsigned long long)o, (unsigned long long)i);
                    goto done;
                }
                if (t->op == CV_OP_PLUS1) x[i] += 1.0f;
                else if (t->op == CV_OP_NEG_EXP) x[i] = -expf(x[i]);
                if (!isfinite(x[i])) {
                    st = tmrt__fail(err, TMEM_E_CORRUPT,
                                       "tensor '%s': value at row %llu, column %llu overflows when "
                                       "transformed for '%s'",
                                       t->hf, (unsigned long long)o, (unsigned long long)i, t->name);
                    goto done;
                }
                if (t->type == TMEM_GGML_F16 && fabsf(x[i]) > F16_MAX) {
                    st = tmrt__fail(err, TMEM_E_CORRUPT,
                                       "tensor '%s': value %g at row %llu, column %llu does not fit "
                                       "f16 (max 65504): convert with --dtype bf16 or f32",
                                       t->hf, (double)x[i], (unsigned long long)o, (unsigned long long)i);
                    goto done;
                }
            }
        } else {
            gen_row(t, h, &rng, x, n);
        }
        uint8_t *dst = rb_row(&rb, (size_t)row_bytes, &st);
        if (!dst) break;
        if ((st = encode_row(t->type, x, dst, n)))
            st = tmrt__fail(err, st, "tensor '%s': cannot encode %llu values as type %u", t->name,
                         (unsigned long long)n, t->type);
    }
    if (!st) st = rb_flush(&rb);
    if (st && err && !err->message[0])
        tmrt__fail(err, st, "tensor '%s': writing failed: %s", t->name, tmem_strerror(st));
done:
    free(a);
    free(b);
    free(rb.buf);
    return st;
}
