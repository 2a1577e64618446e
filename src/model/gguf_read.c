/*
 * GGUF parser and queries over bytes already in memory (a mapping or a
 * caller's buffer). It trusts nothing: every length is checked against the
 * bytes left before it is used, every count against the smallest encoding
 * its items could have, so a hostile header cannot make us allocate more
 * than the file could describe or read past its end.
 *
 * Layout (v2/v3, little-endian):
 *   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
 *   n_kv    x { str key | u32 type | value }
 *   n_tensors x { str name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
 *   padding to general.alignment | tensor data (offsets relative to here)
 * where str = u64 len + bytes, array value = u32 elem_type + u64 count + elems.
 */
#include "model_internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation with or without a context ---- */

void *tmem__model_alloc(tmem_context *ctx, size_t size) {
    if (size == 0) size = 1;
    return ctx ? tmem__malloc(ctx, size) : malloc(size);
}

void tmem__model_free(tmem_context *ctx, void *p, size_t size) {
    if (!p) return;
    if (size == 0) size = 1;
    if (ctx) tmem__free(ctx, p, size);
    else free(p);
}

/* ---- little-endian reads (portable, no alignment assumptions) ---- */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Encoded size of fixed-size value types; 0 for STRING / ARRAY. */
static uint64_t fixed_size(uint32_t type) {
    switch (type) {
    case TMEM_GGUF_UINT8: case TMEM_GGUF_INT8: case TMEM_GGUF_BOOL: return 1;
    case TMEM_GGUF_UINT16: case TMEM_GGUF_INT16: return 2;
    case TMEM_GGUF_UINT32: case TMEM_GGUF_INT32: case TMEM_GGUF_FLOAT32: return 4;
    case TMEM_GGUF_UINT64: case TMEM_GGUF_INT64: case TMEM_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}
/* Smallest encoding of one element of `type` (bounds array counts). */
static uint64_t min_size(uint32_t type) {
    if (type == TMEM_GGUF_STRING) return 8;
    if (type == TMEM_GGUF_ARRAY) return 12;
    return fixed_size(type);
}

static const char *vtype_name(uint32_t t) {
    static const char *const names[TMEM_GGUF_VTYPE_COUNT] = {
        "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
        "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
    return t < TMEM_GGUF_VTYPE_COUNT ? names[t] : "?";
}

/* ---- the cursor and its errors ---- */

typedef struct cursor {
    const uint8_t *base;
    uint64_t size, off;
    tmem_gguf_error *err;
} cursor;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static tmem_status fail(cursor *c, tmem_status st, uint64_t at, const char *fmt, ...) {
    if (c->err) {
        c->err->offset = at;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
        va_end(ap);
    }
    return tmem__err(st);
}

static tmem_status need(cursor *c, uint64_t n, const char *what) {
    if (n > c->size - c->off)
        return fail(c, TMEM_E_PARSE, c->off, "truncated: %s needs %llu bytes at offset %llu, file has %llu",
                    what, (unsigned long long)n, (unsigned long long)c->off, (unsigned long long)c->size);
    return TMEM_OK;
}

static tmem_status rd_u32(cursor *c, const char *what, uint32_t *v) {
    tmem_status st = need(c, 4, what);
    if (st) return st;
    *v = le32(c->base + c->off);
    c->off += 4;
    return TMEM_OK;
}
static tmem_status rd_u64(cursor *c, const char *what, uint64_t *v) {
    tmem_status st = need(c, 8, what);
    if (st) return st;
    *v = le64(c->base + c->off);
    c->off += 8;
    return TMEM_OK;
}
/* A length-prefixed string of 1..max bytes (max 0 = any length, empty ok). */
static tmem_status rd_str(cursor *c, const char *what, uint64_t max, uint64_t *off, uint64_t *len) {
    uint64_t at = c->off;
    tmem_status st = rd_u64(c, what, len);
    if (st) return st;
    if (max && (*len == 0 || *len > max))
        return fail(c, TMEM_E_CORRUPT, at, "%s length %llu outside 1..%llu", what,
                    (unsigned long long)*len, (unsigned long long)max);
    if ((st = need(c, *len, what))) return st;
    *off = c->off;
    c->off += *len;
    return TMEM_OK;
}

/* Validate and skip one value of `type` (arrays recurse up to MAX_NEST). */
static tmem_status skip_value(cursor *c, uint32_t type, uint32_t depth, const char *what) {
    uint64_t at = c->off;
    if (type >= TMEM_GGUF_VTYPE_COUNT)
        return fail(c, TMEM_E_PARSE, at, "%s: unknown value type %u", what, type);
    if (type == TMEM_GGUF_STRING) {
        uint64_t o, l;
        return rd_str(c, what, 0, &o, &l);
    }
    if (type == TMEM_GGUF_ARRAY) {
        if (depth >= TMEM__GGUF_MAX_NEST)
            return fail(c, TMEM_E_PARSE, at, "%s: arrays nested deeper than %u", what, TMEM__GGUF_MAX_NEST);
        uint32_t et;
        uint64_t count;
        tmem_status st = rd_u32(c, what, &et);
        if (!st) st = rd_u64(c, what, &count);
        if (st) return st;
        if (et >= TMEM_GGUF_VTYPE_COUNT)
            return fail(c, TMEM_E_PARSE, at, "%s: unknown array element type %u", what, et);
        /* the count must fit in what is left even at the smallest encoding */
        if (count > (c->size - c->off) / min_size(et))
            return fail(c, TMEM_E_CORRUPT, at + 4, "%s: array of %llu %s cannot fit in the %llu bytes left",
                        what, (unsigned long long)count, vtype_name(et), (unsigned long long)(c->size - c->off));
        uint64_t fs = fixed_size(et);
        if (fs && et != TMEM_GGUF_BOOL) {
            c->off += count * fs; /* count * fs <= bytes left, checked above */
            return TMEM_OK;
        }
        for (uint64_t i = 0; i < count; i++)
            if ((st = skip_value(c, et, depth + 1, what))) return st;
        return TMEM_OK;
    }
    uint64_t fs = fixed_size(type);
    tmem_status st = need(c, fs, what);
    if (st) return st;
    if (type == TMEM_GGUF_BOOL && c->base[c->off] > 1)
        return fail(c, TMEM_E_PARSE, c->off, "%s: bool byte %u is not 0 or 1", what, c->base[c->off]);
    c->off += fs;
    return TMEM_OK;
}

static int bytes_cmp(const uint8_t *a, uint64_t al, const uint8_t *b, uint64_t bl) {
    int r = memcmp(a, b, al < bl ? al : bl);
    if (r) return r;
    return al < bl ? -1 : al > bl;
}
static int kv_cmp(const void *ctx, uint32_t a, uint32_t b) {
    const tmem_gguf *g = ctx;
    return bytes_cmp(g->base + g->kv[a].key_off, g->kv[a].key_len, g->base + g->kv[b].key_off, g->kv[b].key_len);
}
static int tensor_name_cmp(const void *ctx, uint32_t a, uint32_t b) {
    const tmem_gguf *g = ctx;
    const tmem__gguf_tensor *x = &g->tensors[a], *y = &g->tensors[b];
    return bytes_cmp(g->base + x->name_off, x->name_len, g->base + y->name_off, y->name_len);
}
static int tensor_off_cmp(const void *ctx, uint32_t a, uint32_t b) {
    const tmem_gguf *g = ctx;
    uint64_t x = g->tensors[a].offset, y = g->tensors[b].offset;
    return x < y ? -1 : x > y;
}

/* ---- parsing ---- */

static tmem_status alloc_array(tmem_gguf *g, uint64_t n, size_t elem, void **out) {
    *out = NULL;
    if (n == 0) return TMEM_OK;
    if (n > SIZE_MAX / elem) return tmem__err(TMEM_E_OVERFLOW);
    *out = tmem__model_alloc(g->ctx, (size_t)(n * elem));
    if (!*out) return tmem__err(TMEM_E_NO_MEMORY);
    memset(*out, 0, (size_t)(n * elem));
    return TMEM_OK;
}

/* Make room for item `i` of an array whose header announced `total` items:
 * capacity doubles, so metadata grows with what was actually parsed, not
 * with what a (possibly hostile) count claims. */
static tmem_status grow_for(tmem_gguf *g, void **arr, uint64_t *cap, uint64_t i, uint64_t total, size_t elem) {
    if (i < *cap) return TMEM_OK;
    uint64_t nc = *cap ? *cap * 2 : 16;
    if (nc > total) nc = total;
    void *p;
    tmem_status st = alloc_array(g, nc, elem, &p);
    if (st) return st;
    if (*cap) memcpy(p, *arr, (size_t)(*cap * elem));
    tmem__model_free(g->ctx, *arr, (size_t)(*cap * elem));
    *arr = p;
    *cap = nc;
    return TMEM_OK;
}

static bool key_is(const tmem_gguf *g, const tmem__gguf_kv *kv, const char *s) {
    size_t n = strlen(s);
    return kv->key_len == n && !memcmp(g->base + kv->key_off, s, n);
}

static tmem_status parse_header(tmem_gguf *g, cursor *c) {
    uint32_t magic, version;
    tmem_status st = rd_u32(c, "magic", &magic);
    if (st) return st;
    if (magic != TMEM__GGUF_MAGIC)
        return fail(c, TMEM_E_PARSE, 0, "bad magic %02x %02x %02x %02x: not a GGUF file", c->base[0], c->base[1],
                    c->base[2], c->base[3]);
    if ((st = rd_u32(c, "version", &version))) return st;
    if (version == 1)
        return fail(c, TMEM_E_UNSUPPORTED, 4, "GGUF version 1 (32-bit counts) is not supported");
    if ((version & 0xFFFFu) == 0 && (version >> 16))
        return fail(c, TMEM_E_UNSUPPORTED, 4, "big-endian GGUF (version 0x%08x) is not supported", version);
    if (version != 2 && version != 3)
        return fail(c, TMEM_E_UNSUPPORTED, 4, "unknown GGUF version %u (2 and 3 are supported)", version);
    g->version = version;
    if ((st = rd_u64(c, "tensor count", &g->n_tensors))) return st;
    if ((st = rd_u64(c, "metadata count", &g->n_kv))) return st;
    /* Smallest tensor info: 8 + 1 name + 4 + 8 one dim + 4 + 8 = 33 bytes;
     * smallest pair: 8 + 1 key + 4 + 1 value = 14 bytes. */
    uint64_t left = c->size - c->off;
    if (g->n_tensors > left / 33)
        return fail(c, TMEM_E_CORRUPT, 8, "tensor count %llu cannot fit in the %llu bytes left",
                    (unsigned long long)g->n_tensors, (unsigned long long)left);
    if (g->n_kv > (left - g->n_tensors * 33) / 14)
        return fail(c, TMEM_E_CORRUPT, 16, "metadata count %llu cannot fit in the %llu bytes left",
                    (unsigned long long)g->n_kv, (unsigned long long)left);
    if (g->n_tensors > TMEM__GGUF_MAX_ITEMS || g->n_kv > TMEM__GGUF_MAX_ITEMS)
        return fail(c, TMEM_E_CORRUPT, g->n_tensors > TMEM__GGUF_MAX_ITEMS ? 8 : 16,
                    "%s count %llu is over the limit of %u", g->n_tensors > TMEM__GGUF_MAX_ITEMS ? "tensor" : "metadata",
                    (unsigned long long)(g->n_tensors > TMEM__GGUF_MAX_ITEMS ? g->n_tensors : g->n_kv),
                    TMEM__GGUF_MAX_ITEMS);
    return TMEM_OK;
}

static tmem_status parse_kv(tmem_gguf *g, cursor *c) {
    tmem_status st;
    g->alignment = TMEM__GGUF_DEFAULT_ALIGN;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        if ((st = grow_for(g, (void **)&g->kv, &g->kv_cap, i, g->n_kv, sizeof *g->kv))) return st;
        tmem__gguf_kv *kv = &g->kv[i];
        if ((st = rd_str(c, "metadata key", TMEM__GGUF_MAX_KEY, &kv->key_off, &kv->key_len))) return st;
        uint64_t type_at = c->off;
        if ((st = rd_u32(c, "metadata value type", &kv->type))) return st;
        kv->value_off = c->off;
        if (kv->type == TMEM_GGUF_ARRAY && c->size - c->off >= 12) {
            kv->elem_type = le32(c->base + c->off);
            kv->count = le64(c->base + c->off + 4);
        }
        char what[96];
        snprintf(what, sizeof what, "metadata %llu '%.*s'", (unsigned long long)i,
                 (int)(kv->key_len > 48 ? 48 : kv->key_len), (const char *)c->base + kv->key_off);
        if ((st = skip_value(c, kv->type, 0, what))) return st;
        kv->value_end = c->off;
        if (key_is(g, kv, "general.alignment")) {
            if (kv->type != TMEM_GGUF_UINT32)
                return fail(c, TMEM_E_CORRUPT, type_at, "general.alignment has type %s, must be UINT32",
                            vtype_name(kv->type));
            uint32_t a = le32(c->base + kv->value_off);
            if (!tmem__is_pow2(a))
                return fail(c, TMEM_E_CORRUPT, kv->value_off, "general.alignment %u is not a power of two", a);
            g->alignment = a;
        }
    }
    return TMEM_OK;
}

static tmem_status parse_tensor_infos(tmem_gguf *g, cursor *c) {
    tmem_status st;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if ((st = grow_for(g, (void **)&g->tensors, &g->tensor_cap, i, g->n_tensors, sizeof *g->tensors))) return st;
        tmem__gguf_tensor *t = &g->tensors[i];
        if ((st = rd_str(c, "tensor name", TMEM__GGUF_MAX_NAME, &t->name_off, &t->name_len))) return st;
        int nl = (int)t->name_len;
        const char *nm = (const char *)c->base + t->name_off;
        uint64_t dims_at = c->off;
        if ((st = rd_u32(c, "tensor rank", &t->n_dims))) return st;
        if (t->n_dims < 1 || t->n_dims > TMEM__GGUF_MAX_DIMS)
            return fail(c, TMEM_E_CORRUPT, dims_at, "tensor %llu '%.*s': rank %u outside 1..4",
                        (unsigned long long)i, nl, nm, t->n_dims);
        uint64_t n = 1;
        for (uint32_t d = 0; d < TMEM__GGUF_MAX_DIMS; d++) t->dims[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t dat = c->off;
            if ((st = rd_u64(c, "tensor dimension", &t->dims[d]))) return st;
            if (t->dims[d] == 0 || t->dims[d] > INT64_MAX)
                return fail(c, TMEM_E_CORRUPT, dat, "tensor %llu '%.*s': dimension %u is %llu",
                            (unsigned long long)i, nl, nm, d, (unsigned long long)t->dims[d]);
            if (tmem__mul_overflow(n, t->dims[d], &n) || n > INT64_MAX)
                return fail(c, TMEM_E_CORRUPT, dat, "tensor %llu '%.*s': element count overflows",
                            (unsigned long long)i, nl, nm);
        }
        t->n_elements = n;
        uint64_t type_at = c->off;
        if ((st = rd_u32(c, "tensor type", &t->type))) return st;
        tmem_ggml_type_info ti;
        if (tmem_ggml_type_get_info(t->type, &ti) != TMEM_OK)
            return fail(c, TMEM_E_UNSUPPORTED, type_at, "tensor %llu '%.*s': unknown ggml type %u",
                        (unsigned long long)i, nl, nm, t->type);
        if (t->dims[0] % ti.block_size)
            return fail(c, TMEM_E_CORRUPT, dims_at, "tensor %llu '%.*s': first dimension %llu is not a multiple of "
                        "the %s block size %u", (unsigned long long)i, nl, nm, (unsigned long long)t->dims[0],
                        ti.name, ti.block_size);
        if (tmem_ggml_row_size(t->type, n, &t->size) != TMEM_OK)
            return fail(c, TMEM_E_CORRUPT, dims_at, "tensor %llu '%.*s': byte size overflows",
                        (unsigned long long)i, nl, nm);
        if ((st = rd_u64(c, "tensor offset", &t->offset))) return st;
    }
    return TMEM_OK;
}

