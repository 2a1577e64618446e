/**
 * @file safetensors.h
 * @brief A validating safetensors reader (Hugging Face checkpoints), mapped
 *        read-only into a FILE type like a GGUF.
 *
 * @par Quick start
 * @code
 *   tmem_safetensors *st; tmem_safetensors_error e;
 *   tmem_safetensors_desc d = {0};
 *   d.path = "model.safetensors";            // mapped into /memory/weights
 *   if (tmem_safetensors_open(ctx, &d, &st, &e) != TMEM_OK) {
 *       fprintf(stderr, "%s at byte %llu\n", e.message, (unsigned long long)e.offset);
 *       return;
 *   }
 *   tmem_safetensors_tensor t;
 *   if (tmem_safetensors_find(st, "model.embed_tokens.weight", &t) == TMEM_OK)
 *       use(t.data, t.size);                 // a view into the mapping, no copy
 *   tmem_safetensors_close(st);
 * @endcode
 *
 * @par Format
 * `u64 N` (little-endian) | N bytes of JSON header | data. The header is one
 * object: each key names a tensor, `{"dtype": "BF16", "shape": [d0, ...],
 * "data_offsets": [begin, end]}` with offsets relative to the data section;
 * the optional `"__metadata__"` maps strings to strings. Shapes are in
 * PyTorch order (row-major, last dimension contiguous).
 *
 * @par Validation
 * Everything is checked before it is used: N >= 2 and at most
 * TMEM_SAFETENSORS_MAX_HEADER and the file length minus 8; the header is
 * strict JSON (json.h) starting with '{' (trailing spaces allowed, as the
 * format pads with them), with no duplicate keys; every entry has exactly the
 * three fields; dtype is one of the names below; shape is an array of at most
 * TMEM_SAFETENSORS_MAX_DIMS non-negative integers whose product (times the
 * element size) does not overflow; data_offsets are two integers with begin
 * <= end <= data length and end - begin = elements x element size; sorted by
 * offset the tensors tile the data section exactly (no overlap, no gap, no
 * trailing bytes, as the reference implementation requires); names are
 * non-empty; metadata values are strings. A failing file returns an error
 * and a message naming the tensor or field and a byte offset in the file.
 *  - TMEM_E_PARSE: shorter than 8 bytes, header not JSON / not an object, a
 *    field of the wrong JSON type.
 *  - TMEM_E_CORRUPT: well-formed but inconsistent or hostile (header length
 *    past the end or too large, offsets outside the data, overlap, gap, size
 *    not matching the shape, duplicate name, unknown or missing field).
 *  - TMEM_E_UNSUPPORTED: a dtype name this reader does not know, or more than
 *    TMEM_SAFETENSORS_MAX_DIMS dimensions.
 *
 * @par Threads
 * An open tmem_safetensors is immutable: queries may run on several threads
 * at once. Open and close are externally synchronized per handle.
 */
#ifndef TYPEDMEM_SAFETENSORS_H
#define TYPEDMEM_SAFETENSORS_H

#include "context.h"

TMEM_EXTERN_C_BEGIN

/** @brief Largest JSON header accepted (the reference implementation's limit). */
#define TMEM_SAFETENSORS_MAX_HEADER 100000000u
/** @brief Most dimensions of one tensor. */
#define TMEM_SAFETENSORS_MAX_DIMS 8u

/** @brief Element types, by their safetensors names. */
typedef enum tmem_st_dtype {
    TMEM_ST_BOOL = 0, TMEM_ST_U8, TMEM_ST_I8, TMEM_ST_F8_E5M2, TMEM_ST_F8_E4M3,
    TMEM_ST_I16, TMEM_ST_U16, TMEM_ST_F16, TMEM_ST_BF16, TMEM_ST_I32, TMEM_ST_U32,
    TMEM_ST_F32, TMEM_ST_F64, TMEM_ST_I64, TMEM_ST_U64,
    TMEM_ST_DTYPE_COUNT
} tmem_st_dtype;

/** @brief The dtype's name ("BF16") and element size in bytes (0 / NULL if unknown).
 *  @par Threads safe */
TMEM_API const char *tmem_st_dtype_name(tmem_st_dtype dtype);
TMEM_API uint32_t tmem_st_dtype_size(tmem_st_dtype dtype);

