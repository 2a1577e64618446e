/**
 * @file model.h
 * @brief Model files and model memory: a validating GGUF reader (mapped
 *        read-only into a FILE type), a GGUF writer, model memory descriptors
 *        (presets or GGUF metadata) and the "will it fit?" calculator.
 *
 * @par Quick start: map a model
 * @code
 *   tmem_gguf *g; tmem_gguf_error e;
 *   tmem_gguf_desc gd = {0};
 *   gd.path = "model.gguf";                 // mapped into /memory/weights
 *   if (tmem_gguf_open(ctx, &gd, &g, &e) != TMEM_OK) {
 *       fprintf(stderr, "%s at byte %llu\n", e.message, (unsigned long long)e.offset);
 *       return;
 *   }
 *   tmem_gguf_tensor t;
 *   if (tmem_gguf_tensor_find(g, "token_embd.weight", &t) == TMEM_OK)
 *       use(t.data, t.size);                 // a view into the mapping, no copy
 *   tmem_gguf_close(g);
 * @endcode
 *
 * @par Quick start: will it fit?
 * @code
 *   tmem_model_desc m;
 *   TMEM_IGNORE(tmem_model_preset("qwen3.5-0.8b", &m));
 *   tmem_fit_desc f = {0};
 *   f.model = &m; f.ctx_tokens = 8192; f.image_width = f.image_height = 1024;
 *   f.budget = 3ull << 30;
 *   tmem_fit_result r;
 *   if (tmem_fit(&f, &r) == TMEM_OK && !r.fits) printf("largest ctx %llu\n", r.max_ctx_tokens);
 * @endcode
 *
 * @par GGUF validation
 * The reader accepts GGUF versions 2 and 3 (identical layout: 64-bit counts
 * and lengths, little-endian); version 1 (32-bit counts) and big-endian files
 * are refused with TMEM_E_UNSUPPORTED. Everything is checked before it is
 * used: magic, version, every count and length against the bytes left in the
 * file, string and key lengths (keys at most 65535 bytes, tensor names at
 * most 64), value types, array element types and nesting (at most 8 levels),
 * bool bytes (0 or 1), duplicate keys and tensor names, `general.alignment`
 * (a UINT32 power of two), tensor ranks (1..4), every dimension (> 0, element
 * count without overflow, a whole number of blocks in the first dimension),
 * ggml type ids and block sizes, tensor data offsets (aligned, inside the
 * file) and that no two tensors overlap. A failing file returns an error and
 * a message naming what is wrong and at which byte offset; nothing reads
 * outside the mapping.
 *  - TMEM_E_PARSE: not GGUF (bad magic) or malformed encoding (truncated
 *    field, unknown metadata value type, bad bool byte, nesting too deep).
 *  - TMEM_E_CORRUPT: well-formed but inconsistent or hostile (a count that
 *    cannot fit in the file, duplicate names, bad alignment, dimension
 *    overflow, tensor data outside the file, misaligned or overlapping).
 *  - TMEM_E_UNSUPPORTED: GGUF v1, big-endian, or a ggml type id this build
 *    does not know.
 *
 * @par Threads
 * An open tmem_gguf is immutable: every query may run on several threads at
 * once. Open/close are externally synchronized per handle. The model and
 * fit functions are pure and thread-safe.
 */
#ifndef TYPEDMEM_MODEL_H
#define TYPEDMEM_MODEL_H

#include "context.h"
#include "kv.h"
#include "plan.h"

TMEM_EXTERN_C_BEGIN

/* ====================================================================== */
/* ggml tensor types                                                        */
/* ====================================================================== */

/** @brief ggml tensor type ids as stored in GGUF tensor infos (values fixed
 *  by the format). Ids not listed (4, 5, 31..33, 36..38) were removed from
 *  ggml and are refused. */
typedef enum tmem_ggml_type {
    TMEM_GGML_F32 = 0, TMEM_GGML_F16 = 1, TMEM_GGML_Q4_0 = 2, TMEM_GGML_Q4_1 = 3,
    TMEM_GGML_Q5_0 = 6, TMEM_GGML_Q5_1 = 7, TMEM_GGML_Q8_0 = 8, TMEM_GGML_Q8_1 = 9,
    TMEM_GGML_Q2_K = 10, TMEM_GGML_Q3_K = 11, TMEM_GGML_Q4_K = 12, TMEM_GGML_Q5_K = 13,
    TMEM_GGML_Q6_K = 14, TMEM_GGML_Q8_K = 15, TMEM_GGML_IQ2_XXS = 16, TMEM_GGML_IQ2_XS = 17,
    TMEM_GGML_IQ3_XXS = 18, TMEM_GGML_IQ1_S = 19, TMEM_GGML_IQ4_NL = 20, TMEM_GGML_IQ3_S = 21,
    TMEM_GGML_IQ2_S = 22, TMEM_GGML_IQ4_XS = 23, TMEM_GGML_I8 = 24, TMEM_GGML_I16 = 25,
    TMEM_GGML_I32 = 26, TMEM_GGML_I64 = 27, TMEM_GGML_F64 = 28, TMEM_GGML_IQ1_M = 29,
    TMEM_GGML_BF16 = 30, TMEM_GGML_TQ1_0 = 34, TMEM_GGML_TQ2_0 = 35, TMEM_GGML_MXFP4 = 39,
    TMEM_GGML_TYPE_LIMIT = 40 /**< ids >= this are unknown */
} tmem_ggml_type;

/** @brief Storage traits of a ggml type: `block_size` elements are stored in
 *  `type_size` bytes (F16: 1 in 2; Q4_K: 256 in 144). */
typedef struct tmem_ggml_type_info {
    const char *name;       /**< "f16", "q4_K", ... (ggml's spelling) */
    uint32_t block_size;    /**< elements per block */
    uint32_t type_size;     /**< bytes per block */
} tmem_ggml_type_info;

/** @brief Traits of a ggml type id.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (out NULL) | TMEM_E_UNSUPPORTED (unknown
 *          or removed id; *out zeroed)
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_ggml_type_get_info(uint32_t type, tmem_ggml_type_info *out);

/** @brief Bytes of `n` elements of `type` (n must be a multiple of the block size).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (out NULL, or n not a whole number of
 *          blocks) | TMEM_E_UNSUPPORTED (unknown type) | TMEM_E_OVERFLOW
 *  @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_ggml_row_size(uint32_t type, uint64_t n, uint64_t *out);

/** @brief Find a ggml type by name ("f16", "bf16", "q8_0", "Q4_K", case-insensitive).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *  @par Threads safe
 *  On failure *out is untouched (0 is a real type, F32). */
TMEM_API TMEM_NODISCARD tmem_status tmem_ggml_type_from_name(const char *name, uint32_t *out);

/** @brief Convert n elements of a float ggml type (F32, F16, BF16; stored
 *  little-endian, any alignment) to f32. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  (NULL with n > 0) | TMEM_E_UNSUPPORTED (another type) @par Threads safe
 *  On failure dst is untouched (every check comes before the first write). */