/* Tensor data: aligned, inside the file, and no two overlapping. */
static tmem_status check_tensor_data(tmem_gguf *g, cursor *c, uint64_t infos_end) {
    if (!tmem__align_up(infos_end, g->alignment, &g->data_offset))
        return fail(c, TMEM_E_CORRUPT, infos_end, "data section offset overflows");
    g->tensor_bytes = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        tmem__gguf_tensor *t = &g->tensors[i];
        int nl = (int)t->name_len;
        const char *nm = (const char *)g->base + t->name_off;
        uint64_t off_at = t->name_off + t->name_len + 4 + 8 * t->n_dims + 4;
        if (t->offset % g->alignment)
            return fail(c, TMEM_E_CORRUPT, off_at, "tensor %llu '%.*s': data offset %llu is not a multiple of "
                        "the alignment %llu", (unsigned long long)i, nl, nm, (unsigned long long)t->offset,
                        (unsigned long long)g->alignment);
        uint64_t start, end;
        if (tmem__add_overflow(g->data_offset, t->offset, &start) || tmem__add_overflow(start, t->size, &end) ||
            end > g->size)
            return fail(c, TMEM_E_CORRUPT, off_at, "tensor %llu '%.*s': data [%llu, +%llu) past end of file "
                        "(%llu bytes)", (unsigned long long)i, nl, nm, (unsigned long long)g->data_offset +
                        t->offset, (unsigned long long)t->size, (unsigned long long)g->size);
        g->tensor_bytes += t->size; /* each <= file size, sum of disjoint ranges <= file size */
    }
    if (g->n_tensors < 2) return TMEM_OK;
    uint32_t *by_off;
    tmem_status st = alloc_array(g, g->n_tensors, sizeof *by_off, (void **)&by_off);
    if (st) return st;
    for (uint64_t i = 0; i < g->n_tensors; i++) by_off[i] = (uint32_t)i;
    tmem__index_sort(by_off, g->n_tensors, tensor_off_cmp, g);
    for (uint64_t i = 0; i + 1 < g->n_tensors && !st; i++) {
        const tmem__gguf_tensor *a = &g->tensors[by_off[i]], *b = &g->tensors[by_off[i + 1]];
        if (a->offset + a->size > b->offset)
            st = fail(c, TMEM_E_CORRUPT, g->data_offset + b->offset, "tensors %u '%.*s' and %u '%.*s' overlap "
                      "at data offset %llu", by_off[i], (int)a->name_len, (const char *)g->base + a->name_off,
                      by_off[i + 1], (int)b->name_len, (const char *)g->base + b->name_off,
                      (unsigned long long)b->offset);
    }
    tmem__model_free(g->ctx, by_off, g->n_tensors * sizeof *by_off);
    return st;
}

