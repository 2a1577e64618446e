/**
 * @file server.h
 * @brief Several conversations on one mapped model and one context budget:
 *        batched decode, interleaved prefill, suspend to disk.
 *
 * A tmrt_server owns up to max_sessions sessions (runtime.h) of one model.
 * The weights are the model's one mapping; the working memory (the planned
 * activation arena, per-op scratch, thread pool, a logits row per batch
 * row) is one set, the server's, shared by all of them; a session holds
 * only its KV blocks, recurrent state, token ids and last logits row.
 *
 * tmrt_server_step does one unit of work: at most one prefill chunk of one
 * session (round robin), then the next token of every generating session
 * as one batched forward pass (every weight matrix, the LM head included,
 * read once for all rows). A long prompt therefore never holds the others'
 * decode back by more than one chunk. Each session's greedy output is bit
 * for bit what tmrt_session_eval + tmrt_session_sample give alone with the
 * same chunk size (tests/runtime/test_server.c).
 *
 * Suspend: an idle session's sequence is written to a file in suspend_dir
 * (tmrt_session_suspend: complete or absent, fsynced: clean page cache the
 * OS may drop and no footprint limit counts) and its memory given back; a
 * request to it resumes it first, with the same bits. Suspends happen on
 * tmrt_server_suspend, tmrt_server_reclaim (the memory-warning case), the
 * context's reclaim step (a commit that would cross a budget suspends idle
 * sessions, least recently used first, before it fails) and, with
 * TMRT_SERVER_SUSPEND_ON_PRESSURE, the context's pressure callback (the
 * next step suspends every idle session).
 *
 * @code
 *   tmrt_server_desc d = {0};
 *   d.max_sessions = 4; d.suspend_dir = "/var/tmp/app";
 *   tmrt_server *srv;  uint32_t id;
 *   if (tmrt_server_create(model, &d, &srv, &e)) ...;
 *   if (tmrt_server_open(srv, &id, &e)) ...;
 *   tmrt_server_request rq = {.tokens = prompt, .n_tokens = n, .n_predict = 64};
 *   if (tmrt_server_submit(srv, id, &rq, &e)) ...;
 *   for (;;) {
 *       tmrt_server_step_info si;
 *       if (tmrt_server_step(srv, &si, &e) || si.idle) break;
 *       int32_t out[64]; uint32_t n; tmrt_server_slot_info in;
 *       (void)tmrt_server_read(srv, id, out, 64, &n, &in);   // new tokens
 *   }
 *   tmrt_server_destroy(srv);
 * @endcode
 *
 * @par Threads
 * A server is externally synchronized: one thread at a time in any call
 * (tmem serve holds a mutex). The reclaim step it registers runs on the
 * thread whose allocation needed room, inside a server call: it only
 * suspends idle sessions, never one that call is working on.
 */
#ifndef TMEMRT_SERVER_H
#define TMEMRT_SERVER_H

#include <tmemrt/runtime.h>

TMEM_EXTERN_C_BEGIN

/** @brief Most sessions (and batch rows) of one server. */
#define TMRT_SERVER_MAX_SESSIONS 64u
/** @brief Most stop tokens of one request. */
#define TMRT_SERVER_MAX_STOP 8u

typedef struct tmrt_server tmrt_server;

/** @brief Server flags. */
typedef enum tmrt_server_flag {
    /** Set the context's pressure callback: at WARNING or worse the next
     *  step suspends every idle session. */
    TMRT_SERVER_SUSPEND_ON_PRESSURE = 1u << 0,
    /** Do not register the context reclaim step (budget hits then fail
     *  without suspending anyone). */
    TMRT_SERVER_NO_RECLAIM = 1u << 1,
} tmrt_server_flag;