TMEM_API TMEM_NODISCARD tmem_status tmem_ggml_row_to_f32(uint32_t type, const void *src, float *dst, uint64_t n);

/** @brief Encode n f32 values as F32, F16 or BF16 (little-endian), rounding
 *  to nearest even as ggml and gguf-py do (F16 overflow gives infinity, BF16
 *  keeps NaN quiet). Quantised types: the runtime's kernels.
 *  @return as tmem_ggml_row_to_f32 @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_ggml_row_from_f32(uint32_t type, const float *src, void *dst, uint64_t n);

/* ====================================================================== */
/* GGUF reader                                                              */
/* ====================================================================== */

/* The queries on an open file (tmem_gguf_get_info .. tmem_gguf_tensor_find)
 * write their outputs only on TMEM_OK: on any error every output (an array
 * iterator aside, which is in/out) is left as
 * the caller had it, so a preset default survives a missing key. Views
 * (strings, tensor data) point into the file and are valid until
 * tmem_gguf_close. */
typedef struct tmem_gguf tmem_gguf;

/** @brief GGUF metadata value types (values fixed by the format). */
typedef enum tmem_gguf_vtype {
    TMEM_GGUF_UINT8 = 0, TMEM_GGUF_INT8 = 1, TMEM_GGUF_UINT16 = 2, TMEM_GGUF_INT16 = 3,
    TMEM_GGUF_UINT32 = 4, TMEM_GGUF_INT32 = 5, TMEM_GGUF_FLOAT32 = 6, TMEM_GGUF_BOOL = 7,
    TMEM_GGUF_STRING = 8, TMEM_GGUF_ARRAY = 9, TMEM_GGUF_UINT64 = 10, TMEM_GGUF_INT64 = 11,
    TMEM_GGUF_FLOAT64 = 12,
    TMEM_GGUF_VTYPE_COUNT
} tmem_gguf_vtype;

/** @brief A string inside the file: `len` bytes at `data`, NOT NUL-terminated
 *  (GGUF strings are length-prefixed). Valid until the file is closed. */
typedef struct tmem_gguf_str {
    const char *data;
    uint64_t len;
} tmem_gguf_str;

/** @brief One metadata value (or one array element). */
typedef struct tmem_gguf_value {
    tmem_gguf_vtype type;
    union {
        uint64_t u;          /**< UINT8..UINT64 */
        int64_t i;           /**< INT8..INT64 */
        double f;            /**< FLOAT32, FLOAT64 */
        bool b;              /**< BOOL */
        tmem_gguf_str s;     /**< STRING */
        struct {
            tmem_gguf_vtype type; /**< element type */
            uint64_t count;
        } array;             /**< ARRAY (read elements with tmem_gguf_array_get) */
    } v;
    uint64_t offset;         /**< file offset of the encoded value */
} tmem_gguf_value;

/** @brief Where a GGUF was found wrong. */
typedef struct tmem_gguf_error {
    uint64_t offset;         /**< byte offset in the file the problem is at */
    char message[192];       /**< "tensor 3 'blk.0.attn_q.weight': data [..) past end of file (12345 bytes)" */
} tmem_gguf_error;

/** @brief Flags of tmem_gguf_desc. */
typedef enum tmem_gguf_flag {
    TMEM_GGUF_WILLNEED = 1u << 0, /**< advise the OS to read the whole file ahead */
} tmem_gguf_flag;

/** @brief Describes a GGUF to open. Zeroed = defaults. */
typedef struct tmem_gguf_desc {
    const char *path;        /**< required */
    tmem_type *type;         /**< FILE-placement type to charge; NULL = "/memory/weights",
                                  else the type the WEIGHTS role maps to */
    uint32_t flags;          /**< tmem_gguf_flag bits */
} tmem_gguf_desc;

/** @brief Read-back of an open GGUF. */
typedef struct tmem_gguf_info {
    uint32_t version;        /**< 2 or 3 */
    uint64_t kv_count;
    uint64_t tensor_count;
    uint64_t alignment;      /**< general.alignment or 32 */
    uint64_t data_offset;    /**< file offset of the tensor data section */
    uint64_t file_size;
    uint64_t tensor_bytes;   /**< sum of tensor data sizes */
    uint64_t mapped_bytes;   /**< bytes mapped and charged (0 for tmem_gguf_open_memory) */
} tmem_gguf_info;

/** @brief A tensor: a view into the file, no copy. */
typedef struct tmem_gguf_tensor {
    tmem_gguf_str name;
    uint32_t type;           /**< tmem_ggml_type */
    uint32_t n_dims;         /**< 1..4 */
    uint64_t dims[4];        /**< ne[0..n_dims-1]; the rest read 1 */
    uint64_t n_elements;
    uint64_t offset;         /**< relative to the data section, as stored */
    uint64_t size;           /**< bytes */
    const void *data;        /**< base + data_offset + offset */
} tmem_gguf_tensor;

/** @brief Map a GGUF read-only (private, clean pages the OS may drop and
 *  re-read), validate it fully, charge the mapped bytes as clean to a FILE
 *  type and register it with the context, which closes it at destroy.
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; filled on TMEM_E_PARSE / CORRUPT / UNSUPPORTED.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx/desc/path/out, empty path,
 *          type not FILE placement or of another context, path not a regular
 *          file) | TMEM_E_NOT_FOUND (no such file; or no type given and no
 *          weights type) | TMEM_E_PARSE (empty file, malformed) |
 *          TMEM_E_CORRUPT | TMEM_E_UNSUPPORTED | TMEM_E_OVERFLOW (file larger
 *          than the address space) | TMEM_E_BUDGET (mapping would cross a
 *          budget) | TMEM_E_NO_MEMORY | TMEM_E_IO | TMEM_E_PERMISSION |
 *          TMEM_E_OS (open/map failed). Nothing stays mapped, open or charged
 *          on failure. err's message names the path for open, type and budget
 *          failures too.
 *  @par Threads safe (the context serialises its registries) */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_open(tmem_context *ctx, const tmem_gguf_desc *desc,
                                                   tmem_gguf **out, tmem_gguf_error *err);

/** @brief Parse and validate a GGUF image the caller holds in memory (no
 *  copy: views point into `data`, which must outlive the handle). Nothing is
 *  mapped or charged. Used by tools, tests and the fuzz target.
 *  @param ctx  metadata allocator; may be NULL (libc); must outlive the
 *              handle (see tmem_gguf_close).
 *  @return as tmem_gguf_open, without the OS and budget errors.
 *  @par Threads safe
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_open_memory(tmem_context *ctx, const void *data,
                                                          size_t size, tmem_gguf **out,
                                                          tmem_gguf_error *err);

/** @brief Close: unmap, uncharge, unregister, free. NULL is a no-op.
 *  tmem_context_destroy closes the files tmem_gguf_open mapped that are still
 *  open; do not close them again after that. A tmem_gguf_open_memory handle
 *  is not the context's: close it before destroying the context it
 *  allocates from.
 *  @par Threads externally synchronized (no query on g may be in flight) */