/* Sorted indices for O(log n) lookups; adjacent equals are duplicates. */
static tmem_status build_indexes(tmem_gguf *g, cursor *c) {
    tmem_status st = alloc_array(g, g->n_kv, sizeof *g->kv_sorted, (void **)&g->kv_sorted);
    if (!st) st = alloc_array(g, g->n_tensors, sizeof *g->tensor_sorted, (void **)&g->tensor_sorted);
    if (st) return st;
    for (uint64_t i = 0; i < g->n_kv; i++) g->kv_sorted[i] = (uint32_t)i;
    for (uint64_t i = 0; i < g->n_tensors; i++) g->tensor_sorted[i] = (uint32_t)i;
    tmem__index_sort(g->kv_sorted, g->n_kv, kv_cmp, g);
    tmem__index_sort(g->tensor_sorted, g->n_tensors, tensor_name_cmp, g);
    for (uint64_t i = 0; i + 1 < g->n_kv; i++)
        if (!kv_cmp(g, g->kv_sorted[i], g->kv_sorted[i + 1])) {
            const tmem__gguf_kv *kv = &g->kv[g->kv_sorted[i + 1]];
            return fail(c, TMEM_E_CORRUPT, kv->key_off - 8, "duplicate metadata key '%.*s'",
                        (int)(kv->key_len > 64 ? 64 : kv->key_len), (const char *)g->base + kv->key_off);
        }
    for (uint64_t i = 0; i + 1 < g->n_tensors; i++)
        if (!tensor_name_cmp(g, g->tensor_sorted[i], g->tensor_sorted[i + 1])) {
            const tmem__gguf_tensor *t = &g->tensors[g->tensor_sorted[i + 1]];
            return fail(c, TMEM_E_CORRUPT, t->name_off - 8, "duplicate tensor name '%.*s'", (int)t->name_len,
                        (const char *)g->base + t->name_off);
        }
    return TMEM_OK;
}

