/**
 * @file runtime.h
 * @brief typedmem's reference runtime: a Qwen3.5 hybrid model (Gated
 *        DeltaNet + gated attention) running on typed memory.
 *
 * Built on typedmem's public API only. Prefix `tmrt_`.
 *
 * @par Quick start
 * @code
 *   tmem_context *ctx;                          // the budget lives here
 *   tmem_context_desc cd = {0};
 *   if (tmem_context_create(&cd, &ctx)) return;
 *   tmrt_model *m; tmrt_error e;
 *   tmrt_model_desc md = {0};
 *   md.path = "model.gguf";                     // llama.cpp's qwen35 layout
 *   if (tmrt_model_open(ctx, &md, &m, &e)) { puts(e.message); return; }
 *   tmrt_session *s;
 *   tmrt_session_desc sd = {0};
 *   sd.n_ctx = 4096;                            // zeroed fields: defaults
 *   if (tmrt_session_create(m, &sd, &s, &e)) { puts(e.message); return; }
 *   tmrt_batch b = {0};
 *   b.tokens = prompt; b.n_tokens = n; b.logits = TMRT_LOGITS_LAST;
 *   if (tmrt_session_eval(s, &b, NULL, NULL, &e) == TMEM_OK) {
 *       int32_t next;
 *       tmrt_sampler_desc sp = {0};             // greedy
 *       (void)tmrt_session_sample(s, &sp, &next);
 *   }
 *   tmrt_session_destroy(s);
 *   tmrt_model_close(m);
 *   tmem_context_destroy(ctx);
 * @endcode
 *
 * @par Memory (typed mode)
 * Weights are the mapped GGUF (FILE type, clean pages). The KV cache and the
 * DeltaNet state are a typedmem paged KV cache and its state slot. Layer
 * activations live in one PLACEMENT heap laid out by the lifetime planner
 * from the library's layer graph (tmem_model_layer_graph) at the prefill
 * chunk and at one token, bound once and reused by every layer and step.
 * Per-op scratch is a LINEAR heap reset per op; logits are an ACTIVATION
 * allocation of one vocabulary row; token ids are OUTPUT_TOKENS. Nothing in
 * the forward pass calls malloc. The session's memory is exactly what
 * tmem_fit predicts for the request plus the scratch line it is given.
 *
 * @par Memory (naive mode, the baseline)
 * The same forward pass and kernels with a malloc per tensor, the weights
 * read into anonymous memory and one max-length KV buffer: logits are
 * bit-identical to the typed mode.
 *
 * @par Threads
 * A model is immutable after open: several sessions may share it. A session
 * is externally synchronized (one thread at a time); it runs its own worker
 * threads inside eval.
 */
#ifndef TMEMRT_RUNTIME_H
#define TMEMRT_RUNTIME_H

#include <typedmem/typedmem.h>
#include <typedmem/gpu.h>
#include <tmemrt/defaults.h>
#include <tmemrt/error.h>

TMEM_EXTERN_C_BEGIN

/** @brief The runtime's version string ("0.1.0").
 *  @par Threads safe */
TMEM_API const char *tmrt_version(void);

/** @brief Most decoder layers the runtime handles. */
#define TMRT_MAX_LAYERS 256u

/* ====================================================================== */
/* Model                                                                    */
/* ====================================================================== */

/** @brief Where a model's weights live. */
typedef enum tmrt_memory_mode {
    TMRT_MEMORY_TYPED = 0, /**< typed memory (see the file comment) */
    TMRT_MEMORY_NAIVE      /**< the malloc baseline */
} tmrt_memory_mode;

/** @brief The hyper-parameters the forward pass uses, read from the GGUF's
 *  `qwen35.*` keys as llama.cpp reads them. */