TMEM_API void tmem_gguf_close(tmem_gguf *g);

/** @brief Header facts and sizes. @return TMEM_OK | TMEM_E_INVALID_ARG @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_get_info(const tmem_gguf *g, tmem_gguf_info *out);

/** @brief The i-th metadata pair, in file order.
 *  @param[out] key  may be NULL.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (i >= kv_count) @par Threads safe
 *  On failure *key and *value are zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_kv_at(const tmem_gguf *g, uint64_t i,
                                                    tmem_gguf_str *key, tmem_gguf_value *value);

/** @brief Look a metadata key up (binary search, O(log n)).
 *  @param[out] index  may be NULL: the pair's index for tmem_gguf_kv_at / arrays.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND @par Threads safe
 *  On failure (TMEM_E_NOT_FOUND included) *index is 0, *value zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_find(const tmem_gguf *g, const char *key,
                                                   uint64_t *index, tmem_gguf_value *value);

/** @brief Typed getters: convert any integer type (u8..i64, bool excluded)
 *  that fits the target; tmem_gguf_get_f64 also takes FLOAT32/FLOAT64.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (no such key) |
 *          TMEM_E_PARSE (the value has another type) | TMEM_E_OVERFLOW (does
 *          not fit, e.g. a negative value for get_u64) @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_get_u64(const tmem_gguf *g, const char *key, uint64_t *out);
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_get_i64(const tmem_gguf *g, const char *key, int64_t *out);
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_get_f64(const tmem_gguf *g, const char *key, double *out);
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_get_bool(const tmem_gguf *g, const char *key, bool *out);
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_get_str(const tmem_gguf *g, const char *key, tmem_gguf_str *out);

/** @brief Element `i` of the array value of pair `kv`. O(1) for fixed-size
 *  element types, O(i) for strings and nested arrays (use the iterator to
 *  walk them). A nested array element comes back as type ARRAY with its
 *  element type and count; its own elements are not addressable.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (pair is not an array) | TMEM_E_NOT_FOUND
 *          (kv or i out of range) @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_array_get(const tmem_gguf *g, uint64_t kv, uint64_t i,
                                                        tmem_gguf_value *out);

/** @brief Sequential walk over an array, O(1) per element. Zero it, then call
 *  tmem_gguf_array_next until it returns TMEM_E_NOT_FOUND; advance it only
 *  through that call (an iterator of another array, or a fixed-size array's
 *  iterator edited by hand, is refused with TMEM_E_INVALID_ARG). */
typedef struct tmem_gguf_array_iter {
    uint64_t kv, index, offset;
} tmem_gguf_array_iter;
/** @brief The next element of an array walk.
 *  @param[out] out  the element; left as it was when the walk is done or on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (pair is not an array) | TMEM_E_NOT_FOUND (done)
 *  @par Threads safe (one iterator per thread) */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_array_next(const tmem_gguf *g, uint64_t kv,
                                                         tmem_gguf_array_iter *it,
                                                         tmem_gguf_value *out);

/** @brief The i-th tensor, in file order. @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_tensor_at(const tmem_gguf *g, uint64_t i, tmem_gguf_tensor *out);

/** @brief A tensor by name (binary search).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_tensor_find(const tmem_gguf *g, const char *name, tmem_gguf_tensor *out);

/* ====================================================================== */
/* GGUF writer (tests and tools)                                            */
/* ====================================================================== */

typedef struct tmem_gguf_writer tmem_gguf_writer;

/** @brief Start a GGUF v3 image in memory.
 *  @param ctx        metadata allocator; may be NULL (libc); must outlive
 *                    the writer.
 *  @param alignment  0 = 32 (GGUF default); else a power of two, written as
 *                    general.alignment.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_ALIGNMENT | TMEM_E_NO_MEMORY
 *  @par Threads one thread per writer
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_writer_create(tmem_context *ctx, uint32_t alignment,
                                                            tmem_gguf_writer **out);
/** @brief Free a writer; NULL is a no-op. @par Threads one thread per writer */
TMEM_API void tmem_gguf_writer_destroy(tmem_gguf_writer *w);

/** @brief Add a scalar or string pair (value->type UINT8..FLOAT64 except ARRAY;
 *  strings are copied).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, ARRAY, bad type) | TMEM_E_EXISTS
 *          (duplicate key) | TMEM_E_NO_MEMORY @par Threads one thread per writer */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_writer_set(tmem_gguf_writer *w, const char *key,
                                                         const tmem_gguf_value *value);

/** @brief Add an array pair. `elems` holds `count` packed values of the element
 *  type (uint8_t, int8_t, ..., float, double, bool as uint8_t 0/1), or for
 *  STRING `count` `const char *` NUL-terminated strings. Nested arrays are not
 *  written by this call.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_EXISTS | TMEM_E_NO_MEMORY @par Threads one thread per writer */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_gguf_writer_set_array(tmem_gguf_writer *w, const char *key, tmem_gguf_vtype elem_type,
                               const void *elems, uint64_t count);

/** @brief Add a tensor. `data` holds its tmem_ggml_row_size bytes (copied), or
 *  NULL for generated contents: byte k of tensor number t is
 *  (uint8_t)(t * 131 + k * 7 + 1), which tests can check.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (name empty or > 64 bytes, rank not
 *          1..4, a zero dimension, first dimension not a whole number of
 *          blocks) | TMEM_E_UNSUPPORTED (type) | TMEM_E_EXISTS | TMEM_E_OVERFLOW
 *          | TMEM_E_NO_MEMORY @par Threads one thread per writer */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_gguf_writer_add_tensor(tmem_gguf_writer *w, const char *name, uint32_t type,
                                uint32_t n_dims, const uint64_t *dims, const void *data);

/** @brief Serialise. Writes at most cap bytes into buf; *needed gets the full
 *  size (may be NULL). Call with buf NULL, cap 0 to size the buffer.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (cap too small; nothing
 *          meaningful written) | TMEM_E_OVERFLOW @par Threads one thread per writer
 *  On failure *needed is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_writer_write(const tmem_gguf_writer *w, void *buf,
                                                           size_t cap, size_t *needed);

/** @brief Declare a tensor whose bytes a stream (tmem_gguf_stream_write)
 *  will supply: same checks as tmem_gguf_writer_add_tensor. A writer holding
 *  one cannot be serialised with tmem_gguf_writer_write (TMEM_E_STATE).
 *  @return as tmem_gguf_writer_add_tensor, plus TMEM_E_STATE (a stream is
 *          writing this writer) @par Threads one thread per writer */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_gguf_writer_add_tensor_info(tmem_gguf_writer *w, const char *name, uint32_t type,
                                     uint32_t n_dims, const uint64_t *dims);

