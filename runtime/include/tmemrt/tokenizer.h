/**
 * @file tokenizer.h
 * @brief The runtime's tokenizer: byte-level BPE (llama.cpp's "gpt2" model)
 *        read from a GGUF's `tokenizer.ggml.*` metadata, indexed in place.
 *
 * @par Quick start
 * @code
 *   tmrt_tokenizer *tok; char err[256];
 *   tmem_status st = tmrt_tokenizer_load(ctx, gguf, &tok, err, sizeof err);
 *   if (st == TMEM_E_NOT_FOUND) { ... no tokenizer: run from token ids ... }
 *   else if (st != TMEM_OK) { fprintf(stderr, "%s\n", err); return; }
 *   int32_t ids[512]; size_t n;
 *   st = tmrt_tokenizer_encode(tok, text, strlen(text), TMRT_TOKENIZE_PARSE_SPECIAL,
 *                              ids, 512, &n);     // TMEM_E_FULL: n is the count needed
 *   char piece[256]; size_t len;
 *   (void)tmrt_tokenizer_decode(tok, ids[0], piece, sizeof piece, &len);
 *   tmrt_tokenizer_destroy(tok);
 * @endcode
 *
 * @par What it reads (the keys llama.cpp's convert_hf_to_gguf.py writes)
 *  - `tokenizer.ggml.model` STRING: must be "gpt2" (byte-level BPE); absent,
 *    or "none"/"no_vocab": TMEM_E_NOT_FOUND (the model runs from token ids).
 *  - `tokenizer.ggml.pre` STRING: the pre-tokenizer. "qwen2" (and its
 *    aliases "deepseek-r1-qwen", "megrez", "kormo", "f2llmv2"), "qwen35",
 *    "llama-bpe"/"llama3" (digits in runs of 1..3), "gpt-2"/"phi-2"/"mpt"/
 *    "olmo" (GPT-2's own regex). Others: TMEM_E_UNSUPPORTED.
 *  - `tokenizer.ggml.tokens` STRING array (required): normal tokens are
 *    byte-level encoded (GPT-2's bytes_to_unicode), control / user-defined
 *    tokens are raw UTF-8 text.
 *  - `tokenizer.ggml.token_type` INT32 array (optional, at least one per
 *    token; absent = all normal): 1 normal, 2 unknown, 3 control, 4 user
 *    defined, 5 unused, 6 byte.
 *  - `tokenizer.ggml.merges` STRING array (required): "LEFT RIGHT", split at
 *    the first space after the first byte; rank = index; a repeated pair
 *    keeps its first rank. A merge's result must be a normal token (decode
 *    could not give its bytes back otherwise).
 *  - `tokenizer.ggml.{bos,eos,eot,eom,padding,unknown}_token_id` UINT32
 *    (optional), `tokenizer.ggml.add_bos_token` / `add_eos_token` BOOL.
 *
 * @par Encoding
 * Specials first: user-defined tokens are always matched in the text, control
 * tokens only with TMRT_TOKENIZE_PARSE_SPECIAL (llama.cpp's rule; at each
 * position the longest special that matches wins). Between specials the text
 * is split by the pre-tokenizer regex, implemented by hand over generated
 * Unicode tables (runtime/src/tok/unicode_tables.c), and each piece is merged
 * by BPE rank (lowest first, leftmost on ties). No Unicode normalization is
 * applied (llama.cpp applies none either; Hugging Face's Qwen tokenizer.json
 * asks for NFC, so non-NFC input can differ from it): decode(encode(x)) == x
 * for every byte string x. Bytes that are not valid UTF-8 (strict: no
 * overlongs, surrogates or code points above U+10FFFF) are classed like
 * U+FFFD by the splitter and encoded as their own byte tokens, never
 * replaced.
 *
 * @par Memory
 * The token strings are not copied: the tokenizer keeps a 4-byte index per
 * token into the mapped GGUF (clean file pages) and, per merge, the ids of
 * its pair and result (8 bytes) plus an open-addressing pair -> rank table
 * (6 bytes per merge). Qwen3.5's 248,320 tokens and 247,587 merges
 * take about 4.3 MiB of dirty memory (docs/tokenizer.md has the measured
 * figures). The tables are one LINEAR heap of the type given in the desc
 * (default: the type of TMEM_ROLE_OUTPUT_TOKENS, "/memory/tokens": host,
 * persistent, reclaimed last) charged to a role (default OUTPUT_TOKENS);
 * nothing is taken from malloc. Load-time indexes (string -> id) live in a
 * temporary heap of the scratch type that is destroyed before load returns.
 * Encoding a piece longer than 256 bytes takes 36 bytes per byte of the
 * piece from a GENERAL scratch heap (`scratch_bytes`, committed on demand).
 *
 * @par Threads
 * A loaded tokenizer is immutable: encode, decode and every query may run on
 * several threads at once (the scratch heap is THREAD_SAFE). Load and
 * destroy are externally synchronized per handle. A tmrt_utf8_stream is one
 * thread's.
 */
