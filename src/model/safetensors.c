/*
 * Safetensors reader (safetensors.h): the 8-byte header length, the strict
 * JSON header (json.c), every entry validated against the file, then the
 * tensors sorted by offset must tile the data section exactly. The parsed
 * JSON is dropped once the tables are built: names and metadata are decoded
 * into one string pool, tensors into a table sorted by offset, with a
 * by-name index for lookups.
 */
#include "model_internal.h"
#include "typedmem/json.h"
#include "typedmem/safetensors.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct st_tensor {
    uint64_t name_off;           /* in the pool */
    uint64_t name_len;
    uint64_t shape[TMEM_SAFETENSORS_MAX_DIMS];
    uint64_t n_elements, begin, size;
    uint64_t json_off;           /* where its entry is, for errors */
    uint32_t n_dims, dtype;
} st_tensor;

struct tmem_safetensors {
    tmem_context *ctx;
    const uint8_t *base;
    uint64_t size, header_size, data_offset, data_size, tensor_bytes;
    uint64_t n_tensors, n_meta;
    st_tensor *tensors;          /* sorted by offset */
    uint32_t *by_name;
    uint64_t *meta;              /* n_meta x {key_off, value_off} into the pool */
    char *pool;
    size_t pool_size, pool_used;
    tmem__model_file file;       /* zero for memory images */
};

static const struct { const char *name; uint32_t size; } dtypes[TMEM_ST_DTYPE_COUNT] = {
    {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2},
    {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8},
};

const char *tmem_st_dtype_name(tmem_st_dtype d) { return (unsigned)d < TMEM_ST_DTYPE_COUNT ? dtypes[d].name : NULL; }
uint32_t tmem_st_dtype_size(tmem_st_dtype d) { return (unsigned)d < TMEM_ST_DTYPE_COUNT ? dtypes[d].size : 0; }