/** @brief Writing a GGUF file as its data is produced: the header (pairs,
 *  tensor infos, padding) is written at begin, then the tensors in the order
 *  they were added: the ones the writer holds (copied data or the test
 *  pattern) are emitted by the stream itself, the declared ones
 *  (tmem_gguf_writer_add_tensor_info) take exactly their bytes from
 *  tmem_gguf_stream_write, in one or many calls; padding between tensors is
 *  inserted. Memory: a 1 MiB write buffer and the header, whatever the model
 *  size. The bytes equal what tmem_gguf_writer_write would produce.
 *
 * @code
 *   tmem_gguf_stream *s;
 *   if (tmem_gguf_stream_begin(w, "out.gguf", &s) != TMEM_OK) return;
 *   for (each declared tensor, each chunk) st = tmem_gguf_stream_write(s, chunk, n);
 *   st = tmem_gguf_stream_finish(s, &bytes);   // the file is complete, or removed
 * @endcode
 * While a stream is open the writer refuses changes (TMEM_E_STATE); it must
 * outlive the stream. */
typedef struct tmem_gguf_stream tmem_gguf_stream;

/** @brief Create or truncate `path` and write the header.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (another stream is
 *          open on w) | TMEM_E_NOT_FOUND (a directory on the path is missing)
 *          | TMEM_E_PERMISSION | TMEM_E_IO | TMEM_E_OVERFLOW | TMEM_E_NO_MEMORY
 *          | TMEM_E_OS. On failure no file is left behind.
 *  @par Threads one thread per writer */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_stream_begin(tmem_gguf_writer *w, const char *path,
                                                           tmem_gguf_stream **out);

/** @brief The tensor the next write goes to (index in add order) and the
 *  bytes it still needs. @return TMEM_OK | TMEM_E_INVALID_ARG |
 *  TMEM_E_NOT_FOUND (every tensor is complete) @par Threads one thread per stream
 *  On failure *index and *remaining are 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_stream_next(const tmem_gguf_stream *s, size_t *index,
                                                          uint64_t *remaining);

/** @brief Append `len` bytes to the current declared tensor (at most what it
 *  still needs; a call never spans two tensors).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_OVERFLOW (more than the
 *          tensor needs; nothing written) | TMEM_E_STATE (all tensors done) |
 *          TMEM_E_IO (disk full, ...: the stream has failed, finish removes
 *          the file) @par Threads one thread per stream */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_stream_write(tmem_gguf_stream *s, const void *data, size_t len);

/** @brief Flush and close. The stream is freed in every case.
 *  @param[out] file_bytes  may be NULL: the file's size on success.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (a tensor is
 *          incomplete) | the first write error. On any error the file is
 *          removed. @par Threads one thread per stream
 *  On failure *file_bytes is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gguf_stream_finish(tmem_gguf_stream *s, uint64_t *file_bytes);

/** @brief Give up: close, remove the file, free. NULL is a no-op. @par Threads one thread per stream */
TMEM_API void tmem_gguf_stream_abort(tmem_gguf_stream *s);

/* ====================================================================== */
/* Model memory descriptors                                                 */
/* ====================================================================== */

/** @brief Storage types for the fit calculator. Zero = the default noted at
 *  each field. Maps onto ggml types (tmem_weight_dtype_ggml). */
typedef enum tmem_weight_dtype {
    TMEM_WEIGHT_DEFAULT = 0,
    TMEM_WEIGHT_F32, TMEM_WEIGHT_F16, TMEM_WEIGHT_BF16, TMEM_WEIGHT_Q8_0,
    TMEM_WEIGHT_Q4_0, TMEM_WEIGHT_Q4_K, TMEM_WEIGHT_Q5_K, TMEM_WEIGHT_Q6_K,
    TMEM_WEIGHT_COUNT
} tmem_weight_dtype;

/** @brief The ggml type of a dtype (DEFAULT -> TMEM_GGML_TYPE_LIMIT). @par Threads safe */
TMEM_API uint32_t tmem_weight_dtype_ggml(tmem_weight_dtype dtype);
/** @brief Parse "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k"
 *  (case-insensitive), or a llama.cpp file-type name: "Q4_K_M", "Q4_K_S",
 *  "Q5_K_M", "Q5_K_S", "Q6_K", "Q8_0", "Q4_0", "F16", "BF16", "F32", with or
 *  without llama.cpp's "MOSTLY_" prefix. A K-quant mix (_S/_M) maps to its
 *  base type for every tensor: llama.cpp keeps a few tensors (attn_v,
 *  ffn_down, output) at a larger type, so real files are a few percent
 *  bigger (tmem_fit with the GGUF itself gives the exact bytes).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND @par Threads safe
 *  On failure *out is TMEM_WEIGHT_DEFAULT. */
TMEM_API TMEM_NODISCARD tmem_status tmem_weight_dtype_from_name(const char *name, tmem_weight_dtype *out);

/** @brief Parse a KV / state dtype name ("f16", "bf16", "f32", "q8_0"),
 *  the inverse of tmem_kv_dtype_name. @return TMEM_OK | TMEM_E_INVALID_ARG |
 *  TMEM_E_NOT_FOUND @par Threads safe
 *  On failure *out is TMEM_KV_DTYPE_DEFAULT. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_dtype_from_name(const char *name, tmem_kv_dtype *out);

/** @brief The memory-relevant shape of a model. Layer i is full attention
 *  when full_attn_interval is 0 or (i + 1) % full_attn_interval == 0, else a
 *  Gated DeltaNet (linear attention) layer (llama.cpp's rule for qwen35 /
 *  qwen3next). Sizes are elements unless named *_bytes. */
typedef struct tmem_model_desc {
    char name[64];            /**< "qwen3.5-0.8b" or general.name */
    char arch[32];            /**< "qwen35", "llama", "qwen3" */
    uint32_t n_layers;        /**< decoder blocks (MTP layers excluded) */
    uint32_t full_attn_interval;
    uint32_t n_embd;          /**< hidden size */
    uint32_t n_ff;            /**< FFN intermediate size */
    uint32_t n_vocab;
    uint32_t n_ctx_train;
    /* full attention */
    uint32_t n_head, n_head_kv, head_dim_k, head_dim_v;
    bool attn_output_gate;    /**< q projection also yields a sigmoid gate (Qwen3.5) */
    bool tied_embeddings;     /**< output head shares token_embd */
    /* Gated DeltaNet, llama.cpp's ssm.* keys */
    uint32_t ssm_conv_kernel; /**< conv1d width (4) */
    uint32_t ssm_state_size;  /**< key head dim (128) */
    uint32_t ssm_group_count; /**< key heads (16) */
    uint32_t ssm_time_step_rank; /**< value heads (16 / 32) */
    uint32_t ssm_inner_size;  /**< value heads * value head dim */
    /* vision encoder (0 = none) */
    uint32_t vis_depth, vis_hidden, vis_ff, vis_heads;
    uint32_t vis_patch;       /**< pixels per patch side (16) */
    uint32_t vis_merge;       /**< spatial merge (2: 2x2 patches -> 1 token) */
    uint32_t vis_temporal_patch; /**< frames per patch (2; an image is repeated) */
    uint32_t vis_out_hidden;  /**< merger output (= n_embd) */
    uint32_t vis_pos_embd;    /**< learned position embeddings (2304) */
    uint64_t vis_file_weight_bytes; /**< exact tensor bytes of an mmproj GGUF; 0 = estimate */
    /* weights */
    uint64_t file_weight_bytes; /**< exact tensor bytes from a GGUF; 0 = estimate from shapes */
    uint32_t file_weight_type;  /**< the GGUF's most common tensor type, for reports */
} tmem_model_desc;