#ifndef TMEMRT_TOKENIZER_H
#define TMEMRT_TOKENIZER_H

#include <typedmem/typedmem.h>
#include <tmemrt/error.h>

TMEM_EXTERN_C_BEGIN

typedef struct tmrt_tokenizer tmrt_tokenizer;

/** @brief llama.cpp's token types (tokenizer.ggml.token_type values). */
typedef enum tmrt_token_type {
    TMRT_TOKEN_UNDEFINED = 0,
    TMRT_TOKEN_NORMAL = 1,       /**< byte-level encoded text */
    TMRT_TOKEN_UNKNOWN = 2,
    TMRT_TOKEN_CONTROL = 3,      /**< <|im_start|>, <|endoftext|>: matched with PARSE_SPECIAL */
    TMRT_TOKEN_USER_DEFINED = 4, /**< <think>, <tool_call>: always matched, raw text */
    TMRT_TOKEN_UNUSED = 5,       /**< decodes to nothing */
    TMRT_TOKEN_BYTE = 6
} tmrt_token_type;

/** @brief Pre-tokenizers (the regex that splits text before BPE). */
typedef enum tmrt_pretok {
    TMRT_PRETOK_QWEN2 = 0,  /**< (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
                                  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    TMRT_PRETOK_QWEN35,     /**< as QWEN2 with [\p{L}\p{M}]+ for letters and \p{M} excluded
                                  from the punctuation run */
    TMRT_PRETOK_LLAMA3,     /**< as QWEN2 with \p{N}{1,3} */
    TMRT_PRETOK_GPT2,       /**< 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    TMRT_PRETOK_COUNT
} tmrt_pretok;

/** @brief Flags of tmrt_tokenizer_desc. */
typedef enum tmrt_tokenizer_flag {
    /** Copy the token strings into the table heap instead of indexing the
     *  mapping in place: the "plain" layout, for the benchmark comparison. */
    TMRT_TOKENIZER_COPY_STRINGS = 1u << 0,
    /** tmrt_tokenizer_desc::scratch_bytes is the encode scratch heap's size
     *  as given, 0 included (no heap): size it with
     *  tmrt_tokenizer_scratch_bytes for the text to encode. A piece longer
     *  than 256 bytes or a chat turn that finds no room fails with
     *  TMEM_E_FULL. */
    TMRT_TOKENIZER_SCRATCH_EXACT = 1u << 1,
} tmrt_tokenizer_flag;

/** @brief Where the tokenizer's memory goes. Zeroed = defaults. */
typedef struct tmrt_tokenizer_desc {
    tmem_type *type;         /**< tables; NULL = the type of TMEM_ROLE_OUTPUT_TOKENS */
    tmem_role role;          /**< role charged for the tables; 0 (WEIGHTS, which is file
                                  memory and never a table's) = TMEM_ROLE_OUTPUT_TOKENS */
    tmem_type *scratch_type; /**< load-time indexes and long pieces; NULL = the type of
                                  TMEM_ROLE_SCRATCH */
    uint64_t scratch_bytes;  /**< encode scratch heap size (reserved, committed on demand);
                                  0 = 16 MiB (pieces up to ~450 KiB) unless
                                  TMRT_TOKENIZER_SCRATCH_EXACT */
    uint32_t flags;          /**< tmrt_tokenizer_flag bits */
} tmrt_tokenizer_desc;

/** @brief Read-back of a loaded tokenizer. Ids are -1 when absent. */
typedef struct tmrt_tokenizer_info {
    uint32_t n_vocab;        /**< tokens (= the model's vocabulary rows) */
    uint32_t n_merges;       /**< merges kept (repeated pairs dropped) */
    uint32_t n_specials;     /**< control + user-defined tokens matched in text */
    tmrt_pretok pretok;
    int32_t bos, eos, eot, eom, pad, unk;
    bool add_bos, add_eos;   /**< tokenizer.ggml.add_bos_token / add_eos_token (default false) */
    uint64_t table_bytes;    /**< bytes of the resident tables (dirty, in the table heap) */
    uint64_t load_peak_bytes;/**< table_bytes + the load-time indexes, freed by load */
    uint64_t string_bytes;   /**< bytes of token strings read in place (clean); 0 with
                                  TMRT_TOKENIZER_COPY_STRINGS (then in table_bytes) */
    uint32_t max_token_bytes;/**< longest decoded token */
} tmrt_tokenizer_info;

/** @brief Load with the default desc (tmrt_tokenizer_load_ex with NULL):
 *  errors and outputs on failure as tmrt_tokenizer_load_ex.
 *  @par Threads safe (different handles) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_load(tmem_context *ctx, const tmem_gguf *g,
                                                        tmrt_tokenizer **out, tmrt_error *err);

/** @brief Build the tokenizer of an open GGUF. The GGUF must stay open for
 *  the tokenizer's lifetime (its strings are read in place).
 *  @param desc  may be NULL (defaults).
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; on failure its message names the key (and
 *              element) that is wrong, e.g. "tokenizer.ggml.merges[17]
 *              'a bc': 'bc' is not a token".
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx/g/out, a desc type of
 *          another context or not host memory) | TMEM_E_NOT_FOUND (no
 *          tokenizer: tokenizer.ggml.model absent, "none" or "no_vocab") |
 *          TMEM_E_UNSUPPORTED (another model than "gpt2", an unknown pre,
 *          more than 2^21 - 1 tokens, more than 256 MiB of token strings) |
 *          TMEM_E_CORRUPT (broken metadata: a key of the wrong type, missing
 *          tokens or merges, empty or duplicate tokens, a normal token that is
 *          not byte-level text, a byte valid UTF-8 can hold without its
 *          token, token types short or out of range, a malformed merge or
 *          one naming an unknown token
 *          or whose result is not a token or not a normal one, a special id
 *          out of range) |
 *          TMEM_E_BUDGET | TMEM_E_FULL | TMEM_E_NO_MEMORY (heap creation or
 *          allocation). Nothing stays allocated on failure.
 *  @par Threads safe (different handles); reads g concurrently with others */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_load_ex(tmem_context *ctx, const tmem_gguf *g,
                                                           const tmrt_tokenizer_desc *desc,
                                                           tmrt_tokenizer **out, tmrt_error *err);

/** @brief Free the tokenizer and its heaps. NULL is a no-op.
 *  @par Threads externally synchronized (no call on tok in flight) */
TMEM_API void tmrt_tokenizer_destroy(tmrt_tokenizer *tok);

/** @brief Facts and sizes. @return TMEM_OK | TMEM_E_INVALID_ARG @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_get_info(const tmrt_tokenizer *tok,
                                                            tmrt_tokenizer_info *out);

/** @brief The resident table bytes (tmrt_tokenizer_info::table_bytes) of a
 *  vocabulary of n_vocab tokens, n_merges merges (as stored, repeats
 *  included) and n_specials control / user-defined / unknown tokens, in the
 *  default in-place layout, before loading it: what a memory plan adds for
 *  the tokenizer. The heap commits whole chunks, so the dirty bytes the
 *  library accounts are this rounded up to at most 64 KiB more; the load
 *  briefly needs (n_vocab * 3 / 2 + 1) * 4 + n_specials * 8 more in the
 *  scratch type. Qwen3.5 (248,320 / 247,587 / ~300): about 4.3 MiB.
 *  @return bytes; 0 when n_vocab is 0 or >= 2^21 - 1, or n_merges > 2^31.
 *  @par Threads safe */
TMEM_API uint64_t tmrt_tokenizer_table_bytes(uint32_t n_vocab, uint64_t n_merges, uint32_t n_specials);

/** @brief The scratch heap (tmrt_tokenizer_desc::scratch_bytes with
 *  TMRT_TOKENIZER_SCRATCH_EXACT) that encoding any text of at most
 *  text_bytes bytes needs: with tmrt_tokenizer_encode (chat false) 0 up to
 *  256 bytes (short pieces merge on the stack), else the 36 bytes per byte
 *  of the longest possible piece; with tmrt_tokenizer_chat (chat true: the
 *  longer of the system and user texts) also the turn's copy. In whole
 *  64 KiB chunks per allocation. UINT64_MAX when it overflows.
 *  @par Threads safe */
TMEM_API uint64_t tmrt_tokenizer_scratch_bytes(uint64_t text_bytes, bool chat);

/** @brief The dirty bytes a tokenizer loaded from g with desc (NULL:
 *  defaults) can hold: its table heap (exact: every table fills it) and its
 *  encode scratch heap (what it can commit at most), each in whole pages of
 *  its type; computed from the metadata's counts, building nothing. What a
 *  memory plan adds for the tokenizer: `tmem run` passes it as
 *  tmrt_session_desc::tokenizer_bytes, so the fit and the admission count
 *  it. (The load's temporary index, tmrt_tokenizer_info::load_peak_bytes
 *  minus table_bytes, is freed before load returns: before any session.)
 *  @param[out] out  0 on failure.
 *  @return TMEM_OK | the errors of tmrt_tokenizer_load_ex's checks of the
 *          desc and the metadata's keys (TMEM_E_INVALID_ARG, TMEM_E_NOT_FOUND,
 *          TMEM_E_UNSUPPORTED, TMEM_E_CORRUPT) | TMEM_E_OVERFLOW
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_memory_bytes(tmem_context *ctx, const tmem_gguf *g,
                                                                const tmrt_tokenizer_desc *desc, uint64_t *out,
                                                                tmrt_error *err);

/** @brief Vocabulary size (0 for NULL). @par Threads safe */
TMEM_API uint32_t tmrt_tokenizer_n_vocab(const tmrt_tokenizer *tok);

/** @brief Flags of tmrt_tokenizer_encode. */
typedef enum tmrt_tokenize_flag {
    TMRT_TOKENIZE_PARSE_SPECIAL = 1u << 0, /**< match control tokens in the text */
    TMRT_TOKENIZE_ADD_SPECIAL = 1u << 1,   /**< prepend BOS / append EOS where the file's
                                                add_bos_token / add_eos_token ask for it */
} tmrt_tokenize_flag;

/** @brief Encode `len` bytes of text (any bytes; NUL is an ordinary byte).
 *  Writes at most `cap` ids; *n gets the number of tokens of the whole text
 *  (so a call with cap 0 sizes the array).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL tok or n, NULL text with len >
 *          0, NULL ids with cap > 0, unknown flags) | TMEM_E_FULL (cap too
 *          small: ids holds the first cap tokens, *n the count needed) |
 *          TMEM_E_NO_MEMORY / TMEM_E_BUDGET / TMEM_E_FULL (a piece longer
 *          than 256 bytes found no scratch: *n is 0) | TMEM_E_OVERFLOW (more than INT32_MAX
 *          tokens) | TMEM_E_UNSUPPORTED (the text holds a byte the vocabulary
 *          has no token for: only vocabularies without all 256 byte tokens,
 *          like GPT-NeoX's, and only bytes valid UTF-8 never holds, 0xC0,
 *          0xC1, 0xF5..0xFF; *n is 0)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_encode(const tmrt_tokenizer *tok, const char *text,
                                                          size_t len, uint32_t flags, int32_t *ids,
                                                          size_t cap, size_t *n);

/** @brief The bytes of one token: byte-level decoded for normal tokens, the
 *  raw text for control / user-defined / unknown / byte tokens, nothing for
 *  unused ones. A token may end inside a UTF-8 sequence (use the stream
 *  below to print). Writes at most cap bytes (no NUL); *n gets the length.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL tok/n, NULL buf with cap > 0) |
 *          TMEM_E_NOT_FOUND (id out of range; *n = 0) | TMEM_E_FULL (cap too
 *          small: buf holds the first cap bytes, *n the length)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_decode(const tmrt_tokenizer *tok, int32_t id,
                                                          char *buf, size_t cap, size_t *n);

/** @brief The type of a token (TMRT_TOKEN_UNDEFINED for an id out of range).
 *  @par Threads safe */
TMEM_API tmrt_token_type tmrt_tokenizer_token_type(const tmrt_tokenizer *tok, int32_t id);

/** @brief Find a control / user-defined token by its exact text
 *  ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_start|>",
 *  "<|vision_end|>", "<|image_pad|>", "<think>", ...).
 *  @param[out] id  untouched on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_special(const tmrt_tokenizer *tok, const char *text,
                                                           int32_t *id);

/** @brief Whether generation stops at `id`: the eos, eot or eom id, or a
 *  control token "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>"
 *  (llama.cpp's end-of-generation set). @par Threads safe */
TMEM_API bool tmrt_tokenizer_is_eog(const tmrt_tokenizer *tok, int32_t id);

/** @brief The end-of-generation ids, ascending: writes at most cap, *n gets
 *  the count. @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_eog_ids(const tmrt_tokenizer *tok, int32_t *ids,
                                                           size_t cap, size_t *n);

/** @brief Encode a one-turn ChatML prompt (what `tmem run --chat` sends):
 *  [<|im_start|>system\n SYSTEM <|im_end|>\n] <|im_start|>user\n USER
 *  <|im_end|>\n <|im_start|>assistant\n. The template's markers are always
 *  the control tokens; `flags` applies to the user and system text (without
 *  TMRT_TOKENIZE_PARSE_SPECIAL a "<|im_end|>" typed by the user stays text).
 *  @param system  may be NULL (no system turn).
 *  @return as tmrt_tokenizer_encode, plus TMEM_E_NOT_FOUND (the vocabulary
 *          has no <|im_start|> / <|im_end|>; *n = 0)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_chat(const tmrt_tokenizer *tok, const char *system,
                                                        const char *user, size_t user_len, uint32_t flags,
                                                        int32_t *ids, size_t cap, size_t *n);

/** @brief A streaming decoder: holds back the bytes of a UTF-8 sequence that
 *  a token started and the next one finishes, so printed text never splits
 *  a character. Zero it to start. */
typedef struct tmrt_utf8_stream {
    uint8_t held[4];
    uint8_t n_held;
} tmrt_utf8_stream;

/** @brief Append token `id` to the stream: writes the bytes that are ready
 *  (complete characters, and any bytes that can no longer become one, which
 *  pass through unchanged) and keeps an unfinished sequence's prefix.
 *  @return as tmrt_tokenizer_decode; on TMEM_E_FULL the stream is unchanged
 *          and *n is the room needed (at most the token's length + 3).
 *  @par Threads one thread per stream */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_decode_stream(const tmrt_tokenizer *tok,
                                                                 tmrt_utf8_stream *s, int32_t id,
                                                                 char *buf, size_t cap, size_t *n);

/** @brief Write out what the stream still holds (an unfinished sequence, as
 *  raw bytes: decode(encode(x)) stays exact) and reset it. cap >= 3 always
 *  suffices. @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (unchanged)
 *  @par Threads one thread per stream */
TMEM_API TMEM_NODISCARD tmem_status tmrt_utf8_stream_flush(tmrt_utf8_stream *s, char *buf, size_t cap,
                                                           size_t *n);

/** @brief Write a deterministic synthetic byte-level BPE of exactly
 *  `n_vocab` tokens into a GGUF writer, for generated models (`tmem gen`):
 *  ids 0..255 are the 256 byte tokens, then merges (a fixed English/code
 *  seed set first, then pairs drawn by a fixed-seed generator, each result
 *  a new token of at most 16 bytes), then the 26 Qwen specials
 *  (<|endoftext|>, <|im_start|>, <|im_end|>, ..., <|vision_start|>,
 *  <|vision_end|>, <|image_pad|>, ..., <think>, </think>) as the last ids.
 *  Keys: tokenizer.ggml.model "gpt2", .pre "qwen35", .tokens, .token_type,
 *  .merges, .bos_token_id / .padding_token_id (<|endoftext|>),
 *  .eos_token_id (<|im_end|>), .add_bos_token false. Same n_vocab, same
 *  bytes on every machine. Uses malloc for its own scratch (a tool-time
 *  call, not the inference path).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL w, n_vocab < 283 or >= 2^21) |
 *          TMEM_E_EXISTS (the writer already has a tokenizer key) |
 *          TMEM_E_NO_MEMORY
 *  @par Threads one thread per writer */
TMEM_API TMEM_NODISCARD tmem_status tmrt_tokenizer_synth_write(tmem_gguf_writer *w, uint32_t n_vocab);

TMEM_EXTERN_C_END

#endif /* TMEMRT_TOKENIZER_H */