/** @brief Describes a server. Zeroed = defaults. */
typedef struct tmrt_server_desc {
    /** Every session's: n_ctx, chunk (the server's prefill chunk), threads
     *  (the server's pool), kv_dtype. budget, flags, on_evict are ignored:
     *  the context's budget is the one budget. */
    tmrt_session_desc session;
    uint32_t max_sessions;      /**< 0 = 4; 1..TMRT_SERVER_MAX_SESSIONS */
    uint32_t max_batch;         /**< decode rows per step; 0 = max_sessions */
    const char *suspend_dir;    /**< an existing directory for suspended sessions; NULL: none
                                     (suspend answers TMEM_E_UNSUPPORTED, reclaim frees nothing) */
    uint32_t flags;             /**< tmrt_server_flag bits */
} tmrt_server_desc;

/** @brief Create a server: the shared run (activation arena planned for the
 *  chunk and for max_batch rows, scratch, pool, batch logits). Typed models only.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (naive model)
 *          | TMEM_E_BUDGET | TMEM_E_NO_MEMORY | the errors of tmrt_session_create
 *  @par Threads safe (distinct servers) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_create(tmrt_model *m, const tmrt_server_desc *desc,
                                                       tmrt_server **out, tmrt_error *err);

/** @brief Destroy the server, its sessions and their suspend files. NULL is a no-op. */
TMEM_API void tmrt_server_destroy(tmrt_server *srv);

/** @brief Open a new, empty conversation.
 *  @param[out] id  nonzero on success, 0 on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (max_sessions open)
 *          | TMEM_E_BUDGET (no room for its state even after suspending
 *          idle sessions) | the errors of tmrt_session_create */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_open(tmrt_server *srv, uint32_t *id, tmrt_error *err);

/** @brief Close a conversation: its session, its memory and any suspend
 *  file go at once (a client that went away). Unknown ids are ignored. */
TMEM_API void tmrt_server_close(tmrt_server *srv, uint32_t id);

/** @brief What a request asks. Zeroed = nothing. */
typedef struct tmrt_server_request {
    const int32_t *tokens;      /**< appended to the conversation (copied) */
    uint32_t n_tokens;          /**< may be 0 only when the conversation has logits to go on from */
    uint32_t n_predict;         /**< tokens to generate (0: only evaluate) */
    tmrt_sampler_desc sampler;  /**< zeroed: greedy */
    int32_t stop[TMRT_SERVER_MAX_STOP]; /**< generation ends after one of these (it is emitted) */
    uint32_t n_stop;
} tmrt_server_request;

/** @brief Queue a request on an idle conversation (resuming it first when
 *  suspended). The last token generated by the previous request, not yet
 *  evaluated, goes before the new tokens.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (unknown id, token outside the
 *          vocabulary, n_stop too large, nothing to evaluate)
 *          | TMEM_E_STATE (a request is running on it) | TMEM_E_FULL (the
 *          prompt and n_predict pass the context) | TMEM_E_NO_MEMORY
 *          | the errors of tmrt_session_resume; nothing queued on failure */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_submit(tmrt_server *srv, uint32_t id,
                                                       const tmrt_server_request *rq, tmrt_error *err);

/** @brief Stop the conversation's request now (the tokens evaluated so far
 *  stay). Unknown or idle ids: no-op. */
TMEM_API void tmrt_server_cancel(tmrt_server *srv, uint32_t id);

/** @brief What one step did. */
typedef struct tmrt_server_step_info {
    uint32_t prefill_tokens;    /**< tokens of the one prefill chunk (0: none) */
    uint32_t decode_rows;       /**< sequences in the batched decode (0: none) */
    uint32_t suspended;         /**< sessions this step suspended under pressure */
    bool idle;                  /**< no request has work left */
} tmrt_server_step_info;

/** @brief One unit of work (see the file comment). A request that fails
 *  (its KV cannot grow: TMEM_E_BUDGET, the context is full) ends with
 *  finish ERROR and its status in tmrt_server_slot_info; the step goes on
 *  with the others and returns TMEM_OK.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_step(tmrt_server *srv, tmrt_server_step_info *info, tmrt_error *err);

/** @brief Where a conversation is. */
typedef enum tmrt_server_state {
    TMRT_SERVER_IDLE = 0,       /**< no request (or it finished) */
    TMRT_SERVER_PREFILL,        /**< evaluating its new tokens */
    TMRT_SERVER_DECODE          /**< generating */
} tmrt_server_state;