/** @brief Fill a descriptor from a named preset: "qwen3.5-0.8b", "qwen3.5-2b",
 *  "qwen3.5-4b", "qwen3.5-9b", "llama-3.2-1b", "qwen3-0.6b" (case-insensitive).
 *  Shapes are the published config.json values; docs/model.md lists sources.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_preset(const char *name, tmem_model_desc *out);

/** @brief Name of preset i (0..), NULL past the end. @par Threads safe */
TMEM_API const char *tmem_model_preset_name(uint32_t i);

/** @brief Fill a descriptor from a GGUF's llama.cpp metadata
 *  (general.architecture, <arch>.block_count, .embedding_length,
 *  .feed_forward_length, .context_length, .attention.head_count[_kv],
 *  .attention.key_length / value_length, .full_attention_interval,
 *  .ssm.conv_kernel / state_size / group_count / time_step_rank / inner_size,
 *  .nextn_predict_layers, .vocab_size or tokenizer.ggml.tokens) and its exact
 *  tensor bytes. No vision encoder (that lives in a separate mmproj file).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (a required key is
 *          missing; the message names it) | TMEM_E_CORRUPT (inconsistent shape)
 *  @param[out] err  may be NULL. @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_from_gguf(const tmem_gguf *g, tmem_model_desc *out,
                                                         tmem_gguf_error *err);

/** @brief Add the vision encoder described by a llama.cpp mmproj GGUF
 *  (clip.vision.block_count, .embedding_length, .feed_forward_length,
 *  .attention.head_count, .patch_size, .spatial_merge_size, .projection_dim
 *  (default the text hidden size); a Qwen VL projector (clip.projector_type
 *  "qwen*") has temporal patch 2 and merge 2 by default, others 1 and 1; position
 *  embeddings from v.position_embd.weight) and its exact tensor bytes.
 *  Only the vis_* fields of *m change, and only on success.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (no clip.vision.*
 *          key: the message names it) | TMEM_E_CORRUPT (inconsistent shape)
 *  @param[out] err  may be NULL. @par Threads safe
 *  On failure *m is unchanged; err (if not NULL) says why. */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_add_mmproj(const tmem_gguf *mmproj,
                                                          tmem_model_desc *m, tmem_gguf_error *err);

/** @brief Check a descriptor's shape (non-zero sizes, divisibility).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_validate(const tmem_model_desc *m);

/** @brief Number of full-attention and linear-attention layers. @par Threads safe */
TMEM_API void tmem_model_layer_counts(const tmem_model_desc *m, uint32_t *full, uint32_t *linear);

/** @brief The paged KV cache's layout for this model: the full-attention
 *  layers, KV heads and head dim, in `dtype` with `block_tokens` per block
 *  (0 = the cache's default). Feed it to tmem_kv_cache_create, or to the
 *  kv.h size functions: the fit calculator uses exactly those, so what it
 *  predicts is what the cache allocates.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad desc, dtype; no full-attention
 *          layer: layers would be 0) | TMEM_E_UNSUPPORTED (K and V head dims
 *          differ: the cache keeps one head_dim) @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_kv_layout(const tmem_model_desc *m,
                                                         tmem_kv_dtype dtype, uint32_t block_tokens,
                                                         tmem_kv_layout *out);

/** @brief The recurrent-state layout (Gated DeltaNet layers: value heads x
 *  key dim x value dim delta state plus (kernel - 1) x (inner + 2 x key
 *  heads x key dim) conv history), in `dtype` (DEFAULT = f32).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad desc or dtype; no linear layer) @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_model_recurrent_layout(const tmem_model_desc *m, tmem_kv_dtype dtype,
                                tmem_recurrent_layout *out);

/** @brief KV-cache bytes per token of context (0 for a model without
 *  full-attention layers), through tmem_kv_layout_token_bytes.
 *  Qwen3.5-0.8B, F16: 6 * 2 * 2 * 256 * 2 = 12,288.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad desc or dtype, q8_0 with a head
 *          dim not a multiple of 32) | TMEM_E_UNSUPPORTED | TMEM_E_OVERFLOW @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_model_kv_bytes_per_token(const tmem_model_desc *m, tmem_kv_dtype dtype, uint64_t *out);

/** @brief Recurrent state per sequence (0 for a dense model), through
 *  tmem_recurrent_layout_bytes. Qwen3.5-0.8B, F16:
 *  18 * (16*128*128 + 3*6144) * 2 = 10,100,736.
 *  @return as tmem_model_kv_bytes_per_token @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_model_recurrent_bytes(const tmem_model_desc *m, tmem_kv_dtype dtype, uint64_t *out);

/** @brief Vision tokens for an image of width x height pixels: each side is
 *  rounded to the nearest multiple of patch*merge (at least one), then
 *  (w/patch) * (h/patch) / merge^2. 1024x1024 with patch 16, merge 2: 1024.
 *  @param[out] patches  may be NULL: patches before the merge.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (no vision encoder, zero size) | TMEM_E_OVERFLOW
 *  @par Threads safe
 *  On failure *tokens and *patches are 0. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_model_vision_tokens(const tmem_model_desc *m, uint32_t width, uint32_t height,
                             uint64_t *tokens, uint64_t *patches);

/** @brief Weight parameters by part, estimated from the shapes. */
typedef struct tmem_model_params {
    uint64_t embedding;       /**< token_embd */
    uint64_t output;          /**< output head (0 when tied) */
    uint64_t attention;       /**< full-attention layers' projections and norms */
    uint64_t linear_attention;/**< Gated DeltaNet layers' projections, conv, norms */
    uint64_t ffn;             /**< all layers' FFNs and their norms */
    uint64_t vision;          /**< vision encoder incl. patch embedding and merger */
    uint64_t total;
} tmem_model_params;
/** @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_OVERFLOW @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_param_count(const tmem_model_desc *m, tmem_model_params *out);

/** @brief Weight bytes if every parameter were stored as `dtype` (whole
 *  blocks per part): the text model and the vision encoder.
 *  @param[out] vision  may be NULL.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad desc, DEFAULT or unknown dtype)
 *          | TMEM_E_OVERFLOW @par Threads safe
 *  On failure *text and *vision are 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_weight_bytes(const tmem_model_desc *m,
                                                            tmem_weight_dtype dtype, uint64_t *text,
                                                            uint64_t *vision);

/* ---- Layer graphs --------------------------------------------------------
 *
 * One table per layer kind (src/model/layer_graph.c) is the only description
 * of a layer's activation buffers: their sizes and their lifetimes in op
 * steps. The fit calculator sizes the arena from it, the reference runtime
 * plans its session arena from it and runs each op of its forward pass at the
 * step the table assigns it (checked in testing builds), all by id:
 * tmem_model_buf_id names a buffer, tmem_model_op an op; names are for
 * reports only. */