typedef struct tmem_safetensors tmem_safetensors;

/** @brief Where a file was found wrong. */
typedef struct tmem_safetensors_error {
    uint64_t offset;          /**< byte offset in the file */
    char message[192];        /**< "tensor 'model.norm.weight': data_offsets [0, 10) hold 10 bytes, shape needs 8" */
} tmem_safetensors_error;

/** @brief Describes a file to open. Zeroed = defaults. */
typedef struct tmem_safetensors_desc {
    const char *path;         /**< required */
    tmem_type *type;          /**< FILE-placement type to charge; NULL = "/memory/weights",
                                   else the type the WEIGHTS role maps to */
    uint32_t flags;           /**< TMEM_GGUF_WILLNEED (model.h) reads the file ahead */
} tmem_safetensors_desc;

/** @brief A tensor: a view into the file, no copy. The data may be at any
 *  byte alignment (the format does not align it): read it with memcpy. */
typedef struct tmem_safetensors_tensor {
    const char *name;         /**< decoded, NUL-terminated; valid until close */
    size_t name_len;
    tmem_st_dtype dtype;
    uint32_t n_dims;          /**< 0 (a scalar) .. TMEM_SAFETENSORS_MAX_DIMS */
    uint64_t shape[TMEM_SAFETENSORS_MAX_DIMS]; /**< PyTorch order; unused read 1 */
    uint64_t n_elements;
    uint64_t offset;          /**< begin, relative to the data section */
    uint64_t size;            /**< bytes */
    const void *data;
} tmem_safetensors_tensor;

/** @brief Read-back of an open file. */
typedef struct tmem_safetensors_info {
    uint64_t file_size;
    uint64_t header_size;     /**< N */
    uint64_t data_offset;     /**< 8 + N */
    uint64_t tensor_count;
    uint64_t metadata_count;
    uint64_t tensor_bytes;
    uint64_t mapped_bytes;    /**< 0 for tmem_safetensors_open_memory */
} tmem_safetensors_info;

/** @brief Map a file read-only (private, clean pages), validate it fully,
 *  charge the mapping as clean to a FILE type and register it with the
 *  context, which closes it at destroy (as tmem_gguf_open).
 *  @param[out] out  NULL on failure.  @param[out] err  may be NULL.
 *  @return as tmem_gguf_open (model.h), with this format's validation errors.
 *          Nothing stays mapped, open or charged on failure.
 *  @par Threads safe (the context serialises its registries) */
TMEM_API TMEM_NODISCARD tmem_status tmem_safetensors_open(tmem_context *ctx,
                                                          const tmem_safetensors_desc *desc,
                                                          tmem_safetensors **out,
                                                          tmem_safetensors_error *err);

/** @brief Parse and validate an image in memory (no copy: `data` must outlive
 *  the handle). Nothing is mapped or charged. For tests, tools, fuzzing.
 *  @param ctx  metadata allocator; may be NULL (libc).
 *  @return as tmem_safetensors_open, without the OS and budget errors. @par Threads safe
 *  On failure *out is NULL, *err is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_safetensors_open_memory(tmem_context *ctx, const void *data, size_t size,
                                 tmem_safetensors **out, tmem_safetensors_error *err);

/** @brief Close: unmap, uncharge, unregister, free; NULL is a no-op. Same
 *  ownership rules as tmem_gguf_close. @par Threads externally synchronized */
TMEM_API void tmem_safetensors_close(tmem_safetensors *st);

/** @return TMEM_OK | TMEM_E_INVALID_ARG @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_safetensors_get_info(const tmem_safetensors *st, tmem_safetensors_info *out);

/** @brief The i-th tensor in data-offset order.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_safetensors_tensor_at(const tmem_safetensors *st, uint64_t i,
                               tmem_safetensors_tensor *out);

/** @brief A tensor by name (binary search).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (an answer) @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_safetensors_find(const tmem_safetensors *st,
                                                          const char *name,
                                                          tmem_safetensors_tensor *out);

/** @brief The i-th `__metadata__` pair (text order), decoded, NUL-terminated.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND @par Threads safe
 *  On failure *key and *value are NULL. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_safetensors_metadata_at(const tmem_safetensors *st, uint64_t i, const char **key,
                                 const char **value);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_SAFETENSORS_H */