void tmem__gguf_free(tmem_gguf *g) {
    if (!g) return;
    tmem_context *ctx = g->ctx;
    tmem__model_free(ctx, g->kv, g->kv_cap * sizeof *g->kv);
    tmem__model_free(ctx, g->tensors, g->tensor_cap * sizeof *g->tensors);
    tmem__model_free(ctx, g->kv_sorted, g->n_kv * sizeof *g->kv_sorted);
    tmem__model_free(ctx, g->tensor_sorted, g->n_tensors * sizeof *g->tensor_sorted);
    tmem__model_free(ctx, g, sizeof *g);
}

tmem_status tmem__gguf_parse(tmem_context *ctx, const uint8_t *base, uint64_t size, tmem_gguf **out,
                             tmem_gguf_error *err) {
    *out = NULL;
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    tmem_gguf *g = tmem__model_alloc(ctx, sizeof *g);
    if (!g) return tmem__err(TMEM_E_NO_MEMORY);
    memset(g, 0, sizeof *g);
    g->ctx = ctx;
    g->base = base;
    g->size = size;
    cursor c = {base, size, 0, err};
    tmem_status st = parse_header(g, &c);
    if (!st) st = parse_kv(g, &c);
    if (!st) st = parse_tensor_infos(g, &c);
    if (!st) st = check_tensor_data(g, &c, c.off);
    if (!st) st = build_indexes(g, &c);
    if (st) {
        if (st == TMEM_E_NO_MEMORY || st == TMEM_E_OVERFLOW) {
            if (err) snprintf(err->message, sizeof err->message, "out of memory for the metadata tables");
        }
        /* counts may be partly filled: free by what was allocated */
        tmem__gguf_free(g);
        return st;
    }
    *out = g;
    return TMEM_OK;
}