typedef struct tmrt_hparams {
    uint32_t n_layers;          /**< qwen35.block_count */
    uint32_t n_embd;            /**< qwen35.embedding_length */
    uint32_t n_ff;              /**< qwen35.feed_forward_length */
    uint32_t n_vocab;           /**< token_embd rows */
    uint32_t n_ctx_train;       /**< qwen35.context_length */
    uint32_t n_head, n_head_kv; /**< attention.head_count[_kv] */
    uint32_t head_dim;          /**< attention.key_length (= value_length) */
    uint32_t n_rot;             /**< rope.dimension_count (partial rotary) */
    int32_t rope_sections[4];   /**< rope.dimension_sections (M-RoPE) */
    float rope_freq_base;       /**< rope.freq_base (10000 when absent) */
    float rms_eps;              /**< attention.layer_norm_rms_epsilon */
    uint32_t full_attn_interval;/**< full_attention_interval (4 when absent) */
    uint32_t conv_kernel;       /**< ssm.conv_kernel */
    uint32_t ssm_head_dim;      /**< ssm.state_size: key head dim */
    uint32_t ssm_k_heads;       /**< ssm.group_count */
    uint32_t ssm_v_heads;       /**< ssm.time_step_rank */
    uint32_t ssm_inner;         /**< ssm.inner_size = v heads x value head dim */
    bool tied_embeddings;       /**< no output.weight: the LM head is token_embd */
    int32_t eos_token;          /**< tokenizer.ggml.eos_token_id, -1 if none */
    bool recurrent[TMRT_MAX_LAYERS]; /**< layer i is a Gated DeltaNet layer */
} tmrt_hparams;

typedef struct tmrt_model tmrt_model;

/** @brief Which processor runs the forward pass. */
typedef enum tmrt_device_kind {
    TMRT_DEVICE_CPU = 0,        /**< the CPU kernels (the default) */
    TMRT_DEVICE_VULKAN          /**< Vulkan compute (docs/runtime.md, "The GPU path") */
} tmrt_device_kind;

/** @brief A device for the forward pass. Zeroed = the CPU. */
typedef struct tmrt_device {
    tmrt_device_kind kind;
    uint32_t index;             /**< among the API's devices (tmem info lists them), 0 = first */
    uint64_t chunk_size;        /**< Vulkan: bytes of one device memory object; 0 = 1 GiB
                                     (lowered to the driver's maxMemoryAllocationSize) */
} tmrt_device;

/** @brief Describes a model to open. Zeroed = defaults. */
typedef struct tmrt_model_desc {
    const char *path;           /**< GGUF file; required */
    tmrt_memory_mode memory;    /**< TYPED: mapped into the WEIGHTS role's FILE type;
                                     NAIVE: read into malloc'd memory */
    /** Where the forward pass runs; zeroed = the CPU. VULKAN: the device is
     *  attached to the model's context (tmem_gpu_attach) and the weights
     *  are placed in device memory at open (the file's pages imported where
     *  the device can, else uploaded through one bounded staging ring: never
     *  a dequantised or second host copy); every session of the model then
     *  runs on the device. Typed mode only. */
    tmrt_device device;
} tmrt_model_desc;

/** @brief Whether the runtime was built with the Vulkan compute path.
 *  @par Threads safe */
TMEM_API bool tmrt_device_built(tmrt_device_kind kind);

/** @brief The device a model runs on (zeroed = CPU for NULL).
 *  @par Threads safe */
TMEM_API tmrt_device tmrt_model_device(const tmrt_model *m);

/** @brief The library's gpu a Vulkan model attached (its driver budget:
 *  tmem_gpu_get_info); NULL for a CPU model or NULL. Owned by the model.
 *  @par Threads safe */
TMEM_API tmem_gpu *tmrt_model_gpu(const tmrt_model *m);

/** @brief Open a GGUF with llama.cpp's `qwen35` architecture: read the
 *  hyper-parameters, find every tensor and check its shape and type against
 *  them (types F32, F16, BF16, Q8_0, Q4_K, Q6_K for matrices; norms and
 *  small vectors F32/F16/BF16), and refuse NaN/Inf in the norm vectors.
 *  @param ctx  typed mode: the context the weights are charged to (and the
 *              sessions' memory comes from); naive mode: may be NULL.
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; names the tensor or key that is wrong.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (missing key or
 *          tensor) | TMEM_E_CORRUPT (wrong shape, inconsistent keys, NaN)
 *          | TMEM_E_UNSUPPORTED (another architecture, a weight type the
 *          kernels lack) | the errors of tmem_gguf_open
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_model_open(tmem_context *ctx, const tmrt_model_desc *desc,
                                                    tmrt_model **out, tmrt_error *err);

/** @brief Close a model (after its sessions). NULL is a no-op.
 *  @par Threads externally synchronized (no session of it left) */
TMEM_API void tmrt_model_close(tmrt_model *m);