/** @brief Why a request ended. */
typedef enum tmrt_server_finish {
    TMRT_SERVER_RUNNING = 0,    /**< not finished (or never started) */
    TMRT_SERVER_LENGTH,         /**< n_predict tokens, or the context is full */
    TMRT_SERVER_STOP,           /**< a stop token */
    TMRT_SERVER_CANCELLED,      /**< tmrt_server_cancel */
    TMRT_SERVER_ERROR           /**< see status */
} tmrt_server_finish;

/** @brief A conversation's read-back. */
typedef struct tmrt_server_slot_info {
    tmrt_server_state state;
    tmrt_server_finish finish;
    tmem_status status;         /**< finish ERROR: what failed */
    bool suspended;
    uint32_t n_past;            /**< tokens in the conversation */
    uint32_t n_generated;       /**< by the current (or last) request */
    uint32_t n_prompt;          /**< tokens the current (or last) request evaluated */
} tmrt_server_slot_info;

/** @brief Take the tokens generated since the last read (up to cap; the
 *  rest stay for the next read).
 *  @param[out] tokens  cap ids (may be NULL when cap is 0)
 *  @param[out] n       how many were taken (0 on failure)
 *  @param[out] info    may be NULL
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (unknown id) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_read(tmrt_server *srv, uint32_t id, int32_t *tokens, uint32_t cap,
                                                     uint32_t *n, tmrt_server_slot_info *info);

/** @brief Suspend an idle conversation to its file now.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (unknown id) | TMEM_E_STATE (a
 *          request is running, or already suspended) | TMEM_E_UNSUPPORTED
 *          (no suspend_dir) | the errors of tmrt_session_suspend (the
 *          conversation stays in memory) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_suspend(tmrt_server *srv, uint32_t id, tmrt_error *err);

/** @brief Resume a suspended conversation now (submit does it when needed).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (not suspended)
 *          | the errors of tmrt_session_resume */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_resume(tmrt_server *srv, uint32_t id, tmrt_error *err);

/** @brief Suspend idle conversations, least recently used first, until
 *  `bytes` of the context's committed memory are given back (UINT64_MAX:
 *  every idle one). *freed (may be NULL): the bytes given back.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_reclaim(tmrt_server *srv, uint64_t bytes, uint64_t *freed);

/** @brief Counters (cheap). */
typedef struct tmrt_server_stats {
    uint32_t sessions;          /**< open */
    uint32_t active;            /**< open and in memory */
    uint32_t suspended;         /**< open and in their files */
    uint32_t busy;              /**< with a request running */
    uint32_t max_sessions, max_batch, chunk, n_ctx;
    uint64_t suspends, resumes, suspend_failures;
    uint64_t steps, prefill_tokens, decode_tokens, batched_steps;
    uint64_t suspend_bytes;     /**< bytes written to suspend files, in all */
} tmrt_server_stats;

/** @brief Read the counters. @return TMEM_OK | TMEM_E_INVALID_ARG */
TMEM_API TMEM_NODISCARD tmem_status tmrt_server_get_stats(const tmrt_server *srv, tmrt_server_stats *out);

/** @brief The conversation's last logits row (n_vocab floats; valid until
 *  the next step or call on it), NULL when it has none, is suspended or the
 *  id is unknown: what tests compare bit for bit. */
TMEM_API const float *tmrt_server_logits(tmrt_server *srv, uint32_t id);

/** @brief The server's model (NULL for NULL). */
TMEM_API tmrt_model *tmrt_server_model(const tmrt_server *srv);

TMEM_EXTERN_C_END

#endif /* TMEMRT_SERVER_H */