void tmem_gguf_close(tmem_gguf *g) {
    if (!g) return;
    tmem__model_file_release(&g->file, g);
    tmem__gguf_free(g);
}

tmem_status tmem_gguf_open_memory(tmem_context *ctx, const void *data, size_t size, tmem_gguf **out,
                                  tmem_gguf_error *err) {
    if (out) *out = NULL;
    if (!out || (!data && size)) return tmem__err(TMEM_E_INVALID_ARG);
    return tmem__gguf_parse(ctx, data ? data : (const void *)"", size, out, err);
}

/* ---- queries ---- */

uint64_t tmem__gguf_elem_size(const tmem_gguf *g, uint32_t type, uint64_t off) {
    uint64_t fs = fixed_size(type);
    if (fs) return fs;
    if (type == TMEM_GGUF_STRING) return 8 + le64(g->base + off);
    /* nested array: walk it (validated at parse time) */
    uint32_t et = le32(g->base + off);
    uint64_t count = le64(g->base + off + 4), n = 12;
    if (fixed_size(et)) return n + count * fixed_size(et);
    for (uint64_t i = 0; i < count; i++) n += tmem__gguf_elem_size(g, et, off + n);
    return n;
}

void tmem__gguf_decode(const tmem_gguf *g, uint32_t type, uint64_t off, tmem_gguf_value *out) {
    const uint8_t *p = g->base + off;
    memset(out, 0, sizeof *out);
    out->type = (tmem_gguf_vtype)type;
    out->offset = off;
    switch (type) {
    case TMEM_GGUF_UINT8: out->v.u = p[0]; break;
    case TMEM_GGUF_INT8: out->v.i = (int8_t)p[0]; break;
    case TMEM_GGUF_UINT16: out->v.u = (uint16_t)(p[0] | p[1] << 8); break;
    case TMEM_GGUF_INT16: out->v.i = (int16_t)(uint16_t)(p[0] | p[1] << 8); break;
    case TMEM_GGUF_UINT32: out->v.u = le32(p); break;
    case TMEM_GGUF_INT32: out->v.i = (int32_t)le32(p); break;
    case TMEM_GGUF_UINT64: out->v.u = le64(p); break;
    case TMEM_GGUF_INT64: out->v.i = (int64_t)le64(p); break;
    case TMEM_GGUF_BOOL: out->v.b = p[0] != 0; break;
    case TMEM_GGUF_FLOAT32: {
        uint32_t u = le32(p);
        float f;
        memcpy(&f, &u, sizeof f);
        out->v.f = f;
        break;
    }
    case TMEM_GGUF_FLOAT64: {
        uint64_t u = le64(p);
        memcpy(&out->v.f, &u, sizeof out->v.f);
        break;
    }
    case TMEM_GGUF_STRING:
        out->v.s.len = le64(p);
        out->v.s.data = (const char *)p + 8;
        break;
    case TMEM_GGUF_ARRAY:
        out->v.array.type = (tmem_gguf_vtype)le32(p);
        out->v.array.count = le64(p + 4);
        break;
    default: break;
    }
}