/** The buffers of the layer graphs: X(ID, "name"). Each graph holds a subset
 *  (tmem_model_graph::buf_index); every id appears at most once. */
#define TMEM_MODEL_BUF_LIST(X)                                                       \
    X(LAYER_IN, "layer_in")           /* the layer's input (embedding, previous output) */ \
    X(ATTN_NORM, "attn_norm")         /* rmsnorm(x) * attn_norm */                 \
    X(Q_GATE, "q_gate")               /* q and the output gate per head */         \
    X(Q, "q")                         /* q (models without the output gate) */     \
    X(K, "k")                                                                      \
    X(V, "v")                                                                      \
    X(KQ, "kq")                       /* scores (TMEM_MODEL_GRAPH_NO_FLASH_ATTN) */ \
    X(KQV, "kqv")                     /* scores x V (no flash) */                  \
    X(ATTN_OUT, "attn_out")           /* flash attention's output */               \
    X(ATTN_PROJ, "attn_proj")         /* the mixer's output projection */          \
    X(ATTN_RESIDUAL, "attn_residual") /* x + mixer */                              \
    X(FFN_NORM, "ffn_norm")                                                        \
    X(FFN_GATE, "ffn_gate")                                                        \
    X(FFN_UP, "ffn_up")                                                            \
    X(FFN_DOWN, "ffn_down")                                                        \
    X(LAYER_OUT, "layer_out")         /* the layer's output (alive to the end) */  \
    X(QKV_MIXED, "qkv_mixed")         /* DeltaNet: the q, k, v projection */       \
    X(Z, "z")                                                                      \
    X(BETA, "beta")                                                                \
    X(ALPHA, "alpha")                                                              \
    X(CONV_OUT, "conv_out")                                                        \
    X(GATE, "gate")                   /* the decay gate */                         \
    X(Q_REP, "q_rep")                 /* q, k repeated to the value heads */       \
    X(K_REP, "k_rep")                                                              \
    X(K_BETA, "k_beta")               /* the chunked delta rule's buffers */       \
    X(V_BETA, "v_beta")                                                            \
    X(DECAY_MASK, "decay_mask")                                                    \
    X(CHUNK_ATTN, "chunk_attn")                                                    \
    X(U, "u")                                                                      \
    X(W, "w")                                                                      \
    X(CHUNK_QK, "chunk_qk")                                                        \
    X(V_NEW, "v_new")                                                              \
    X(CORE_OUT, "core_out")           /* the delta rule's output */                \
    X(NORM1, "norm1")                 /* vision block */                           \
    X(QKV, "qkv")                                                                  \
    X(RESIDUAL, "residual")                                                        \
    X(NORM2, "norm2")                                                              \
    X(FC1, "fc1")                                                                  \
    X(FC2, "fc2")

/** @brief A buffer of the layer graphs (TMEM_MODEL_BUF_LIST). */
typedef enum tmem_model_buf_id {
#define TMEM_MODEL_BUF_ENUM_(id, name) TMEM_MODEL_BUF_##id,
    TMEM_MODEL_BUF_LIST(TMEM_MODEL_BUF_ENUM_)
#undef TMEM_MODEL_BUF_ENUM_
    TMEM_MODEL_BUF_COUNT
} tmem_model_buf_id;

/** The ops of the layer graphs: X(ID, "name"), in no particular order (a
 *  graph gives each op it has a step: tmem_model_graph::op_step). */
#define TMEM_MODEL_OP_LIST(X)                                                        \
    X(LAYER_IN, "layer_in")         /* the input arrives (embedding, previous layer) */ \
    X(ATTN_NORM, "attn_norm")                                                      \
    X(Q_PROJ, "q_proj")                                                            \
    X(K_PROJ, "k_proj")                                                            \
    X(V_PROJ, "v_proj")                                                            \
    X(QK_NORM_ROPE, "qk_norm_rope")                                                \
    X(KV_STORE, "kv_store")         /* new K, V rows into the cache */             \
    X(ATTN_SCORES, "attn_scores")   /* no flash: Q K^T */                          \
    X(ATTN_SOFTMAX, "attn_softmax")                                                \
    X(ATTN_MIX, "attn_mix")         /* no flash: scores x V */                     \
    X(ATTN, "attn")                 /* flash attention */                          \
    X(OUT_GATE, "out_gate")         /* attention output * sigmoid(gate) */         \
    X(OUT_PROJ, "out_proj")                                                        \
    X(RESIDUAL, "residual")                                                        \
    X(FFN_NORM, "ffn_norm")                                                        \
    X(FFN_GATE, "ffn_gate")                                                        \
    X(FFN_UP, "ffn_up")                                                            \
    X(FFN_ACT, "ffn_act")           /* silu(gate) * up */                          \
    X(FFN_DOWN, "ffn_down")                                                        \
    X(LAYER_OUT, "layer_out")                                                      \
    X(QKV_PROJ, "qkv_proj")                                                        \
    X(Z_PROJ, "z_proj")                                                            \
    X(BETA_PROJ, "beta_proj")                                                      \
    X(ALPHA_PROJ, "alpha_proj")                                                    \
    X(CONV, "conv")                                                                \
    X(DECAY_GATE, "decay_gate")                                                    \
    X(L2NORM, "l2norm")                                                            \
    X(Q_REPEAT, "q_repeat")                                                        \
    X(K_REPEAT, "k_repeat")                                                        \
    X(K_BETA, "k_beta")             /* unchunked delta rule (llama.cpp's graph) */ \
    X(V_BETA, "v_beta")                                                            \
    X(DECAY_MASK, "decay_mask")                                                    \
    X(CHUNK_ATTN, "chunk_attn")                                                    \
    X(TRI_SOLVE, "tri_solve")                                                      \
    X(CHUNK_U, "chunk_u")                                                          \
    X(CHUNK_W, "chunk_w")                                                          \
    X(CHUNK_QK, "chunk_qk")                                                        \
    X(V_NEW, "v_new")                                                              \
    X(DELTA_RULE, "delta_rule")     /* the chunk loop (chunked) or the recurrence */ \
    X(GATED_NORM, "gated_norm")                                                    \
    X(NORM1, "norm1")               /* vision block */                             \
    X(ROPE, "rope")                                                                \
    X(NORM2, "norm2")                                                              \
    X(FC1, "fc1")                                                                  \
    X(GELU, "gelu")                                                                \
    X(FC2, "fc2")

/** @brief An op of the layer graphs (TMEM_MODEL_OP_LIST). */
typedef enum tmem_model_op {
#define TMEM_MODEL_OP_ENUM_(id, name) TMEM_MODEL_OP_##id,
    TMEM_MODEL_OP_LIST(TMEM_MODEL_OP_ENUM_)
#undef TMEM_MODEL_OP_ENUM_
    TMEM_MODEL_OP_COUNT
} tmem_model_op;