/** @brief The model's hyper-parameters (valid until close); NULL for NULL.
 *  @par Threads safe */
TMEM_API const tmrt_hparams *tmrt_model_hparams(const tmrt_model *m);

/** @brief The model's GGUF (tokenizer metadata, tmem_model_from_gguf);
 *  NULL for NULL. @par Threads safe */
TMEM_API const tmem_gguf *tmrt_model_gguf(const tmrt_model *m);

/** @brief The memory descriptor of the model for tmem_fit; NULL for NULL.
 *  @par Threads safe */
TMEM_API const tmem_model_desc *tmrt_model_memory_desc(const tmrt_model *m);

/* ====================================================================== */
/* Session                                                                  */
/* ====================================================================== */

typedef struct tmrt_session tmrt_session;

/** @brief Describes a session (one sequence). Zeroed = defaults. */
typedef struct tmrt_session_desc {
    uint32_t n_ctx;             /**< tokens of context; 0 = the default rule of defaults.h:
                                     max(n_ctx_min, min(TMRT_DEFAULT_CTX, n_ctx_train));
                                     tmrt_session_info::n_ctx says what was decided */
    uint32_t chunk;             /**< prefill tokens per step; 0 = TMRT_DEFAULT_CHUNK; capped by
                                     the context (tmrt_session_info::chunk: the one used) */
    uint32_t threads;           /**< worker threads incl. the caller; 0 = 1 */
    uint64_t budget;            /**< dirty bytes the session may use (what a footprint
                                     limit counts: the mapped weights are clean and
                                     not counted; the naive twin's copies would be);
                                     0 = the context's budget (typed), none (naive) */
    uint32_t flags;             /**< tmrt_session_flag bits */
    tmem_kv_dtype kv_dtype;     /**< K/V rows: DEFAULT = F16 (llama.cpp's), or F32 */
    /** Called for each snapshot of this session the memory policy drops
     *  (kv.h's callback contract: inside the cache lock, on the thread that
     *  needed the room; record and return). The session's sequence itself is
     *  pinned and never evicted. NULL: drops go unreported, and only
     *  tmrt_session_rollback's TMEM_E_NOT_FOUND tells. */
    tmem_kv_evict_fn on_evict;
    void *evict_user;           /**< passed to on_evict */
    /** Tokens the caller knows the request needs (prompt + generation):
     *  with n_ctx 0 the default context grows to hold them (defaults.h's
     *  rule), even past n_ctx_train. Ignored when n_ctx is given. 0 = none. */
    uint32_t n_ctx_min;
    /** Dirty bytes of the tokenizer that shares the session's budget
     *  (tmrt_tokenizer_memory_bytes): the fit's "tokenizer" line, so the
     *  admission counts it. 0 = none (no line). */
    uint64_t tokenizer_bytes;
} tmrt_session_desc;

/** @brief Snapshots a typed session's cache has room for (its range of the
 *  shared `/memory/snapshots` type); taking one more drops the oldest. */
#define TMRT_SESSION_SNAPSHOTS 4

/** @brief Session flags. */
typedef enum tmrt_session_flag {
    /** Refuse instead of shrinking the prefill chunk when the budget is short. */
    TMRT_SESSION_NO_CHUNK_SHRINK = 1u << 0,
} tmrt_session_flag;

/** @brief What the session was sized to, and what it committed. */
typedef struct tmrt_session_info {
    tmrt_memory_mode memory;
    uint32_t n_ctx, chunk, chunk_asked, threads;
    tmem_fit_result fit;        /**< the prediction for this session (tmem_fit) */
    uint64_t scratch_bytes;     /**< per-op scratch and the thread pool (the fit's "scratch" line) */
    uint64_t tokenizer_bytes;   /**< tmrt_session_desc::tokenizer_bytes (the "tokenizer" line) */
    uint64_t activation_arena;  /**< the bound plan's arena */
    uint64_t naive_bytes;       /**< naive mode: bytes malloc'd (weights included) */
    uint32_t n_past;            /**< tokens in the sequence now */
    tmrt_device_kind device;    /**< where it runs (the model's device) */
    uint64_t device_arena;      /**< Vulkan, typed: the device activation arena (largest plan) */
    uint64_t device_bytes;      /**< Vulkan: device bytes of the model's weights and this
                                     session's buffers (typed: its blocks; naive: its own
                                     VkDeviceMemory allocations) */
} tmrt_session_info;

