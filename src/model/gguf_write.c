/*
 * GGUF v3 writer for tests and tools: builds the image in memory (the
 * library writes no files; callers put the bytes where they want). Pairs are
 * stored pre-encoded, tensors with their data (or a generated pattern), and
 * tmem_gguf_writer_write lays them out exactly as ggml does: header, pairs,
 * tensor infos, zero padding to the alignment, each tensor's data padded to
 * the alignment. A stream (tmem_gguf_stream_*) writes the same layout to a
 * file through the OS layer, header first, the tensors' bytes as the caller
 * produces them, so a model never has to exist in memory as a whole.
 */
#include "model_internal.h"
#include "os/os.h"
#include <string.h>

typedef struct wkv {
    char *key;
    size_t key_len;
    uint8_t *enc; /* u32 type + encoded value */
    size_t enc_len, enc_cap;
} wkv;

typedef struct wtensor {
    char name[TMEM__GGUF_MAX_NAME + 1];
    uint32_t type, n_dims;
    uint64_t dims[TMEM__GGUF_MAX_DIMS];
    uint64_t size;
    uint8_t *data; /* NULL = generated */
    bool streamed; /* bytes come from tmem_gguf_stream_write */
} wtensor;

struct tmem_gguf_writer {
    tmem_context *ctx;
    uint32_t alignment;
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    bool streaming; /* a stream is writing it: no more changes */
};

/* ---- a growable byte buffer ---- */

typedef struct bytes {
    tmem_context *ctx;
    uint8_t *p;
    size_t len, cap;
    bool failed;
} bytes;