/** @brief A buffer's name ("layer_in", ...), for reports; NULL for an id out
 *  of range. @par Threads safe */
TMEM_API const char *tmem_model_buf_name(tmem_model_buf_id id);

/** @brief An op's name ("attn_norm", ...), for reports; NULL out of range.
 *  @par Threads safe */
TMEM_API const char *tmem_model_op_name(tmem_model_op op);

/** @brief A buffer of one layer's activation graph: `size` bytes alive for the
 *  op steps [start, end). */
typedef struct tmem_model_buffer {
    const char *name;         /**< tmem_model_buf_name(id): for reports */
    uint64_t size;
    uint32_t start, end;
    tmem_model_buf_id id;     /**< which buffer: what code indexes by */
} tmem_model_buffer;

/** @brief Layer kinds of the activation graph. */
typedef enum tmem_model_layer_kind {
    TMEM_MODEL_LAYER_ATTENTION = 0, /**< full attention + FFN */
    TMEM_MODEL_LAYER_DELTANET,      /**< Gated DeltaNet (chunked) + FFN */
    TMEM_MODEL_LAYER_VISION,        /**< one vision encoder block */
    TMEM_MODEL_LAYER_KIND_COUNT
} tmem_model_layer_kind;

/** Tokens per chunk of the chunked gated delta rule (Gated DeltaNet layers):
 *  the layer graph sizes its intra-chunk buffers by it and the reference
 *  runtime's forward pass (runtime/src/forward/deltanet.c) runs chunks of it. */
#define TMEM_MODEL_DELTA_CHUNK 64u

/** @brief Graph options. */
typedef enum tmem_model_graph_flag {
    TMEM_MODEL_GRAPH_NO_FLASH_ATTN = 1u << 0, /**< materialise KQ scores (n_head x tokens x ctx f32) */
    /** The chunked delta rule run one TMEM_MODEL_DELTA_CHUNK-token chunk at a time (the reference
     *  runtime's schedule, runtime/src/forward/deltanet.c) instead of all
     *  chunks at once (llama.cpp's graph): the intra-chunk buffers (k_beta,
     *  v_beta, decay_mask, chunk_attn, u, w, chunk_qk, v_new) hold one chunk
     *  of every value head and live, with q, k, v, beta and the gates, through
     *  the chunk loop that writes core_out. */
    TMEM_MODEL_GRAPH_CHUNKED_DELTA = 1u << 1,
    TMEM_MODEL_GRAPH_FLAG_MASK = 0x3u
} tmem_model_graph_flag;

/** @brief The per-layer buffer graph (f32 activations) for a chunk of
 *  `n_tokens` tokens attending to `n_ctx` positions (vision: n_tokens
 *  patches). Writes at most cap buffers; *count gets the total.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad desc, zero tokens, a kind the
 *          model lacks) | TMEM_E_FULL (cap too small) | TMEM_E_OVERFLOW @par Threads safe
 *  On failure *count is 0 (TMEM_E_FULL: see above). */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_layer_graph(const tmem_model_desc *m,
                                                           tmem_model_layer_kind kind,
                                                           uint64_t n_tokens, uint64_t n_ctx,
                                                           uint32_t flags, tmem_model_buffer *bufs,
                                                           uint32_t cap, uint32_t *count);

/** tmem_model_graph::op_step of an op the graph does not have. */
#define TMEM_MODEL_STEP_NONE UINT32_MAX

/** @brief One layer graph whole: its buffers (with ids, in the order the ops
 *  produce them), the step of every op and the index of every buffer. */
typedef struct tmem_model_graph {
    tmem_model_layer_kind kind;
    uint32_t buf_count;       /**< bufs[0 .. buf_count) */
    uint32_t step_count;      /**< ops run at steps 0 .. step_count - 1 */
    tmem_model_buffer bufs[TMEM_MODEL_BUF_COUNT];
    int32_t buf_index[TMEM_MODEL_BUF_COUNT]; /**< id -> index in bufs; -1: not in this graph */
    uint32_t op_step[TMEM_MODEL_OP_COUNT];   /**< op -> its step; TMEM_MODEL_STEP_NONE: not in it */
} tmem_model_graph;

/** @brief The layer graph of tmem_model_layer_graph (same arguments, same
 *  buffers in the same order) with its op steps, for code that runs the
 *  graph: it indexes buffers by id (buf_index) and runs each op at op_step.
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, bad desc, zero tokens, bad
 *          flags, a kind the model lacks) | TMEM_E_OVERFLOW @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_model_graph_get(const tmem_model_desc *m, tmem_model_layer_kind kind,
                                                         uint64_t n_tokens, uint64_t n_ctx, uint32_t flags,
                                                         tmem_model_graph *out);

/* ====================================================================== */
/* Fit calculator                                                           */
/* ====================================================================== */

/** Prefill tokens per step tmem_fit assumes when tmem_fit_desc::prefill_chunk
 *  is 0 (the reference runtime's default too: tmemrt/defaults.h). */
#define TMEM_FIT_DEFAULT_CHUNK 512u

/** @brief A fit question. Zeroed fields take the defaults noted. */
typedef struct tmem_fit_desc {
    const tmem_model_desc *model; /**< required */
    tmem_context *ctx;        /**< optional: name each line's type by this context's role policy */
    uint64_t ctx_tokens;      /**< context per sequence, image tokens included; required */
    uint32_t image_width, image_height; /**< 0 = no image */
    uint32_t n_seqs;          /**< 0 = 1 */
    uint64_t budget;          /**< bytes; 0 = report only (fits is true) */
    tmem_weight_dtype weight_dtype;  /**< DEFAULT = exact GGUF bytes, else BF16 */
    tmem_kv_dtype kv_dtype;   /**< DEFAULT = f16 */
    tmem_kv_dtype state_dtype;/**< DEFAULT = f32 (as llama.cpp stores it) */
    uint32_t prefill_chunk;   /**< tokens per prefill step; 0 = TMEM_FIT_DEFAULT_CHUNK */
    uint32_t kv_block_tokens; /**< paged-KV block; 0 = TMEM_KV_DEFAULT_BLOCK_TOKENS */
    uint32_t graph_flags;     /**< tmem_model_graph_flag */
    uint32_t state_snapshots; /**< recurrent-state snapshots kept per sequence
                                   (tmem_kv_snapshot_take); 0 = none */
    uint64_t scratch_bytes;   /**< per-step scratch the runtime reserves besides the
                                   planned arena (kernel scratch, sampler), as a
                                   "scratch" line (SCRATCH role); 0 = no line */
    uint64_t tokenizer_bytes; /**< dirty bytes of the tokenizer that shares the budget
                                   (its tables and encode scratch: the reference runtime's
                                   tmrt_tokenizer_memory_bytes), as a "tokenizer" line
                                   (OUTPUT_TOKENS role, the role of its tables); the
                                   same at every context, so the searches keep it;
                                   0 = no line */
} tmem_fit_desc;