tmem_status tmem_gguf_get_info(const tmem_gguf *g, tmem_gguf_info *out) {
    if (!g || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    out->version = g->version;
    out->kv_count = g->n_kv;
    out->tensor_count = g->n_tensors;
    out->alignment = g->alignment;
    out->data_offset = g->data_offset;
    out->file_size = g->size;
    out->tensor_bytes = g->tensor_bytes;
    out->mapped_bytes = g->file.map ? g->file.map_size : 0;
    return TMEM_OK;
}

tmem_status tmem_gguf_kv_at(const tmem_gguf *g, uint64_t i, tmem_gguf_str *key, tmem_gguf_value *value) {
    if (key) memset(key, 0, sizeof *key);
    if (value) memset(value, 0, sizeof *value);
    if (!g || !value) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= g->n_kv) return tmem__err(TMEM_E_NOT_FOUND);
    const tmem__gguf_kv *kv = &g->kv[i];
    if (key) {
        key->data = (const char *)g->base + kv->key_off;
        key->len = kv->key_len;
    }
    tmem__gguf_decode(g, kv->type, kv->value_off, value);
    return TMEM_OK;
}

static bool find_index(const tmem_gguf *g, const char *key, uint64_t *index) {
    uint64_t kl = strlen(key), lo = 0, hi = g->n_kv;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const tmem__gguf_kv *kv = &g->kv[g->kv_sorted[mid]];
        int r = bytes_cmp(g->base + kv->key_off, kv->key_len, (const uint8_t *)key, kl);
        if (r == 0) {
            *index = g->kv_sorted[mid];
            return true;
        }
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

tmem_status tmem_gguf_find(const tmem_gguf *g, const char *key, uint64_t *index, tmem_gguf_value *value) {
    if (index) *index = 0;
    if (value) memset(value, 0, sizeof *value);
    if (!g || !key) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t i;
    if (!find_index(g, key, &i)) return TMEM_E_NOT_FOUND; /* an answer, not an error */
    if (index) *index = i;
    if (value) tmem__gguf_decode(g, g->kv[i].type, g->kv[i].value_off, value);
    return TMEM_OK;
}

static bool is_unsigned(tmem_gguf_vtype t) {
    return t == TMEM_GGUF_UINT8 || t == TMEM_GGUF_UINT16 || t == TMEM_GGUF_UINT32 || t == TMEM_GGUF_UINT64;
}
static bool is_signed(tmem_gguf_vtype t) {
    return t == TMEM_GGUF_INT8 || t == TMEM_GGUF_INT16 || t == TMEM_GGUF_INT32 || t == TMEM_GGUF_INT64;
}

tmem_status tmem_gguf_get_u64(const tmem_gguf *g, const char *key, uint64_t *out) {
    if (out) *out = 0;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_gguf_value v;
    tmem_status st = tmem_gguf_find(g, key, NULL, &v);
    if (st) return st;
    if (is_unsigned(v.type)) *out = v.v.u;
    else if (is_signed(v.type)) {
        if (v.v.i < 0) return tmem__err(TMEM_E_OVERFLOW);
        *out = (uint64_t)v.v.i;
    } else return tmem__err(TMEM_E_PARSE);
    return TMEM_OK;
}

tmem_status tmem_gguf_get_i64(const tmem_gguf *g, const char *key, int64_t *out) {
    if (out) *out = 0;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_gguf_value v;
    tmem_status st = tmem_gguf_find(g, key, NULL, &v);
    if (st) return st;
    if (is_signed(v.type)) *out = v.v.i;
    else if (is_unsigned(v.type)) {
        if (v.v.u > INT64_MAX) return tmem__err(TMEM_E_OVERFLOW);
        *out = (int64_t)v.v.u;
    } else return tmem__err(TMEM_E_PARSE);
    return TMEM_OK;
}

tmem_status tmem_gguf_get_f64(const tmem_gguf *g, const char *key, double *out) {
    if (out) *out = 0;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_gguf_value v;
    tmem_status st = tmem_gguf_find(g, key, NULL, &v);
    if (st) return st;
    if (v.type == TMEM_GGUF_FLOAT32 || v.type == TMEM_GGUF_FLOAT64) *out = v.v.f;
    else if (is_unsigned(v.type)) *out = (double)v.v.u;
    else if (is_signed(v.type)) *out = (double)v.v.i;
    else return tmem__err(TMEM_E_PARSE);
    return TMEM_OK;
}

tmem_status tmem_gguf_get_bool(const tmem_gguf *g, const char *key, bool *out) {
    if (out) *out = false;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_gguf_value v;
    tmem_status st = tmem_gguf_find(g, key, NULL, &v);
    if (st) return st;
    if (v.type != TMEM_GGUF_BOOL) return tmem__err(TMEM_E_PARSE);
    *out = v.v.b;
    return TMEM_OK;
}

tmem_status tmem_gguf_get_str(const tmem_gguf *g, const char *key, tmem_gguf_str *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_gguf_value v;
    tmem_status st = tmem_gguf_find(g, key, NULL, &v);
    if (st) return st;
    if (v.type != TMEM_GGUF_STRING) return tmem__err(TMEM_E_PARSE);
    *out = v.v.s;
    return TMEM_OK;
}

tmem_status tmem_gguf_array_get(const tmem_gguf *g, uint64_t kvi, uint64_t i, tmem_gguf_value *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!g || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (kvi >= g->n_kv) return tmem__err(TMEM_E_NOT_FOUND);
    const tmem__gguf_kv *kv = &g->kv[kvi];
    if (kv->type != TMEM_GGUF_ARRAY) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= kv->count) return tmem__err(TMEM_E_NOT_FOUND);
    uint64_t off = kv->value_off + 12, fs = fixed_size(kv->elem_type);
    if (fs) off += i * fs;
    else
        for (uint64_t k = 0; k < i; k++) off += tmem__gguf_elem_size(g, kv->elem_type, off);
    tmem__gguf_decode(g, kv->elem_type, off, out);
    return TMEM_OK;
}