static void b_reserve(bytes *b, size_t more) {
    if (b->failed) return;
    if (more > SIZE_MAX - b->len) {
        b->failed = true;
        return;
    }
    if (b->len + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more) {
        if (cap > SIZE_MAX / 2) {
            cap = b->len + more;
            break;
        }
        cap *= 2;
    }
    uint8_t *p = tmem__model_alloc(b->ctx, cap);
    if (!p) {
        b->failed = true;
        return;
    }
    if (b->len) memcpy(p, b->p, b->len);
    tmem__model_free(b->ctx, b->p, b->cap);
    b->p = p;
    b->cap = cap;
}
static void b_put(bytes *b, const void *src, size_t n) {
    b_reserve(b, n);
    if (b->failed || !n) return;
    memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void b_u32(bytes *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    b_put(b, x, 4);
}
static void b_u64(bytes *b, uint64_t v) {
    b_u32(b, (uint32_t)v);
    b_u32(b, (uint32_t)(v >> 32));
}
static void b_str(bytes *b, const char *s, size_t n) {
    b_u64(b, n);
    b_put(b, s, n);
}
static void b_free(bytes *b) {
    tmem__model_free(b->ctx, b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Encode one scalar or string value (no type tag). */
static bool put_scalar(bytes *b, const tmem_gguf_value *v) {
    switch (v->type) {
    case TMEM_GGUF_UINT8: { uint8_t x = (uint8_t)v->v.u; b_put(b, &x, 1); break; }
    case TMEM_GGUF_INT8: { uint8_t x = (uint8_t)(int8_t)v->v.i; b_put(b, &x, 1); break; }
    case TMEM_GGUF_BOOL: { uint8_t x = v->v.b ? 1 : 0; b_put(b, &x, 1); break; }
    case TMEM_GGUF_UINT16: {
        uint16_t x = (uint16_t)v->v.u;
        uint8_t y[2] = {(uint8_t)x, (uint8_t)(x >> 8)};
        b_put(b, y, 2);
        break;
    }
    case TMEM_GGUF_INT16: {
        uint16_t x = (uint16_t)(int16_t)v->v.i;
        uint8_t y[2] = {(uint8_t)x, (uint8_t)(x >> 8)};
        b_put(b, y, 2);
        break;
    }
    case TMEM_GGUF_UINT32: b_u32(b, (uint32_t)v->v.u); break;
    case TMEM_GGUF_INT32: b_u32(b, (uint32_t)(int32_t)v->v.i); break;
    case TMEM_GGUF_UINT64: b_u64(b, v->v.u); break;
    case TMEM_GGUF_INT64: b_u64(b, (uint64_t)v->v.i); break;
    case TMEM_GGUF_FLOAT32: { float f = (float)v->v.f; uint32_t u; memcpy(&u, &f, 4); b_u32(b, u); break; }
    case TMEM_GGUF_FLOAT64: { uint64_t u; memcpy(&u, &v->v.f, 8); b_u64(b, u); break; }
    case TMEM_GGUF_STRING:
        if (!v->v.s.data && v->v.s.len) return false;
        if (v->v.s.len > SIZE_MAX) return false;
        b_str(b, v->v.s.data ? v->v.s.data : "", (size_t)v->v.s.len);
        break;
    default: return false;
    }
    return true;
}

/* ---- writer ---- */

tmem_status tmem_gguf_writer_create(tmem_context *ctx, uint32_t alignment, tmem_gguf_writer **out) {
    if (out) *out = NULL;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    if (alignment && !tmem__is_pow2(alignment)) return tmem__err(TMEM_E_ALIGNMENT);
    tmem_gguf_writer *w = tmem__model_alloc(ctx, sizeof *w);
    if (!w) return tmem__err(TMEM_E_NO_MEMORY);
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->alignment = TMEM__GGUF_DEFAULT_ALIGN;
    if (alignment) {
        tmem_gguf_value v = {.type = TMEM_GGUF_UINT32};
        v.v.u = alignment;
        tmem_status st = tmem_gguf_writer_set(w, "general.alignment", &v);
        if (st) {
            tmem_gguf_writer_destroy(w);
            return st;
        }
    }
    *out = w;
    return TMEM_OK;
}

void tmem_gguf_writer_destroy(tmem_gguf_writer *w) {
    if (!w) return;
    tmem_context *ctx = w->ctx;
    for (size_t i = 0; i < w->n_kv; i++) {
        tmem__model_free(ctx, w->kv[i].key, w->kv[i].key_len + 1);
        tmem__model_free(ctx, w->kv[i].enc, w->kv[i].enc_cap);
    }
    for (size_t i = 0; i < w->n_t; i++) tmem__model_free(ctx, w->t[i].data, (size_t)w->t[i].size);
    tmem__model_free(ctx, w->kv, w->cap_kv * sizeof *w->kv);
    tmem__model_free(ctx, w->t, w->cap_t * sizeof *w->t);
    tmem__model_free(ctx, w, sizeof *w);
}

/* Grow an array of `elem`-byte items to hold one more. */
static bool grow(tmem_context *ctx, void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 8;
    if (nc > SIZE_MAX / elem) return false;
    void *p = tmem__model_alloc(ctx, nc * elem);
    if (!p) return false;
    if (n) memcpy(p, *arr, n * elem);
    tmem__model_free(ctx, *arr, *cap * elem);
    *arr = p;
    *cap = nc;
    return true;
}

static tmem_status add_pair(tmem_gguf_writer *w, const char *key, bytes *enc) {
    if (w->streaming) return tmem__err(TMEM_E_STATE);
    size_t kl = strlen(key);
    if (kl == 0 || kl > TMEM__GGUF_MAX_KEY) return tmem__err(TMEM_E_INVALID_ARG);
    for (size_t i = 0; i < w->n_kv; i++)
        if (w->kv[i].key_len == kl && !memcmp(w->kv[i].key, key, kl)) return tmem__err(TMEM_E_EXISTS);
    if (enc->failed) return tmem__err(TMEM_E_NO_MEMORY);
    if (!grow(w->ctx, (void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) return tmem__err(TMEM_E_NO_MEMORY);
    char *k = tmem__model_alloc(w->ctx, kl + 1);
    if (!k) return tmem__err(TMEM_E_NO_MEMORY);
    memcpy(k, key, kl + 1);
    wkv *kv = &w->kv[w->n_kv++];
    kv->key = k;
    kv->key_len = kl;
    /* hand the encoded bytes over */
    kv->enc = enc->p;
    kv->enc_len = enc->len;
    kv->enc_cap = enc->cap;
    enc->p = NULL;
    enc->len = enc->cap = 0;
    return TMEM_OK;
}

tmem_status tmem_gguf_writer_set(tmem_gguf_writer *w, const char *key, const tmem_gguf_value *value) {
    if (!w || !key || !value || value->type == TMEM_GGUF_ARRAY || (unsigned)value->type >= TMEM_GGUF_VTYPE_COUNT)
        return tmem__err(TMEM_E_INVALID_ARG);
    bool is_align = !strcmp(key, "general.alignment");
    if (is_align && (value->type != TMEM_GGUF_UINT32 || !tmem__is_pow2(value->v.u) || value->v.u > UINT32_MAX))
        return tmem__err(TMEM_E_ALIGNMENT);
    bytes b = {.ctx = w->ctx};
    b_u32(&b, value->type);
    if (!put_scalar(&b, value)) {
        b_free(&b);
        return tmem__err(TMEM_E_INVALID_ARG);
    }
    tmem_status st = add_pair(w, key, &b);
    b_free(&b);
    if (!st && is_align) w->alignment = (uint32_t)value->v.u;
    return st;
}

tmem_status tmem_gguf_writer_set_array(tmem_gguf_writer *w, const char *key, tmem_gguf_vtype et, const void *elems,
                                       uint64_t count) {
    if (!w || !key || (count && !elems) || et == TMEM_GGUF_ARRAY || (unsigned)et >= TMEM_GGUF_VTYPE_COUNT ||
        !strcmp(key, "general.alignment"))
        return tmem__err(TMEM_E_INVALID_ARG);
    bytes b = {.ctx = w->ctx};
    b_u32(&b, TMEM_GGUF_ARRAY);
    b_u32(&b, et);
    b_u64(&b, count);
    const uint8_t *p = elems;
    for (uint64_t i = 0; i < count && !b.failed; i++) {
        tmem_gguf_value v = {.type = et};
        switch (et) {
        case TMEM_GGUF_UINT8: v.v.u = p[i]; break;
        case TMEM_GGUF_INT8: v.v.i = ((const int8_t *)elems)[i]; break;
        case TMEM_GGUF_BOOL: v.v.b = p[i] != 0; break;
        case TMEM_GGUF_UINT16: v.v.u = ((const uint16_t *)elems)[i]; break;
        case TMEM_GGUF_INT16: v.v.i = ((const int16_t *)elems)[i]; break;
        case TMEM_GGUF_UINT32: v.v.u = ((const uint32_t *)elems)[i]; break;
        case TMEM_GGUF_INT32: v.v.i = ((const int32_t *)elems)[i]; break;
        case TMEM_GGUF_UINT64: v.v.u = ((const uint64_t *)elems)[i]; break;
        case TMEM_GGUF_INT64: v.v.i = ((const int64_t *)elems)[i]; break;
        case TMEM_GGUF_FLOAT32: v.v.f = ((const float *)elems)[i]; break;
        case TMEM_GGUF_FLOAT64: v.v.f = ((const double *)elems)[i]; break;
        case TMEM_GGUF_STRING: {
            const char *s = ((const char *const *)elems)[i];
            if (!s) {
                b_free(&b);
                return tmem__err(TMEM_E_INVALID_ARG);
            }
            v.v.s.data = s;
            v.v.s.len = strlen(s);
            break;
        }
        default: break;
        }
        (void)put_scalar(&b, &v);
    }
    tmem_status st = add_pair(w, key, &b);
    b_free(&b);
    return st;
}

static tmem_status add_tensor(tmem_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                              const uint64_t *dims, const void *data, bool streamed) {
    if (!w || !name || !dims) return tmem__err(TMEM_E_INVALID_ARG);
    if (w->streaming) return tmem__err(TMEM_E_STATE);
    size_t nl = strlen(name);
    if (nl == 0 || nl > TMEM__GGUF_MAX_NAME || n_dims < 1 || n_dims > TMEM__GGUF_MAX_DIMS)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_ggml_type_info ti;
    tmem_status st = tmem_ggml_type_get_info(type, &ti);
    if (st) return st;
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (dims[d] == 0) return tmem__err(TMEM_E_INVALID_ARG);
        if (tmem__mul_overflow(n, dims[d], &n) || n > INT64_MAX) return tmem__err(TMEM_E_OVERFLOW);
    }
    if (dims[0] % ti.block_size) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t size;
    if ((st = tmem_ggml_row_size(type, n, &size))) return st;
    if (size > SIZE_MAX) return tmem__err(TMEM_E_OVERFLOW);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return tmem__err(TMEM_E_EXISTS);
    if (!grow(w->ctx, (void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t)) return tmem__err(TMEM_E_NO_MEMORY);
    uint8_t *copy = NULL;
    if (data) {
        copy = tmem__model_alloc(w->ctx, (size_t)size);
        if (!copy) return tmem__err(TMEM_E_NO_MEMORY);
        memcpy(copy, data, (size_t)size);
    }
    wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, nl + 1);
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < TMEM__GGUF_MAX_DIMS; d++) t->dims[d] = d < n_dims ? dims[d] : 1;
    t->size = size;
    t->data = copy;
    t->streamed = streamed;
    return TMEM_OK;
}

tmem_status tmem_gguf_writer_add_tensor(tmem_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                        const uint64_t *dims, const void *data) {
    return add_tensor(w, name, type, n_dims, dims, data, false);
}

tmem_status tmem_gguf_writer_add_tensor_info(tmem_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                             const uint64_t *dims) {
    return add_tensor(w, name, type, n_dims, dims, NULL, true);
}

/* Layout pass: where each part goes and the total size. */
static tmem_status layout(const tmem_gguf_writer *w, uint64_t *data_offset, uint64_t *total) {
    uint64_t off = 24; /* magic, version, n_tensors, n_kv */
    for (size_t i = 0; i < w->n_kv; i++) off += 8 + w->kv[i].key_len + w->kv[i].enc_len;
    for (size_t i = 0; i < w->n_t; i++) off += 8 + strlen(w->t[i].name) + 4 + 8ull * w->t[i].n_dims + 4 + 8;
    uint64_t d;
    if (!tmem__align_up(off, w->alignment, &d)) return tmem__err(TMEM_E_OVERFLOW);
    *data_offset = d;
    uint64_t rel = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        if (tmem__add_overflow(rel, w->t[i].size, &rel) || !tmem__align_up(rel, w->alignment, &rel))
            return tmem__err(TMEM_E_OVERFLOW);
    }
    if (tmem__add_overflow(d, rel, total)) return tmem__err(TMEM_E_OVERFLOW);
    return TMEM_OK;
}

/* Little-endian stores into the output at a cursor. */
static void put(uint8_t *out, uint64_t *o, const void *src, uint64_t n) {
    memcpy(out + *o, src, (size_t)n);
    *o += n;
}
static void put64(uint8_t *out, uint64_t *o, uint64_t v) {
    for (int i = 0; i < 8; i++) out[(*o)++] = (uint8_t)(v >> (8 * i));
}
static void put32(uint8_t *out, uint64_t *o, uint32_t v) {
    for (int i = 0; i < 4; i++) out[(*o)++] = (uint8_t)(v >> (8 * i));
}

/* Header, pairs, tensor infos and the zero padding up to data_offset. */
static void write_header(const tmem_gguf_writer *w, uint8_t *out, uint64_t data_offset) {
    uint64_t o = 0;
    put32(out, &o, TMEM__GGUF_MAGIC);
    put32(out, &o, 3);
    put64(out, &o, w->n_t);
    put64(out, &o, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put64(out, &o, w->kv[i].key_len);
        put(out, &o, w->kv[i].key, w->kv[i].key_len);
        put(out, &o, w->kv[i].enc, w->kv[i].enc_len);
    }
    uint64_t rel = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        size_t nl = strlen(t->name);
        put64(out, &o, nl);
        put(out, &o, t->name, nl);
        put32(out, &o, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put64(out, &o, t->dims[d]);
        put32(out, &o, t->type);
        put64(out, &o, rel);
        rel = (rel + t->size + w->alignment - 1) / w->alignment * w->alignment; /* checked in layout */
    }
    memset(out + o, 0, (size_t)(data_offset - o));
}

/* Byte k of a tensor the writer owns (copied data or the test pattern). */
static uint8_t owned_byte(const wtensor *t, size_t i, uint64_t k) {
    return t->data ? t->data[k] : (uint8_t)(i * 131u + k * 7u + 1u);
}

tmem_status tmem_gguf_writer_write(const tmem_gguf_writer *w, void *buf, size_t cap, size_t *needed) {
    if (needed) *needed = 0;
    if (!w || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    for (size_t i = 0; i < w->n_t; i++)
        if (w->t[i].streamed) return tmem__err(TMEM_E_STATE); /* its bytes only exist in a stream */
    uint64_t data_offset = 0, total = 0;
    tmem_status st = layout(w, &data_offset, &total);
    if (st) return st;
    if (total > SIZE_MAX) return tmem__err(TMEM_E_OVERFLOW);
    if (needed) *needed = (size_t)total;
    if (cap < total) return TMEM_E_FULL; /* a sizing call is not an error */
    uint8_t *out = buf;
    write_header(w, out, data_offset);
    uint64_t o = data_offset;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (t->data) memcpy(out + o, t->data, (size_t)t->size);
        else
            for (uint64_t k = 0; k < t->size; k++) out[o + k] = owned_byte(t, i, k);
        uint64_t end = (o + t->size + w->alignment - 1) / w->alignment * w->alignment;
        memset(out + o + t->size, 0, (size_t)(end - o - t->size));
        o = end;
    }
    return TMEM_OK;
}

/* ---- streaming to a file ---- */

#define STREAM_BUF (1u << 20)

struct tmem_gguf_stream {
    tmem_gguf_writer *w;
    char *path;
    size_t path_len;
    tmem__os_afile af;     /* the temporary, renamed over path on finish */
    size_t cur;            /* tensor being written */
    uint64_t cur_done;     /* its bytes so far */
    uint64_t file_bytes;
    tmem_status failed;    /* first error; the file is removed at the end */
    uint8_t *buf;
    size_t buf_len;
};

static tmem_status s_flush(tmem_gguf_stream *s) {
    if (s->failed) return s->failed;
    if (s->buf_len) {
        tmem_status st = tmem__os_write_all(s->af.fd, s->buf, s->buf_len);
        if (st) {
            s->failed = st;
            return st;
        }
    }
    s->buf_len = 0;
    return TMEM_OK;
}

static tmem_status s_put(tmem_gguf_stream *s, const void *src, uint64_t n) {
    const uint8_t *p = src;
    while (n) {
        if (s->buf_len == STREAM_BUF) {
            tmem_status st = s_flush(s);
            if (st) return st;
        }
        size_t k = STREAM_BUF - s->buf_len;
        if (k > n) k = (size_t)n;
        if (p) memcpy(s->buf + s->buf_len, p, k);
        else memset(s->buf + s->buf_len, 0, k);
        s->buf_len += k;
        if (p) p += k;
        n -= k;
        s->file_bytes += k;
    }
    return TMEM_OK;
}

/* Finish the current tensor (padding) and emit the writer-owned ones after
 * it, up to the next streamed tensor. */
static tmem_status s_advance(tmem_gguf_stream *s) {
    const tmem_gguf_writer *w = s->w;
    while (s->cur < w->n_t) {
        const wtensor *t = &w->t[s->cur];
        if (t->streamed && s->cur_done < t->size) return TMEM_OK;
        if (!t->streamed) {
            tmem_status st = TMEM_OK;
            if (t->data) st = s_put(s, t->data, t->size);
            else
                for (uint64_t k = 0; k < t->size && !st; k++) {
                    uint8_t b = owned_byte(t, s->cur, k);
                    st = s_put(s, &b, 1);
                }
            if (st) return st;
        }
        uint64_t pad = (w->alignment - t->size % w->alignment) % w->alignment;
        tmem_status st = s_put(s, NULL, pad);
        if (st) return st;
        s->cur++;
        s->cur_done = 0;
    }
    return TMEM_OK;
}

static void s_free(tmem_gguf_stream *s) {
    tmem_context *ctx = s->w->ctx;
    s->w->streaming = false;
    tmem__model_free(ctx, s->buf, STREAM_BUF);
    tmem__model_free(ctx, s->path, s->path_len + 1);
    tmem__model_free(ctx, s, sizeof *s);
}

tmem_status tmem_gguf_stream_begin(tmem_gguf_writer *w, const char *path, tmem_gguf_stream **out) {
    if (out) *out = NULL;
    if (!w || !path || !*path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (w->streaming) return tmem__err(TMEM_E_STATE);
    uint64_t data_offset, total;
    tmem_status st = layout(w, &data_offset, &total);
    if (st) return st;
    if (data_offset > SIZE_MAX) return tmem__err(TMEM_E_OVERFLOW);
    tmem_gguf_stream *s = tmem__model_alloc(w->ctx, sizeof *s);
    if (!s) return tmem__err(TMEM_E_NO_MEMORY);
    memset(s, 0, sizeof *s);
    s->w = w;
    s->af.fd = -1;
    s->path_len = strlen(path);
    s->path = tmem__model_alloc(w->ctx, s->path_len + 1);
    s->buf = tmem__model_alloc(w->ctx, STREAM_BUF);
    uint8_t *hdr = tmem__model_alloc(w->ctx, (size_t)data_offset);
    w->streaming = true;
    if (!s->path || !s->buf || !hdr) {
        tmem__model_free(w->ctx, hdr, (size_t)data_offset);
        s_free(s);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    memcpy(s->path, path, s->path_len + 1);
    if ((st = tmem__os_afile_create(path, &s->af, NULL))) {
        tmem__model_free(w->ctx, hdr, (size_t)data_offset);
        s_free(s);
        return st;
    }
    write_header(w, hdr, data_offset);
    st = s_put(s, hdr, data_offset);
    tmem__model_free(w->ctx, hdr, (size_t)data_offset);
    if (!st) st = s_advance(s);
    if (st) {
        tmem_gguf_stream_abort(s);
        return st;
    }
    *out = s;
    return TMEM_OK;
}

tmem_status tmem_gguf_stream_next(const tmem_gguf_stream *s, size_t *index, uint64_t *remaining) {
    if (index) *index = 0;
    if (remaining) *remaining = 0;
    if (!s) return tmem__err(TMEM_E_INVALID_ARG);
    if (s->cur >= s->w->n_t) return TMEM_E_NOT_FOUND;
    if (index) *index = s->cur;
    if (remaining) *remaining = s->w->t[s->cur].size - s->cur_done;
    return TMEM_OK;
}

tmem_status tmem_gguf_stream_write(tmem_gguf_stream *s, const void *data, size_t len) {
    if (!s || (!data && len)) return tmem__err(TMEM_E_INVALID_ARG);
    if (s->failed) return s->failed;
    if (s->cur >= s->w->n_t) return len ? tmem__err(TMEM_E_STATE) : TMEM_OK;
    const wtensor *t = &s->w->t[s->cur];
    if (len > t->size - s->cur_done) return tmem__err(TMEM_E_OVERFLOW);
    tmem_status st = s_put(s, data, len);
    if (st) return st;
    s->cur_done += len;
    return s_advance(s);
}

tmem_status tmem_gguf_stream_finish(tmem_gguf_stream *s, uint64_t *file_bytes) {
    if (file_bytes) *file_bytes = 0;
    if (!s) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = s->failed;
    if (!st && s->cur < s->w->n_t) st = tmem__err(TMEM_E_STATE);
    if (!st) st = s_flush(s);
    if (!st) st = tmem__os_afile_commit(&s->af); /* on failure the temporary is gone, path untouched */
    else tmem__os_afile_abort(&s->af);
    if (!st && file_bytes) *file_bytes = s->file_bytes;
    s_free(s);
    return st;
}

void tmem_gguf_stream_abort(tmem_gguf_stream *s) {
    if (!s) return;
    tmem__os_afile_abort(&s->af); /* our temporary only: path is never touched */
    s_free(s);
}