/** The lines of a fit breakdown: X(ID, "what"), in the order tmem_fit lists
 *  them (a line appears only when the request has it: vision lines with an
 *  image, state lines with DeltaNet layers, scratch and tokenizer when asked for). */
#define TMEM_FIT_ITEM_LIST(X)                                                        \
    X(WEIGHTS_TEXT, "weights.text")                                                \
    X(WEIGHTS_VISION, "weights.vision")                                            \
    X(KV_CACHE, "kv_cache")                                                        \
    X(RECURRENT_STATE, "recurrent_state")                                          \
    X(STATE_SNAPSHOTS, "state_snapshots")                                          \
    X(ACTIVATIONS, "activations")                                                  \
    X(VISION_ACTIVATIONS, "vision_activations")                                    \
    X(VISION_EMBEDDINGS, "vision_embeddings")                                      \
    X(IMAGE, "image")                                                              \
    X(LOGITS, "logits")                                                            \
    X(SCRATCH, "scratch")                                                          \
    X(TOKENS, "tokens")                                                            \
    X(TOKENIZER, "tokenizer")

/** @brief Which line of the breakdown (TMEM_FIT_ITEM_LIST): what code looks
 *  a line up by (tmem_fit_find); tmem_fit_item::what names it in reports. */
typedef enum tmem_fit_item_kind {
#define TMEM_FIT_ITEM_ENUM_(id, what) TMEM_FIT_ITEM_##id,
    TMEM_FIT_ITEM_LIST(TMEM_FIT_ITEM_ENUM_)
#undef TMEM_FIT_ITEM_ENUM_
    TMEM_FIT_ITEM_KIND_COUNT
} tmem_fit_item_kind;

/** @brief One line of the breakdown. */
typedef struct tmem_fit_item {
    const char *what;         /**< "weights.text", "kv_cache", ... (JSON key, reports) */
    tmem_role role;
    char type_name[64];       /**< the role's type: from tmem_fit_desc::ctx's role policy, else
                                   the builtin default ("/memory/weights", "/memory/kv", ...) */
    bool clean;               /**< file-backed clean pages (weights) */
    uint64_t bytes;
    tmem_fit_item_kind kind;  /**< which line */
} tmem_fit_item;

#define TMEM_FIT_MAX_ITEMS 16

/** @brief The answer. total = sum of items[].bytes. */
typedef struct tmem_fit_result {
    tmem_fit_item items[TMEM_FIT_MAX_ITEMS];
    uint32_t item_count;
    uint64_t total;
    uint64_t total_dirty;     /**< total without clean file-backed bytes */
    uint64_t budget;
    bool fits;                /**< total_dirty <= budget (always true with budget 0):
                                   budgets count dirty bytes, as a footprint limit does */
    uint64_t kv_bytes_per_token;
    uint64_t recurrent_bytes_per_seq;
    uint64_t image_tokens, image_patches;
    uint64_t kv_tokens;       /**< ctx rounded up to whole KV blocks */
    uint64_t activation_lower_bound; /**< prefill: largest sum of live bytes over the layer graphs' steps */
    uint64_t activation_arena;       /**< prefill arena used (planner's answer or the bound) */
    uint64_t vision_lower_bound;     /**< vision encoder block graph, same measures */
    uint64_t vision_arena;
    bool arena_from_planner;  /**< false: the sweep lower bound stands in (see docs/model.md) */
    /* searched whenever budget != 0: */
    uint64_t max_ctx_tokens;  /**< largest ctx (whole KV blocks) that fits with the image, at most
                                   the model's n_ctx_train (when known); 0 = none */
    uint32_t max_image_width, max_image_height; /**< largest same-aspect image (sides multiples of
                                                     patch*merge) that fits at ctx; 0 = none */
    /** Dirty bytes at the peak of a run that encodes the image before the
     *  text session's memory exists and frees the encoder's memory before the
     *  prefill (what `tmem run --image` does): the image embeddings plus the
     *  larger of the text phase (KV, state, activations, logits, scratch,
     *  tokens) and the encoder phase (the largest of: decoded image +
     *  pixel_values, pixel_values + the two rows the patch embedding writes,
     *  the vision arena). total_dirty sums both phases (the conservative
     *  figure budgets use); without an image the two are equal. */
    uint64_t peak_dirty_encode_first;
} tmem_fit_result;

/** Work budget (search nodes) of the planner runs inside tmem_fit and the
 *  activation graphs: fixed, so a prediction never depends on machine load. */
#define TMEM_FIT_PLAN_NODES 100000ull

/** tmem_plan_desc::flags of tmem_fit's plans of the text layer graphs
 *  (attention, DeltaNet): the greedy portfolio only. On the presets' graphs
 *  it finds the exact search's arena at every chunk but one (32 bytes more),
 *  while an exact search that cannot prove its answer spends its whole node
 *  budget (~0.1 s) and mallocs an 8 MiB memo, outside every budget. A
 *  runtime that binds these graphs plans them with the same desc
 *  (TMEM_FIT_PLAN_NODES, these flags, 64-byte alignment) to get the arena
 *  the fit predicted. The vision block is planned with the exact search. */
#define TMEM_FIT_TEXT_PLAN_FLAGS TMEM_PLAN_HEURISTIC_ONLY

/** @brief Compute the memory of a request by type and role and whether it fits.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, no model, zero ctx, image on a
 *          model without vision, image tokens > ctx) | TMEM_E_UNSUPPORTED
 *          (dtype) | TMEM_E_OVERFLOW
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_fit(const tmem_fit_desc *desc, tmem_fit_result *out);

/** @brief The line of kind `kind` in a result, NULL when the result has none
 *  (or r is NULL). @par Threads safe */
TMEM_API const tmem_fit_item *tmem_fit_find(const tmem_fit_result *r, tmem_fit_item_kind kind);

/** @brief Bytes of the line of kind `kind`, 0 when the result has none.
 *  @par Threads safe */
TMEM_API uint64_t tmem_fit_bytes(const tmem_fit_result *r, tmem_fit_item_kind kind);

/** @brief Admission estimate from the fit calculator, to pass as
 *  tmem_kv_request::estimate (kv.h's tmem_kv_estimate_fn): the bytes a request
 *  needs besides its KV blocks and recurrent state, i.e. the fit's lines for
 *  prefill activations at `chunk` tokens, the vision encoder's arena and
 *  embeddings, image buffers, logits and token ids, for
 *  req->context_tokens and req's image.
 *  @param user  a `const tmem_fit_desc *` for the model, dtypes, sequences
 *               and ctx; its ctx_tokens, image, prefill_chunk and budget are
 *               replaced by the request's.
 *  @return bytes; UINT64_MAX when the request cannot be sized (zero
 *          context, an image on a model without vision, more image tokens
 *          than context), which admission treats as "does not fit".
 *  @par Threads safe */
TMEM_API uint64_t tmem_fit_kv_estimate(const tmem_kv_request *req, uint32_t chunk, void *user);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_MODEL_H */