typedef struct ctx_t {
    tmem_safetensors *st;
    const tmem_json *j;
    tmem_safetensors_error *err;
} ctx_t;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static tmem_status fail(tmem_safetensors_error *err, tmem_status st, uint64_t at, const char *fmt, ...) {
    if (err) {
        err->offset = at;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return tmem__err(st);
}

/* File offset of a JSON value. */
static uint64_t at(const ctx_t *c, tmem_json_ref v) { return 8 + tmem_json_offset(c->j, v); }

/* Decode a JSON string into the pool; *off gets its start. */
static tmem_status pool_put(tmem_safetensors *st, const tmem_json *j, tmem_json_ref v, uint64_t *off, uint64_t *len) {
    size_t n = 0;
    tmem_status s = tmem_json_string(j, v, st->pool + st->pool_used, st->pool_size - st->pool_used, &n);
    if (s) return s; /* sized by the first pass: cannot be short */
    *off = st->pool_used;
    *len = n;
    st->pool_used += n + 1;
    return TMEM_OK;
}

static tmem_status read_u64(const ctx_t *c, tmem_json_ref v, const char *name, const char *field, uint64_t *out) {
    int64_t x;
    tmem_status s = tmem_json_int(c->j, v, &x);
    if (s == TMEM_E_PARSE)
        return fail(c->err, TMEM_E_PARSE, at(c, v), "tensor '%.64s': %s must be integers", name, field);
    if (s || x < 0)
        return fail(c->err, TMEM_E_CORRUPT, at(c, v), "tensor '%.64s': %s value out of range", name, field);
    *out = (uint64_t)x;
    return TMEM_OK;
}

static tmem_status parse_entry(ctx_t *c, tmem_json_ref key, tmem_json_ref obj, st_tensor *t) {
    tmem_safetensors *st = c->st;
    const tmem_json *j = c->j;
    tmem_status s = pool_put(st, j, key, &t->name_off, &t->name_len);
    if (s) return s;
    const char *name = st->pool + t->name_off;
    t->json_off = at(c, key);
    if (t->name_len == 0) return fail(c->err, TMEM_E_CORRUPT, t->json_off, "tensor with an empty name");
    if (strlen(name) != t->name_len)
        return fail(c->err, TMEM_E_CORRUPT, t->json_off, "tensor name '%.64s' contains a NUL byte", name);
    if (tmem_json_type_of(j, obj) != TMEM_JSON_OBJECT)
        return fail(c->err, TMEM_E_PARSE, at(c, obj), "tensor '%.64s': entry is not an object", name);
    tmem_json_ref k;
    for (s = tmem_json_first(j, obj, &k); s == TMEM_OK; s = tmem_json_next(j, k, &k))
        if (!tmem_json_string_eq(j, k, "dtype") && !tmem_json_string_eq(j, k, "shape") &&
            !tmem_json_string_eq(j, k, "data_offsets"))
            return fail(c->err, TMEM_E_CORRUPT, at(c, k), "tensor '%.64s': unknown field", name);
    tmem_json_ref vd, vs, vo;
    if (tmem_json_get(j, obj, "dtype", &vd) || tmem_json_get(j, obj, "shape", &vs) ||
        tmem_json_get(j, obj, "data_offsets", &vo))
        return fail(c->err, TMEM_E_CORRUPT, at(c, obj), "tensor '%.64s': needs dtype, shape and data_offsets", name);
    /* dtype */
    if (tmem_json_type_of(j, vd) != TMEM_JSON_STRING)
        return fail(c->err, TMEM_E_PARSE, at(c, vd), "tensor '%.64s': dtype is not a string", name);
    t->dtype = TMEM_ST_DTYPE_COUNT;
    for (uint32_t d = 0; d < TMEM_ST_DTYPE_COUNT; d++)
        if (tmem_json_string_eq(j, vd, dtypes[d].name)) t->dtype = d;
    if (t->dtype == TMEM_ST_DTYPE_COUNT)
        return fail(c->err, TMEM_E_UNSUPPORTED, at(c, vd), "tensor '%.64s': unknown dtype", name);
    /* shape */
    if (tmem_json_type_of(j, vs) != TMEM_JSON_ARRAY)
        return fail(c->err, TMEM_E_PARSE, at(c, vs), "tensor '%.64s': shape is not an array", name);
    t->n_dims = tmem_json_count(j, vs);
    if (t->n_dims > TMEM_SAFETENSORS_MAX_DIMS)
        return fail(c->err, TMEM_E_UNSUPPORTED, at(c, vs), "tensor '%.64s': %u dimensions (at most %u)", name,
                    t->n_dims, TMEM_SAFETENSORS_MAX_DIMS);
    uint64_t n = 1;
    tmem_json_ref e;
    uint32_t d = 0;
    for (s = tmem_json_first(j, vs, &e); s == TMEM_OK; s = tmem_json_next(j, e, &e), d++) {
        tmem_status r = read_u64(c, e, name, "shape", &t->shape[d]);
        if (r) return r;
        if (tmem__mul_overflow(n, t->shape[d], &n))
            return fail(c->err, TMEM_E_CORRUPT, at(c, e), "tensor '%.64s': element count overflows", name);
    }
    for (; d < TMEM_SAFETENSORS_MAX_DIMS; d++) t->shape[d] = 1;
    t->n_elements = n;
    uint64_t bytes;
    if (tmem__mul_overflow(n, dtypes[t->dtype].size, &bytes))
        return fail(c->err, TMEM_E_CORRUPT, at(c, vs), "tensor '%.64s': byte size overflows", name);
    /* data_offsets */
    if (tmem_json_type_of(j, vo) != TMEM_JSON_ARRAY || tmem_json_count(j, vo) != 2)
        return fail(c->err, TMEM_E_PARSE, at(c, vo), "tensor '%.64s': data_offsets is not [begin, end]", name);
    tmem_json_ref b0, b1;
    uint64_t begin, end;
    if (tmem_json_first(j, vo, &b0) || tmem_json_next(j, b0, &b1)) return tmem__err(TMEM_E_PARSE);
    if ((s = read_u64(c, b0, name, "data_offsets", &begin)) || (s = read_u64(c, b1, name, "data_offsets", &end)))
        return s;
    if (begin > end || end > st->data_size)
        return fail(c->err, TMEM_E_CORRUPT, at(c, vo), "tensor '%.64s': data_offsets [%llu, %llu) outside the %llu "
                    "data bytes", name, (unsigned long long)begin, (unsigned long long)end,
                    (unsigned long long)st->data_size);
    if (end - begin != bytes)
        return fail(c->err, TMEM_E_CORRUPT, at(c, vo), "tensor '%.64s': data_offsets hold %llu bytes, %s x shape "
                    "needs %llu", name, (unsigned long long)(end - begin), dtypes[t->dtype].name,
                    (unsigned long long)bytes);
    t->begin = begin;
    t->size = bytes;
    return TMEM_OK;
}

static tmem_status parse_metadata(ctx_t *c, tmem_json_ref obj) {
    tmem_safetensors *st = c->st;
    const tmem_json *j = c->j;
    if (tmem_json_type_of(j, obj) != TMEM_JSON_OBJECT)
        return fail(c->err, TMEM_E_PARSE, at(c, obj), "__metadata__ is not an object");
    st->n_meta = tmem_json_count(j, obj);
    if (!st->n_meta) return TMEM_OK;
    st->meta = tmem__model_alloc(st->ctx, (size_t)st->n_meta * 2 * sizeof(uint64_t));
    if (!st->meta) return tmem__err(TMEM_E_NO_MEMORY);
    tmem_json_ref k, v;
    uint64_t i = 0, len;
    tmem_status s;
    /* text order here; the index is by key below (keys are unique) */
    for (s = tmem_json_first(j, obj, &k); s == TMEM_OK; s = tmem_json_next(j, k, &k), i++) {
        if (tmem_json_member_value(j, k, &v)) return tmem__err(TMEM_E_PARSE);
        if (tmem_json_type_of(j, v) != TMEM_JSON_STRING)
            return fail(c->err, TMEM_E_PARSE, at(c, v), "__metadata__ value is not a string");
        tmem_status r = pool_put(st, j, k, &st->meta[2 * i], &len);
        if (!r) r = pool_put(st, j, v, &st->meta[2 * i + 1], &len);
        if (r) return r;
    }
    return TMEM_OK;
}

/* Decoded length of a string (the sizing call answers TMEM_E_FULL). */
static size_t str_len(const tmem_json *j, tmem_json_ref v) {
    size_t n = 0;
    tmem_status s = tmem_json_string(j, v, NULL, 0, &n);
    return s == TMEM_E_FULL || s == TMEM_OK ? n : 0;
}

/* Bytes of every decoded string the tables keep (+1 NUL each). */
static tmem_status pool_bytes(const tmem_json *j, size_t *out) {
    size_t total = 0;
    tmem_json_ref k, v, mk;
    tmem_status s;
    for (s = tmem_json_first(j, TMEM_JSON_ROOT, &k); s == TMEM_OK; s = tmem_json_next(j, k, &k)) {
        total += str_len(j, k) + 1;
        if (!tmem_json_string_eq(j, k, "__metadata__") || tmem_json_member_value(j, k, &v) ||
            tmem_json_type_of(j, v) != TMEM_JSON_OBJECT)
            continue;
        for (tmem_status r = tmem_json_first(j, v, &mk); r == TMEM_OK; r = tmem_json_next(j, mk, &mk)) {
            tmem_json_ref mv;
            total += str_len(j, mk) + 1;
            if (!tmem_json_member_value(j, mk, &mv) && tmem_json_type_of(j, mv) == TMEM_JSON_STRING) {
                total += str_len(j, mv) + 1;
            }
        }
    }
    *out = total; /* <= 2 x header size, which is <= 100 MB */
    return TMEM_OK;
}

/* ---- orders ---- */

static int by_offset(const void *ctx, uint32_t a, uint32_t b) {
    const tmem_safetensors *st = ctx;
    const st_tensor *x = &st->tensors[a], *y = &st->tensors[b];
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}
static int by_name(const void *ctx, uint32_t a, uint32_t b) {
    const tmem_safetensors *st = ctx;
    return strcmp(st->pool + st->tensors[a].name_off, st->pool + st->tensors[b].name_off);
}

/* Sort the table by offset and require an exact tiling of the data. */
static tmem_status check_tiling(tmem_safetensors *st, tmem_safetensors_error *err) {
    uint64_t n = st->n_tensors;
    uint32_t *order = tmem__model_alloc(st->ctx, (size_t)(n ? n : 1) * sizeof *order);
    st_tensor *sorted = tmem__model_alloc(st->ctx, (size_t)(n ? n : 1) * sizeof *sorted);
    tmem_status s = TMEM_OK;
    if (!order || !sorted) s = tmem__err(TMEM_E_NO_MEMORY);
    if (!s) {
        for (uint64_t i = 0; i < n; i++) order[i] = (uint32_t)i;
        tmem__index_sort(order, n, by_offset, st);
        for (uint64_t i = 0; i < n; i++) sorted[i] = st->tensors[order[i]];
        uint64_t pos = 0;
        for (uint64_t i = 0; i < n && !s; i++) {
            const st_tensor *t = &sorted[i];
            const char *nm = st->pool + t->name_off;
            if (t->begin < pos)
                s = fail(err, TMEM_E_CORRUPT, t->json_off, "tensor '%.64s': data [%llu, %llu) overlaps the tensor "
                         "before it (ends at %llu)", nm, (unsigned long long)t->begin,
                         (unsigned long long)(t->begin + t->size), (unsigned long long)pos);
            else if (t->begin > pos)
                s = fail(err, TMEM_E_CORRUPT, t->json_off, "tensor '%.64s': gap of %llu unused data bytes before it",
                         nm, (unsigned long long)(t->begin - pos));
            pos = t->begin + t->size;
            st->tensor_bytes += t->size;
        }
        if (!s && pos != st->data_size)
            s = fail(err, TMEM_E_CORRUPT, st->data_offset + pos, "%llu data bytes after the last tensor",
                     (unsigned long long)(st->data_size - pos));
    }
    if (!s) {
        tmem__model_free(st->ctx, st->tensors, (size_t)(n ? n : 1) * sizeof *sorted);
        st->tensors = sorted;
        sorted = NULL;
        for (uint64_t i = 0; i < n; i++) order[i] = (uint32_t)i;
        tmem__index_sort(order, n, by_name, st);
        st->by_name = order;
        order = NULL;
    }
    tmem__model_free(st->ctx, sorted, (size_t)(n ? n : 1) * sizeof *sorted);
    tmem__model_free(st->ctx, order, (size_t)(n ? n : 1) * sizeof *order);
    return s;
}

static void st_free(tmem_safetensors *st) {
    if (!st) return;
    tmem_context *ctx = st->ctx;
    size_t n = (size_t)(st->n_tensors ? st->n_tensors : 1);
    tmem__model_free(ctx, st->tensors, n * sizeof *st->tensors);
    tmem__model_free(ctx, st->by_name, n * sizeof *st->by_name);
    if (st->meta) tmem__model_free(ctx, st->meta, (size_t)st->n_meta * 2 * sizeof(uint64_t));
    tmem__model_free(ctx, st->pool, st->pool_size);
    tmem__model_free(ctx, st, sizeof *st);
}

static tmem_status parse_header(tmem_safetensors *st, tmem_safetensors_error *err) {
    if (st->size < 8)
        return fail(err, TMEM_E_PARSE, 0, "file of %llu bytes is shorter than the 8-byte header length",
                    (unsigned long long)st->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | st->base[i];
    if (n > TMEM_SAFETENSORS_MAX_HEADER)
        return fail(err, TMEM_E_CORRUPT, 0, "header length %llu exceeds the %u-byte limit", (unsigned long long)n,
                    TMEM_SAFETENSORS_MAX_HEADER);
    if (n > st->size - 8)
        return fail(err, TMEM_E_CORRUPT, 0, "header length %llu runs past the end of the %llu-byte file",
                    (unsigned long long)n, (unsigned long long)st->size);
    if (n < 2 || st->base[8] != '{')
        return fail(err, TMEM_E_PARSE, 8, "header does not start with '{'");
    st->header_size = n;
    st->data_offset = 8 + n;
    st->data_size = st->size - st->data_offset;
    tmem_json *j;
    tmem_json_error je;
    tmem_status s = tmem_json_parse(st->ctx, (const char *)st->base + 8, (size_t)n, &j, &je);
    if (s) {
        if (s == TMEM_E_PARSE || s == TMEM_E_CORRUPT)
            return fail(err, s, 8 + je.offset, "header JSON: %.150s", je.message);
        return s;
    }
    ctx_t c = {st, j, err};
    if (tmem_json_type_of(j, TMEM_JSON_ROOT) != TMEM_JSON_OBJECT)
        s = fail(err, TMEM_E_PARSE, 8, "header is not an object");
    size_t pool = 0;
    if (!s) s = pool_bytes(j, &pool);
    if (!s) {
        st->pool_size = pool ? pool : 1;
        st->pool = tmem__model_alloc(st->ctx, st->pool_size);
        if (!st->pool) s = tmem__err(TMEM_E_NO_MEMORY);
    }
    tmem_json_ref meta;
    bool has_meta = !s && tmem_json_get(j, TMEM_JSON_ROOT, "__metadata__", &meta) == TMEM_OK;
    if (!s) {
        st->n_tensors = tmem_json_count(j, TMEM_JSON_ROOT) - (has_meta ? 1 : 0);
        size_t cnt = (size_t)(st->n_tensors ? st->n_tensors : 1);
        st->tensors = tmem__model_alloc(st->ctx, cnt * sizeof *st->tensors);
        if (!st->tensors) s = tmem__err(TMEM_E_NO_MEMORY);
        else memset(st->tensors, 0, cnt * sizeof *st->tensors);
    }
    if (!s && has_meta) s = parse_metadata(&c, meta);
    tmem_json_ref k, v;
    uint64_t i = 0;
    if (!s) {
        tmem_status r;
        for (r = tmem_json_first(j, TMEM_JSON_ROOT, &k); r == TMEM_OK && !s; r = tmem_json_next(j, k, &k)) {
            if (tmem_json_string_eq(j, k, "__metadata__")) continue;
            if (tmem_json_member_value(j, k, &v)) s = tmem__err(TMEM_E_PARSE);
            else s = parse_entry(&c, k, v, &st->tensors[i++]);
        }
    }
    tmem_json_free(j);
    if (!s) s = check_tiling(st, err);
    return s;
}

static tmem_status parse(tmem_context *ctx, const uint8_t *base, uint64_t size, tmem_safetensors **out,
                         tmem_safetensors_error *err) {
    *out = NULL;
    tmem_safetensors *st = tmem__model_alloc(ctx, sizeof *st);
    if (!st) return tmem__err(TMEM_E_NO_MEMORY);
    memset(st, 0, sizeof *st);
    st->ctx = ctx;
    st->base = base;
    st->size = size;
    tmem_status s = parse_header(st, err);
    if (s) {
        if ((s == TMEM_E_NO_MEMORY || s == TMEM_E_OVERFLOW) && err)
            snprintf(err->message, sizeof err->message, "out of memory for the safetensors tables");
        st_free(st);
        return s;
    }
    *out = st;
    return TMEM_OK;
}

tmem_status tmem_safetensors_open_memory(tmem_context *ctx, const void *data, size_t size, tmem_safetensors **out,
                                         tmem_safetensors_error *err) {
    if (out) *out = NULL;
    if (err) memset(err, 0, sizeof *err);
    if (!out || (!data && size)) return tmem__err(TMEM_E_INVALID_ARG);
    return parse(ctx, data ? data : (const void *)"", size, out, err);
}

static void st_destroy_owned(void *object) {
    tmem_safetensors *st = object;
    st->file.registered = false; /* the context is dropping its list */
    tmem_safetensors_close(st);
}

static tmem_status st_parse(tmem_context *ctx, const uint8_t *base, uint64_t size, void **out, void *err) {
    tmem_safetensors *st = NULL;
    tmem_status s = parse(ctx, base, size, &st, err);
    *out = st;
    return s;
}

static void st_free_parsed(void *object) { st_free(object); }

static tmem__model_file *st_file_of(void *object) { return &((tmem_safetensors *)object)->file; }

static const tmem__model_reader st_reader = {st_parse, st_free_parsed, st_file_of, st_destroy_owned};

tmem_status tmem_safetensors_open(tmem_context *ctx, const tmem_safetensors_desc *desc, tmem_safetensors **out,
                                  tmem_safetensors_error *err) {
    if (out) *out = NULL;
    if (err) memset(err, 0, sizeof *err);
    if (!ctx || !desc || !desc->path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status s;
    *out = tmem__model_file_open(ctx, desc->type, desc->path, (desc->flags & TMEM_GGUF_WILLNEED) != 0, &st_reader,
                                 err, err ? err->message : NULL, err ? sizeof err->message : 0, &s);
    return s;
}

void tmem_safetensors_close(tmem_safetensors *st) {
    if (!st) return;
    tmem__model_file_release(&st->file, st);
    st_free(st);
}

tmem_status tmem_safetensors_get_info(const tmem_safetensors *st, tmem_safetensors_info *out) {
    if (!st || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    out->file_size = st->size;
    out->header_size = st->header_size;
    out->data_offset = st->data_offset;
    out->tensor_count = st->n_tensors;
    out->metadata_count = st->n_meta;
    out->tensor_bytes = st->tensor_bytes;
    out->mapped_bytes = st->file.map ? st->file.map_size : 0;
    return TMEM_OK;
}

static void view(const tmem_safetensors *st, uint64_t i, tmem_safetensors_tensor *out) {
    const st_tensor *t = &st->tensors[i];
    memset(out, 0, sizeof *out);
    out->name = st->pool + t->name_off;
    out->name_len = (size_t)t->name_len;
    out->dtype = (tmem_st_dtype)t->dtype;
    out->n_dims = t->n_dims;
    memcpy(out->shape, t->shape, sizeof out->shape);
    out->n_elements = t->n_elements;
    out->offset = t->begin;
    out->size = t->size;
    out->data = st->base + st->data_offset + t->begin;
}

tmem_status tmem_safetensors_tensor_at(const tmem_safetensors *st, uint64_t i,
                                       tmem_safetensors_tensor *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!st || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= st->n_tensors) return tmem__err(TMEM_E_NOT_FOUND);
    view(st, i, out);
    return TMEM_OK;
}

tmem_status tmem_safetensors_find(const tmem_safetensors *st, const char *name,
                                  tmem_safetensors_tensor *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!st || !name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t lo = 0, hi = st->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int r = strcmp(st->pool + st->tensors[st->by_name[mid]].name_off, name);
        if (r == 0) {
            view(st, st->by_name[mid], out);
            return TMEM_OK;
        }
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return TMEM_E_NOT_FOUND;
}

tmem_status tmem_safetensors_metadata_at(const tmem_safetensors *st, uint64_t i, const char **key,
                                         const char **value) {
    if (key) *key = NULL;
    if (value) *value = NULL;
    if (!st || !key || !value) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= st->n_meta) return tmem__err(TMEM_E_NOT_FOUND);
    *key = st->pool + st->meta[2 * i];
    *value = st->pool + st->meta[2 * i + 1];
    return TMEM_OK;
}