/** @brief Create a session: admit it (tmrt_session_admit: tmem_fit for
 *  n_ctx tokens at the prefill chunk), refuse it before anything is allocated
 *  when it cannot fit the budget (the largest chunk down to TMRT_MIN_CHUNK
 *  that fits is used unless NO_CHUNK_SHRINK), then build the activation plans, heaps, KV cache and
 *  state slot, thread pool and token buffer.
 *  @param[out] out   NULL on failure.
 *  @param[out] info  may be NULL; on TMEM_OK and on TMEM_E_BUDGET it holds
 *                    the fit (breakdown, max_ctx_tokens) of the request.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_BUDGET (does not fit: see
 *          info->fit) | TMEM_E_NO_MEMORY | the errors of the library calls
 *  @par Threads safe (distinct sessions) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_create(tmrt_model *m, const tmrt_session_desc *desc,
                                                        tmrt_session **out, tmrt_session_info *info,
                                                        tmrt_error *err);

/** @brief The admission of tmrt_session_create, without creating: the
 *  same call tmrt_session_create makes first (`tmem fit --gguf` makes it
 *  too, so the fit and the admission are one arithmetic). tmem_fit for
 *  desc's context (0: the default rule), prefill chunk, threads and KV dtype
 *  with the runtime's layer graphs, its per-op scratch and thread pool (the
 *  "scratch" line) and desc->tokenizer_bytes (the "tokenizer" line),
 *  against desc->budget (0: the model context's budget, typed; none,
 *  naive); when that does not fit, the largest chunk down to TMRT_MIN_CHUNK
 *  that does (unless NO_CHUNK_SHRINK). Whenever it returns TMEM_OK,
 *  tmrt_session_create with the same model and desc finds room for every
 *  heap it makes, in a context whose budget has the fit's dirty bytes free
 *  (the tokenizer's included when counted).
 *  @param[out] out  n_ctx, chunk (the one admitted), chunk_asked, threads,
 *              scratch_bytes, tokenizer_bytes and the fit (on TMEM_E_BUDGET:
 *              at the asked chunk, with max_ctx_tokens, the largest context
 *              that fits the budget at that chunk); zeroed on other errors.
 *  @return TMEM_OK (fits) | TMEM_E_BUDGET (does not) | TMEM_E_INVALID_ARG |
 *          TMEM_E_UNSUPPORTED (KV dtype) | the errors of tmem_fit
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_admit(const tmrt_model *m, const tmrt_session_desc *desc,
                                                       tmrt_session_info *out, tmrt_error *err);

/** @brief Destroy a session. NULL is a no-op.
 *  @par Threads externally synchronized (no call on it in flight) */
TMEM_API void tmrt_session_destroy(tmrt_session *s);

/** @brief Read-back (sizes, fit, current length).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL); *out untouched on failure
 *  @par Threads as the session (one thread at a time) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_get_info(const tmrt_session *s, tmrt_session_info *out);

/** @brief The fit of this session (same model, chunk, dtypes, scratch,
 *  tokenizer) with the KV line of `n_tokens` instead of n_ctx: what a run
 *  that reached n_tokens holds (the paged cache commits only the blocks it
 *  uses; every other buffer was made whole at creation).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | the errors of tmem_fit; *out as
 *          tmem_fit leaves it on failure
 *  @par Threads as the session */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_fit(const tmrt_session *s, uint32_t n_tokens,
                                                     tmem_fit_result *out);

/** @brief Which positions of a batch get logits. */
typedef enum tmrt_logits_mode {
    TMRT_LOGITS_NONE = 0,
    TMRT_LOGITS_LAST,           /**< the batch's last position */
    TMRT_LOGITS_ALL             /**< every position, one row at a time */
} tmrt_logits_mode;

/** @brief A span of the prompt to evaluate. Zeroed = defaults. */
typedef struct tmrt_batch {
    const int32_t *tokens;      /**< n_tokens ids (entries under embd_rows are ignored) */
    uint32_t n_tokens;
    /** Optional input embeddings (vision): embd_count rows of n_embd floats
     *  replacing the token embeddings of positions [embd_first, embd_first +
     *  embd_count) of this batch. */
    const float *embd_rows;
    uint32_t embd_first, embd_count;
    /** Optional M-RoPE positions: 4 per token (t, h, w, extra), token-major.
     *  NULL: every component is the token's index in the sequence. */
    const int32_t *positions;
    tmrt_logits_mode logits;
} tmrt_batch;

