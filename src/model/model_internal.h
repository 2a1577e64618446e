/*
 * Internals shared by the src/model files: the GGUF handle layout (parser and the
 * file-mapping front end share it) and the metadata allocator that works with
 * or without a context.
 */
#ifndef TMEM_MODEL_INTERNAL_H
#define TMEM_MODEL_INTERNAL_H

#include "typedmem/model.h"
#include "core/internal.h"

/* GGUF format constants. */
#define TMEM__GGUF_MAGIC 0x46554747u /* "GGUF" little-endian */
#define TMEM__GGUF_DEFAULT_ALIGN 32u
#define TMEM__GGUF_MAX_DIMS 4u
#define TMEM__GGUF_MAX_NAME 64u      /* tensor names (GGML_MAX_NAME) */
#define TMEM__GGUF_MAX_KEY 65535u
#define TMEM__GGUF_MAX_NEST 8u
#define TMEM__GGUF_MAX_ITEMS (1u << 20) /* tensors, and metadata pairs: real models have thousands */

/* A model file mapped read-only and charged to a FILE type (file_map.c). */
typedef struct tmem__model_file {
    void *map;
    size_t map_size;
    uint64_t file_size;
    tmem_context *ctx;
    tmem_type *type;             /* set once charged */
    bool registered;             /* in the context's owned list */
} tmem__model_file;

/* How a reader turns a mapped file into its object (GGUF, safetensors):
 * parse the `size` bytes at `base` into *out (err: the reader's own error
 * struct, may be NULL), free a parsed object that could not be adopted,
 * keep the adopted mapping in the object (the object's tmem__model_file),
 * close an adopted one when the context goes (destroy_owned). */
typedef struct tmem__model_reader {
    tmem_status (*parse)(tmem_context *ctx, const uint8_t *base, uint64_t size, void **out, void *err);
    void (*free_parsed)(void *object);
    tmem__model_file *(*file_of)(void *object);
    tmem__destroy_fn destroy_owned;
} tmem__model_reader;
/* Map `path` read-only into the caller's FILE type (`given`, else
 * /memory/weights, else the WEIGHTS role's), parse it, charge the mapping
 * (clean), register the object with the context, account and trace it:
 * the steps every reader shares. On failure nothing is left (no mapping,
 * no charge, no object), NULL is returned and *st and msg say why (the
 * path included in msg). */
void *tmem__model_file_open(tmem_context *ctx, tmem_type *given, const char *path, bool willneed,
                            const tmem__model_reader *reader, void *err, char *msg, size_t cap, tmem_status *st);
/* Undo what open did and unmap; no-op for a zeroed f. */
void tmem__model_file_release(tmem__model_file *f, void *owner);

typedef struct tmem__gguf_kv {
    uint64_t key_off, key_len;   /* key bytes in the file */
    uint64_t value_off;          /* file offset of the value (arrays: of the first element) */
    uint64_t value_end;          /* one past the value's last byte */
    uint64_t count;              /* array element count */
    uint32_t type, elem_type;
} tmem__gguf_kv;

typedef struct tmem__gguf_tensor {
    uint64_t name_off, name_len;
    uint64_t dims[TMEM__GGUF_MAX_DIMS];
    uint64_t n_elements, offset, size;
    uint32_t n_dims, type;
} tmem__gguf_tensor;

struct tmem_gguf {
    tmem_context *ctx;           /* allocator (NULL = libc) */
    const uint8_t *base;
    uint64_t size;
    uint32_t version;
    uint64_t alignment, data_offset, tensor_bytes;
    uint64_t n_kv, n_tensors;
    uint64_t kv_cap, tensor_cap; /* allocated entries (arrays grow while parsing) */
    tmem__gguf_kv *kv;
    tmem__gguf_tensor *tensors;
    uint32_t *kv_sorted;         /* indices sorted by key */
    uint32_t *tensor_sorted;     /* indices sorted by name */
    /* set by tmem_gguf_open (gguf_map.c); zero for memory images */
    tmem__model_file file;
};

/* Metadata allocation through the context when there is one, else libc. */
void *tmem__model_alloc(tmem_context *ctx, size_t size);
void tmem__model_free(tmem_context *ctx, void *p, size_t size);

/* Parse and validate `size` bytes at `base` into a new handle (gguf_read.c).
 * The handle points into base; the caller owns base's lifetime. */
tmem_status tmem__gguf_parse(tmem_context *ctx, const uint8_t *base, uint64_t size, tmem_gguf **out,
                             tmem_gguf_error *err);
/* Free the parsed tables and the handle (not the mapping). */
void tmem__gguf_free(tmem_gguf *g);

/* Decode one scalar/string value of `type` at `off` (already validated). */
void tmem__gguf_decode(const tmem_gguf *g, uint32_t type, uint64_t off, tmem_gguf_value *out);
/* Bytes of one encoded element starting at off (already validated). */
uint64_t tmem__gguf_elem_size(const tmem_gguf *g, uint32_t type, uint64_t off);

/* Sort n indices by cmp(ctx, a, b) (< 0, 0, > 0); index_sort.c. */
typedef int (*tmem__index_cmp)(const void *ctx, uint32_t a, uint32_t b);
void tmem__index_sort(uint32_t *a, uint64_t n, tmem__index_cmp cmp, const void *ctx);

/* Per-layer graph sweep: the largest sum of sizes alive at one step. */
uint64_t tmem__model_graph_lower_bound(const tmem_model_buffer *bufs, uint32_t n);

#endif /* TMEM_MODEL_INTERNAL_H */
