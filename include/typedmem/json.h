/**
 * @file json.h
 * @brief A strict, validating JSON reader (RFC 8259) for the model files
 *        that carry JSON: safetensors headers, Hugging Face config.json,
 *        tokenizer.json and tokenizer_config.json.
 *
 * @par Quick start
 * @code
 *   tmem_json *j; tmem_json_error e;
 *   if (tmem_json_parse(NULL, text, len, &j, &e) != TMEM_OK) {
 *       fprintf(stderr, "config.json:%u:%u: %s\n", e.line, e.column, e.message);
 *       return;
 *   }
 *   tmem_json_ref v;
 *   int64_t layers;
 *   if (tmem_json_get(j, TMEM_JSON_ROOT, "num_hidden_layers", &v) == TMEM_OK &&
 *       tmem_json_int(j, v, &layers) == TMEM_OK) use(layers);
 *   tmem_json_free(j);
 * @endcode
 *
 * @par What "strict" means
 * One value, optional whitespace around it, nothing else. No comments,
 * trailing commas, single quotes, NaN/Infinity, leading zeros, leading '+',
 * hex numbers or byte-order mark. Strings must be valid UTF-8 (no overlong
 * forms, no surrogate code points, nothing above U+10FFFF), control bytes
 * below 0x20 must be escaped, `\u` escapes must pair surrogates correctly.
 * Duplicate keys in one object are refused (compared after decoding
 * escapes). Nesting is limited to TMEM_JSON_MAX_DEPTH levels, numbers to 511
 * characters, the text to 4 GiB - 1. Errors are TMEM_E_PARSE (malformed) or
 * TMEM_E_CORRUPT (a duplicate key), with the byte offset, line and column.
 *
 * @par Memory
 * One node (32 bytes) per value and per object key, plus 4 bytes per key for
 * the sorted lookup index; strings and numbers stay in the caller's text,
 * which must outlive the handle. Lookups by key are O(log n).
 *
 * @par Threads
 * A parsed tmem_json is immutable: queries may run on several threads at
 * once. Parse and free are externally synchronized per handle.
 */
#ifndef TYPEDMEM_JSON_H
#define TYPEDMEM_JSON_H

#include "context.h"

TMEM_EXTERN_C_BEGIN

/** @brief Deepest nesting of arrays and objects accepted. */
#define TMEM_JSON_MAX_DEPTH 64

typedef struct tmem_json tmem_json;

/** @brief A value in a parsed document (an index; the root is TMEM_JSON_ROOT). */
typedef uint32_t tmem_json_ref;
#define TMEM_JSON_ROOT ((tmem_json_ref)0)

/** @brief JSON value kinds. */
typedef enum tmem_json_type {
    TMEM_JSON_NULL = 0, TMEM_JSON_BOOL, TMEM_JSON_NUMBER, TMEM_JSON_STRING,
    TMEM_JSON_ARRAY, TMEM_JSON_OBJECT
} tmem_json_type;

/** @brief Where a text was found malformed. */
typedef struct tmem_json_error {
    uint64_t offset;          /**< byte offset of the problem */
    uint32_t line, column;    /**< 1-based; column counts bytes */
    char message[160];        /**< "expected ',' or '}' after object member" */
} tmem_json_error;

/** @brief Parse and validate `len` bytes of JSON text (no copy: the handle
 *  points into `text`, which must outlive it).
 *  @param ctx  metadata allocator; may be NULL (libc); must outlive the handle.
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; filled on TMEM_E_PARSE / TMEM_E_CORRUPT.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL out, NULL text with len > 0) |
 *          TMEM_E_PARSE | TMEM_E_CORRUPT (duplicate key) | TMEM_E_OVERFLOW
 *          (text of 4 GiB or more) | TMEM_E_NO_MEMORY. Nothing is allocated
 *          on failure.
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_parse(tmem_context *ctx, const char *text, size_t len,
                                                    tmem_json **out, tmem_json_error *err);

/** @brief Free a document; NULL is a no-op. @par Threads externally synchronized */
TMEM_API void tmem_json_free(tmem_json *j);

/** @brief Kind of a value (TMEM_JSON_NULL for a ref out of range). @par Threads safe */
TMEM_API tmem_json_type tmem_json_type_of(const tmem_json *j, tmem_json_ref v);

/** @brief Elements of an array or members of an object; 0 for anything else. @par Threads safe */
TMEM_API uint32_t tmem_json_count(const tmem_json *j, tmem_json_ref v);

/** @brief Byte offset of a value in the text (for error messages). @par Threads safe */
TMEM_API uint64_t tmem_json_offset(const tmem_json *j, tmem_json_ref v);

/** @brief Walk an array's elements or an object's members in text order:
 *  `first` gives the first, `next` the one after `item`. For an object the
 *  items are its keys (strings): tmem_json_member_value gives each value.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a container / not an item)
 *          | TMEM_E_NOT_FOUND (empty, or no more items) @par Threads safe
 *  On failure *item is untouched (every ref, 0 included, is valid). */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_first(const tmem_json *j, tmem_json_ref container, tmem_json_ref *item);
TMEM_API TMEM_NODISCARD tmem_status tmem_json_next(const tmem_json *j, tmem_json_ref item, tmem_json_ref *next);

/** @brief The value of an object member, given its key (from first/next).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (not an object key) @par Threads safe
 *  On failure *value is untouched. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_member_value(const tmem_json *j, tmem_json_ref key, tmem_json_ref *value);

/** @brief Element i of an array (O(i): walk with first/next for all of them).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (not an array) | TMEM_E_NOT_FOUND @par Threads safe
 *  On failure *out is untouched. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_at(const tmem_json *j, tmem_json_ref array,
                                                 uint32_t i, tmem_json_ref *out);

/** @brief Look a key up in an object (binary search over the decoded keys).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not an object) | TMEM_E_NOT_FOUND
 *          (an answer: *out untouched) @par Threads safe
 *  On failure *out is untouched. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_get(const tmem_json *j, tmem_json_ref object,
                                                  const char *key, tmem_json_ref *out);

/** @brief A number as a double (nearest representable).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_PARSE (not a number)
 *          | TMEM_E_OVERFLOW (magnitude beyond double) @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_number(const tmem_json *j, tmem_json_ref v, double *out);

/** @brief A number written as an integer (no fraction, no exponent) that
 *  fits int64_t. @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_PARSE (not a
 *  number, or written with a fraction / exponent) | TMEM_E_OVERFLOW @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_int(const tmem_json *j, tmem_json_ref v, int64_t *out);

/** @brief A boolean. @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_PARSE (not a bool)
 *  @par Threads safe
 *  On failure *out is false. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_bool(const tmem_json *j, tmem_json_ref v, bool *out);

/** @brief A string decoded to UTF-8 (escapes resolved), NUL-terminated.
 *  @param[out] len  may be NULL: the decoded length without the NUL, also
 *                   set on TMEM_E_FULL (so buf NULL / cap 0 sizes it).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_PARSE (not a string) |
 *          TMEM_E_FULL (cap < length + 1; buf untouched) @par Threads safe
 *  On failure *len is 0, except TMEM_E_FULL as above. */
TMEM_API TMEM_NODISCARD tmem_status tmem_json_string(const tmem_json *j, tmem_json_ref v, char *buf,
                                                     size_t cap, size_t *len);

/** @brief Does a string value equal `s` (after decoding)? false for non-strings. @par Threads safe */
TMEM_API bool tmem_json_string_eq(const tmem_json *j, tmem_json_ref v, const char *s);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_JSON_H */