/** @brief Receives one row of logits (n_vocab floats, valid during the call).
 *  `index` is the position inside the batch. Return TMEM_OK to go on. */
typedef tmem_status (*tmrt_logits_fn)(void *user, uint32_t index, const float *logits, uint32_t n_vocab);

/** @brief Run the batch through the model: prefill in chunks of the
 *  session's chunk size (the chunked DeltaNet form), one token at a time
 *  through the recurrent form. Appends to the KV cache and advances the
 *  recurrent state. Logits rows go to `fn` (may be NULL) and the last one
 *  stays in the session for tmrt_session_sample.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (token id out of range, n_tokens 0)
 *          | TMEM_E_FULL (the context would pass n_ctx: nothing evaluated)
 *          | TMEM_E_BUDGET (the KV cache could not grow) | fn's status
 *  @par Threads one thread per session */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_eval(tmrt_session *s, const tmrt_batch *batch,
                                                      tmrt_logits_fn fn, void *user, tmrt_error *err);

/** @brief Last logits row computed (n_vocab floats), NULL before any (and
 *  for NULL); valid until the next eval. @par Threads as the session */
TMEM_API const float *tmrt_session_logits(const tmrt_session *s);

/** @brief Tokens of the sequence so far (prompt and generated), in the
 *  session's OUTPUT_TOKENS buffer; NULL (and *n 0) for NULL.
 *  @param[out] n  may be NULL. @par Threads as the session */
TMEM_API const int32_t *tmrt_session_tokens(const tmrt_session *s, uint32_t *n);

/** @brief Keep the recurrent state at the current length (typed mode), so
 *  tmrt_session_rollback can come back to it: a prompt prefix reused by the
 *  next request. @return TMEM_OK | TMEM_E_INVALID_ARG (NULL)
 *  | TMEM_E_UNSUPPORTED (naive) | kv.h errors; the session is unchanged on
 *  failure @par Threads as the session */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_snapshot(tmrt_session *s);

/** @brief Go back to `n_tokens` (a snapshot's length, or the current one).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_NOT_FOUND (no
 *          snapshot there) | TMEM_E_UNSUPPORTED (naive); the session is
 *          unchanged on failure
 *  @par Threads as the session */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_rollback(tmrt_session *s, uint32_t n_tokens);

/* ====================================================================== */
/* Sampler                                                                  */
/* ====================================================================== */

/** @brief How to pick the next token. Zeroed = greedy. */
typedef struct tmrt_sampler_desc {
    float temperature;          /**< <= 0: greedy (argmax, lowest id on ties) */
    uint32_t top_k;             /**< 0 = all tokens */
    float top_p;                /**< 0 or >= 1: off */
    uint64_t seed;              /**< the sampler's random state starts from it */
} tmrt_sampler_desc;

/** @brief A sampler's random state (xorshift64*), seeded by tmrt_sampler_init. */
typedef struct tmrt_sampler {
    tmrt_sampler_desc desc;
    uint64_t state;
} tmrt_sampler;

/** @brief Seed a sampler from its desc (NULL desc: greedy). Cannot fail.
 *  @par Threads safe (distinct samplers) */
TMEM_API void tmrt_sampler_init(tmrt_sampler *sp, const tmrt_sampler_desc *desc);

/** @brief Pick a token from the session's last logits. Scratch comes from
 *  the session's scratch heap. @return TMEM_OK | TMEM_E_STATE (no logits yet)
 *  | TMEM_E_INVALID_ARG (NULL); *out untouched on failure
 *  @par Threads as the session */
TMEM_API TMEM_NODISCARD tmem_status tmrt_session_sample(tmrt_session *s, tmrt_sampler *sp, int32_t *out);

/** @brief Pick a token from any logits row; `scratch` holds n_vocab x 8
 *  bytes (NULL is allowed for greedy). Pure; cannot fail (-1 for NULL
 *  logits or n_vocab 0). @par Threads safe (distinct samplers) */
TMEM_API int32_t tmrt_sample(const float *logits, uint32_t n_vocab, tmrt_sampler *sp, void *scratch);

TMEM_EXTERN_C_END

#endif /* TMEMRT_RUNTIME_H */