tmem_status tmem_gguf_array_next(const tmem_gguf *g, uint64_t kvi, tmem_gguf_array_iter *it, tmem_gguf_value *out) {
    if (!g || !it || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (kvi >= g->n_kv) return tmem__err(TMEM_E_NOT_FOUND);
    const tmem__gguf_kv *kv = &g->kv[kvi];
    if (kv->type != TMEM_GGUF_ARRAY) return tmem__err(TMEM_E_INVALID_ARG);
    if (it->index == 0) {
        it->kv = kvi;
        it->offset = kv->value_off + 12;
    } else if (it->kv != kvi || it->offset < kv->value_off + 12 || it->offset > kv->value_end ||
               it->index > kv->count ||
               (fixed_size(kv->elem_type) && it->offset != kv->value_off + 12 + it->index * fixed_size(kv->elem_type))) {
        return tmem__err(TMEM_E_INVALID_ARG); /* an iterator of another array, or one not from array_next */
    }
    if (it->index >= kv->count) return TMEM_E_NOT_FOUND;
    tmem__gguf_decode(g, kv->elem_type, it->offset, out);
    it->offset += tmem__gguf_elem_size(g, kv->elem_type, it->offset);
    it->index++;
    return TMEM_OK;
}

static void tensor_view(const tmem_gguf *g, uint64_t i, tmem_gguf_tensor *out) {
    const tmem__gguf_tensor *t = &g->tensors[i];
    out->name.data = (const char *)g->base + t->name_off;
    out->name.len = t->name_len;
    out->type = t->type;
    out->n_dims = t->n_dims;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->n_elements = t->n_elements;
    out->offset = t->offset;
    out->size = t->size;
    out->data = g->base + g->data_offset + t->offset;
}

tmem_status tmem_gguf_tensor_at(const tmem_gguf *g, uint64_t i, tmem_gguf_tensor *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!g || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= g->n_tensors) return tmem__err(TMEM_E_NOT_FOUND);
    tensor_view(g, i, out);
    return TMEM_OK;
}

tmem_status tmem_gguf_tensor_find(const tmem_gguf *g, const char *name, tmem_gguf_tensor *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!g || !name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t nl = strlen(name), lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const tmem__gguf_tensor *t = &g->tensors[g->tensor_sorted[mid]];
        int r = bytes_cmp(g->base + t->name_off, t->name_len, (const uint8_t *)name, nl);
        if (r == 0) {
            tensor_view(g, g->tensor_sorted[mid], out);
            return TMEM_OK;
        }
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return TMEM_E_NOT_FOUND;
}
