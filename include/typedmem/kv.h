/**
 * @file kv.h
 * @brief Inference memory: KV and recurrent-state layouts and their sizes, a
 *        paged KV cache with copy-on-write forks, per-sequence recurrent
 *        state with snapshots, and admission / eviction under budgets.
 *
 * @par Layouts and sizes (pure functions, no context)
 * tmem_kv_layout describes the attention KV of a model (layers that keep KV,
 * KV heads, head_dim, dtype, tokens per block); tmem_recurrent_layout the
 * fixed per-sequence state of linear-attention layers (Gated DeltaNet / SSM:
 * a delta-rule matrix per value head plus the short-convolution tail). The
 * size functions are what the fit calculator uses, so a size the cache
 * allocates and a size `tmem fit` predicts are the same number.
 * Qwen3.5-0.8B, f16: 12,288 bytes of KV per token (6 full-attention layers x
 * K,V x 2 KV heads x 256 x 2 B) and 10,100,736 bytes of recurrent state per
 * sequence (18 DeltaNet layers x (16 x 128 x 128 + 3 x 6144) x 2 B).
 *
 * @par Paged KV cache
 * Memory is split into blocks of `block_tokens` tokens. One block holds those
 * tokens for every layer: for layer l, K rows then V rows, one row per token
 * of kv_heads x head_dim elements (llama.cpp's row layout; q8_0 rows are
 * head_dim/32 blocks of 34 bytes per head). Blocks are fixed-size slots of a
 * range carved from the KV type's pool (default `/memory/kv`), so the type's and
 * the context's budgets apply to them like to any other allocation.
 * Blocks (and state slots and snapshots) are whole pool granules committed
 * when handed out and decommitted when given back, so an eviction lowers
 * the budget charge at once, by what its event reports. Each
 * sequence has a block table; tmem_kv_seq_fork() shares every block of the
 * parent (reference counts) and a write through tmem_kv_seq_kv() with
 * TMEM_KV_WRITE into a shared block copies that block first (copy-on-write),
 * so writes after a fork never show through to the other sequence.
 *
 * @par Recurrent state and snapshots
 * With a recurrent layout, every sequence owns one state slot in the state
 * type (default `/memory/state`). tmem_kv_snapshot_take() copies a
 * sequence's state at its current length into the snapshot type (default
 * `/memory/snapshots`, created if absent); tmem_kv_seq_rollback() and
 * tmem_kv_seq_fork_at() restore it — the one thing prefix caching of KV alone
 * cannot do for a hybrid model. Snapshots are evicted least-recently-used
 * when the snapshot budget is reached, and each drop is reported.
 *
 * @par Admission and eviction
 * tmem_kv_admit() answers "does this request fit now?" and, if not, runs the
 * policy: drop snapshots (LRU), then evict whole sequences (LRU, never the
 * requester, never a pinned one), then look for a smaller prefill chunk. The
 * cache also registers a context reclaim step, so a budget hit anywhere can
 * evict through the same policy. Every drop and eviction is reported through
 * the desc's callback; an evicted sequence's handle then answers
 * TMEM_E_STATE to every call except tmem_kv_seq_free() (which releases it)
 * and tmem_kv_seq_get_info(). A live sequence is never truncated silently.
 *
 * @par Device memory
 * The KV, state and snapshot types may be device types (a GPU backend
 * attached: typedmem/gpu.h). The cache then never touches their bytes from
 * the host: blocks and slots are named by heap offsets
 * (tmem_kv_block_offset, tmem_kv_seq_block_offsets,
 * tmem_kv_seq_state_offset, the heaps from tmem_kv_cache_get_device), and
 * every copy-on-write, fork, snapshot, rollback and zeroing of a new state
 * is the backend's copy / fill (Vulkan: vkCmdCopyBuffer / vkCmdFillBuffer,
 * through tmem_heap_copy / tmem_heap_fill, waited for), so the bytes are in
 * place before the call returns. A device memory object (a Vulkan chunk)
 * holds many blocks at the device's buffer alignment; it is committed with
 * its first block and decommitted with its last, so eviction gives bytes
 * back when it empties one (events report exactly that). The state snapshots
 * default to "/memory/device-snapshots" (the state type's placement): state
 * and snapshot are copied into each other on the device. Calls that return
 * host addresses (tmem_kv_seq_kv with k/v, tmem_kv_block_ptr,
 * tmem_kv_seq_block_ptrs, tmem_kv_seq_state) answer NULL or
 * TMEM_E_UNSUPPORTED on a device cache. A device copy that fails (queue
 * error, device lost, an injected fault) returns its status and changes
 * nothing the caller can see, except that a snapshot being overwritten is
 * dropped.
 *
 * @par Threads
 * A cache has an internal lock: calls on one cache may come from several
 * threads, and the reclaim step may run on any thread that hits a budget
 * (it skips the cache, returning 0, while another thread is inside it).
 * Pointers returned by tmem_kv_seq_kv(), tmem_kv_seq_state(),
 * tmem_kv_block_ptr() and tmem_kv_seq_block_ptrs() stay valid until the next
 * call that changes that sequence (append, truncate, rollback, a fork, a
 * copy-on-write, free) or evicts it; pin a sequence (tmem_kv_seq_pin) while a
 * kernel reads or writes it. A kernel takes the sequence's block addresses
 * once per step (tmem_kv_seq_block_ptrs) and indexes them without the lock.
 *
 * @par Quick start
 * @code
 *   tmem_kv_cache_desc d = {0};
 *   d.kv = (tmem_kv_layout){.layers = 6, .kv_heads = 2, .head_dim = 256};
 *   d.recurrent = (tmem_recurrent_layout){.layers = 18, .key_heads = 16,
 *       .value_heads = 16, .key_dim = 128, .value_dim = 128, .conv_kernel = 4};
 *   tmem_kv_cache *kv;
 *   if (tmem_kv_cache_create(ctx, &d, &kv) != TMEM_OK) return;
 *   tmem_kv_seq s;
 *   void *k, *v;
 *   tmem_status st = tmem_kv_seq_create(kv, &s);
 *   if (st == TMEM_OK) st = tmem_kv_seq_append(kv, s, 100);   // room for 100 tokens
 *   if (st == TMEM_OK) st = tmem_kv_seq_kv(kv, s, 0, 42, TMEM_KV_WRITE, &k, &v);
 *   ...   // TMEM_E_BUDGET: the policy could not make room; TMEM_E_STATE: s was evicted
 *   tmem_kv_cache_destroy(kv);
 * @endcode
 */
#ifndef TYPEDMEM_KV_H
#define TYPEDMEM_KV_H

#include "context.h"
#include "heap.h"

TMEM_EXTERN_C_BEGIN

/* ======================================================================
 * Layouts and sizes
 * ====================================================================== */

/** @brief Element type of cached K/V or recurrent state. */
typedef enum tmem_kv_dtype {
    TMEM_KV_DTYPE_DEFAULT = 0, /**< f16 for KV, f32 for recurrent state (llama.cpp's defaults) */
    TMEM_KV_DTYPE_F16,
    TMEM_KV_DTYPE_BF16,
    TMEM_KV_DTYPE_F32,
    TMEM_KV_DTYPE_Q8_0,        /**< 32 elements in 34 bytes (f16 scale + 32 int8) */
    TMEM_KV_DTYPE_COUNT
} tmem_kv_dtype;

/** @brief Default tokens per KV block (vLLM's default). */
#define TMEM_KV_DEFAULT_BLOCK_TOKENS 16u

/** @brief Attention KV layout. Zeroed dtype / block_tokens take defaults. */
typedef struct tmem_kv_layout {
    uint32_t layers;        /**< layers that keep KV (full-attention layers of a hybrid) */
    uint32_t kv_heads;      /**< KV heads (GQA: fewer than query heads) */
    uint32_t head_dim;      /**< elements per head; multiple of 32 for q8_0 */
    tmem_kv_dtype dtype;    /**< DEFAULT = f16 */
    uint32_t block_tokens;  /**< tokens per block; 0 = TMEM_KV_DEFAULT_BLOCK_TOKENS */
} tmem_kv_layout;

/** @brief Recurrent (linear-attention / SSM) state layout, per sequence.
 *  Per layer the state is value_heads matrices of key_dim x value_dim (the
 *  delta-rule state) plus (conv_kernel - 1) x conv_channels elements of
 *  short-convolution history. */
typedef struct tmem_recurrent_layout {
    uint32_t layers;        /**< recurrent layers (Gated DeltaNet layers of a hybrid) */
    uint32_t key_heads;
    uint32_t value_heads;   /**< heads that carry a state matrix (>= key_heads in Qwen3.5) */
    uint32_t key_dim;
    uint32_t value_dim;
    uint32_t conv_kernel;   /**< short-conv kernel width; 0 or 1 = no conv state */
    uint32_t conv_channels; /**< 0 = 2 x key_heads x key_dim + value_heads x value_dim (q, k, v) */
    tmem_kv_dtype dtype;    /**< DEFAULT = f32 */
} tmem_recurrent_layout;

/** @brief Per-layer and total sizes of a recurrent layout. */
typedef struct tmem_recurrent_sizes {
    uint64_t conv_bytes;    /**< short-conv history of one layer */
    uint64_t ssm_bytes;     /**< delta-rule state of one layer */
    uint64_t layer_bytes;   /**< conv_bytes + ssm_bytes (conv first in a slot) */
    uint64_t total_bytes;   /**< layer_bytes x layers: one sequence */
} tmem_recurrent_sizes;

/** @brief Name of a dtype.
 *  @return "f16", "bf16", "f32", "q8_0" or "default"; "?" outside the enum; never NULL.
 *  @par Threads safe */
TMEM_API const char *tmem_kv_dtype_name(tmem_kv_dtype dtype);

/** @brief Bytes of `elements` elements of `dtype` (DEFAULT is f16 here).
 *  @param[out] out  0 on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL out, dtype outside the enum,
 *          q8_0 with elements not a multiple of 32) | TMEM_E_OVERFLOW
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_dtype_bytes(tmem_kv_dtype dtype, uint64_t elements, uint64_t *out);

/** @brief Bytes of K and V for one token over all layers of the layout.
 *  @param[out] out  0 on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, a zero layers / kv_heads /
 *          head_dim, bad dtype, q8_0 with head_dim % 32) | TMEM_E_OVERFLOW
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_layout_token_bytes(const tmem_kv_layout *layout, uint64_t *out);

/** @brief Bytes of one block (token bytes x block_tokens).
 *  @return as tmem_kv_layout_token_bytes @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_layout_block_bytes(const tmem_kv_layout *layout, uint64_t *out);

/** @brief Blocks and bytes the paged cache allocates for one sequence of
 *  `tokens` tokens (blocks rounded up; 0 tokens = 0 bytes).
 *  @param[out] blocks  may be NULL.  @param[out] bytes  may be NULL.
 *  @return as tmem_kv_layout_token_bytes @par Threads safe
 *  On failure *blocks and *bytes are 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_layout_bytes(const tmem_kv_layout *layout,
                                                         uint64_t tokens, uint64_t *blocks,
                                                         uint64_t *bytes);

/** @brief Sizes of a recurrent layout; `out->total_bytes` is one sequence's slot.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, zero layers / heads / dims,
 *          bad dtype, q8_0 with a part not a multiple of 32 elements)
 *          | TMEM_E_OVERFLOW
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_recurrent_layout_sizes(const tmem_recurrent_layout *layout, tmem_recurrent_sizes *out);

/** @brief Shorthand: bytes of one sequence's recurrent state.
 *  @return as tmem_recurrent_layout_sizes @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_recurrent_layout_bytes(const tmem_recurrent_layout *layout, uint64_t *out);

/* ======================================================================
 * The cache
 * ====================================================================== */

typedef struct tmem_kv_cache tmem_kv_cache;

/** @brief Sequence handle: slot and generation; 0 (TMEM_KV_SEQ_NONE) is never
 *  valid. A freed handle answers TMEM_E_NOT_FOUND (TMEM_E_DOUBLE_FREE to a
 *  second free); an evicted one TMEM_E_STATE. */
typedef uint64_t tmem_kv_seq;
#define TMEM_KV_SEQ_NONE 0u

/** @brief Snapshot handle; 0 (TMEM_KV_SNAP_NONE) is never valid. */
typedef uint64_t tmem_kv_snap;
#define TMEM_KV_SNAP_NONE 0u

/** @brief What the eviction callback reports. */
typedef enum tmem_kv_event_kind {
    TMEM_KV_EVENT_SNAPSHOT_DROPPED = 0, /**< a snapshot was evicted (LRU) */
    TMEM_KV_EVENT_SEQ_EVICTED           /**< a whole sequence was evicted */
} tmem_kv_event_kind;

/** @brief Why memory was taken back. */
typedef enum tmem_kv_evict_reason {
    TMEM_KV_REASON_ADMISSION = 0, /**< tmem_kv_admit() made room */
    TMEM_KV_REASON_RECLAIM,       /**< the context's reclaim step (a budget hit elsewhere) */
    TMEM_KV_REASON_SNAPSHOT_BUDGET/**< room for a newer snapshot */
} tmem_kv_evict_reason;

/** @brief One eviction, as reported to tmem_kv_evict_fn. */
typedef struct tmem_kv_event {
    tmem_kv_event_kind kind;
    tmem_kv_evict_reason reason;
    tmem_kv_seq seq;        /**< the evicted sequence, or the snapshot's sequence */
    tmem_kv_snap snap;      /**< SNAPSHOT_DROPPED: the snapshot; else 0 */
    uint64_t tokens;        /**< sequence length when evicted / snapshot position */
    uint64_t bytes;         /**< committed bytes this eviction gave back (shared blocks not counted) */
} tmem_kv_event;

/** @brief Eviction callback. Runs inside the cache's lock on the thread that
 *  triggered the eviction: it may read the event, record it and return; it
 *  must not call back into this cache. */
typedef void (*tmem_kv_evict_fn)(tmem_kv_cache *cache, const tmem_kv_event *event, void *user);

/** @brief Cache flags (tmem_kv_cache_desc::flags). */
typedef enum tmem_kv_cache_flag {
    TMEM_KV_CACHE_NO_RECLAIM = 1u << 0,      /**< do not register a context reclaim step */
    TMEM_KV_POLICY_KEEP_SNAPSHOTS = 1u << 1, /**< admission/reclaim never drop snapshots */
    TMEM_KV_POLICY_NO_EVICT = 1u << 2,       /**< admission/reclaim never evict sequences */
    TMEM_KV_POLICY_CHUNK_FIRST = 1u << 3,    /**< admission tries a smaller prefill chunk before evicting */
    TMEM_KV_CACHE_FLAG_MASK = 0xFu
} tmem_kv_cache_flag;

/** @brief Describes a cache. Zeroed = defaults; at least one of kv.layers,
 *  recurrent.layers must be non-zero. */
typedef struct tmem_kv_cache_desc {
    tmem_kv_layout kv;                /**< layers 0 = no attention KV (pure recurrent model) */
    tmem_recurrent_layout recurrent;  /**< layers 0 = no recurrent state (dense model) */
    tmem_type *kv_type;               /**< NULL = the KV_CACHE role's type, else "/memory/kv" */
    tmem_type *state_type;            /**< NULL = the RECURRENT_STATE role's type, else "/memory/state" */
    tmem_type *snapshot_type;         /**< NULL = "/memory/snapshots", created (HOST, GROWING) if absent */
    uint64_t kv_pool_bytes;           /**< range of the KV type's pool carved for blocks; 0 = the
                                           type's budget, else its reserve (split evenly when the
                                           state or snapshots share the type) */
    uint64_t state_pool_bytes;        /**< same for the state type */
    uint64_t snapshot_budget;         /**< most snapshot bytes; 0 = the snapshot type's budget, else its reserve */
    uint32_t max_sequences;           /**< live + evicted handles; 0 = 1024 */
    uint32_t max_tokens;              /**< per sequence; 0 = no limit below 2^31 */
    uint32_t flags;                   /**< tmem_kv_cache_flag bits */
    int32_t reclaim_priority;         /**< of the context reclaim step; 0 = 100 */
    tmem_kv_evict_fn on_evict;        /**< may be NULL (evictions still happen, unreported) */
    void *user;                       /**< passed to on_evict */
} tmem_kv_cache_desc;

/** @brief Cache-wide statistics (walks the block tables for the used bytes). */
typedef struct tmem_kv_cache_stats {
    uint64_t block_bytes;       /**< bytes of one KV block */
    uint64_t block_slot_bytes;  /**< what one block commits: block_bytes rounded to the pool granule */
    uint64_t blocks_used;       /**< physical blocks allocated */
    uint64_t blocks_shared;     /**< of those, referenced by more than one sequence */
    uint64_t block_refs;        /**< sum of block-table entries over live sequences */
    uint64_t kv_bytes_allocated;/**< blocks_used x block_slot_bytes (committed, charged) */
    uint64_t kv_bytes_used;     /**< bytes holding tokens, counting a shared token once */
    uint64_t kv_bytes_logical;  /**< bytes the sequences would hold without sharing */
    uint64_t state_bytes;       /**< recurrent slots committed (granule-rounded) */
    uint64_t snapshot_bytes;    /**< snapshots committed (granule-rounded) */
    uint32_t sequences;         /**< live sequences */
    uint32_t evicted;           /**< evicted handles not yet freed */
    uint32_t snapshots;
    uint64_t cow_copies;        /**< blocks copied on write, total */
    uint64_t seqs_evicted;      /**< total sequences evicted */
    uint64_t snaps_dropped;     /**< total snapshots evicted */
} tmem_kv_cache_stats;

/** @brief Where a cache's slots live, for a device cache's kernels. */
typedef struct tmem_kv_device_info {
    tmem_heap *kv_heap;          /**< heap of the KV blocks (NULL without KV) */
    tmem_heap *state_heap;       /**< heap of the recurrent slots (NULL without state) */
    tmem_heap *snapshot_heap;    /**< heap of the snapshots (NULL without state) */
    bool kv_device;              /**< blocks have no host address (device type) */
    bool state_device;           /**< state slots have no host address */
    uint64_t block_bytes;        /**< bytes of one block (kv.h's block layout) */
    uint64_t block_stride;       /**< distance between packed blocks: block_bytes
                                      raised to the device's buffer alignment
                                      (host: to the pool granule) */
    uint32_t blocks_per_memory;  /**< blocks in one device memory object (1 on host) */
    uint64_t memory_bytes;       /**< heap bytes of one such group: the blocks at heap
                                      offsets [k x memory_bytes, (k+1) x memory_bytes)
                                      lie in one memory object (one VkBuffer covers them) */
    uint64_t state_bytes;        /**< bytes of one sequence's state */
    uint64_t state_stride;       /**< distance between state slots */
} tmem_kv_device_info;

/** @brief Create a cache over the KV, state and snapshot types (see the desc).
 *  Carves a range of each type's pool for fixed-size slots and, unless
 *  NO_RECLAIM, registers a reclaim step with the context. A recurrent cache
 *  without a snapshot_type creates "/memory/snapshots" (budget
 *  snapshot_budget) if the context lacks it, after every check on desc has
 *  passed; it stays in the context and later caches share it. A failure
 *  leaves the context as it was, except when it happens after that type was
 *  created (out of memory, reclaim table full): the type then stays.
 *  @param[out] out  NULL on failure.
 *  A cache whose state type is a device type (see "Device memory" below)
 *  uses "/memory/device-snapshots" instead, created with the state type's
 *  placement.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx/desc/out, bad layout,
 *          unknown flags, type of another context, a FILE type, a snapshot
 *          type on the other side of the bus from the state type)
 *          | TMEM_E_NOT_FOUND (no KV / state type) | TMEM_E_ALIGNMENT /
 *          TMEM_E_OVERFLOW (device type: one block or state slot is larger
 *          than one device memory object; raise tmem_gpu_desc::chunk_size)
 *          | TMEM_E_FULL (pool reserve taken, range smaller than one slot,
 *          or than one device memory object, reclaim table full)
 *          | TMEM_E_NO_MEMORY | the errors of tmem_type_create (snapshots)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_cache_create(tmem_context *ctx,
                                                         const tmem_kv_cache_desc *desc,
                                                         tmem_kv_cache **out);

/** @brief Destroy a cache, its sequences, snapshots and pool ranges; unregisters the
 *  reclaim step. No eviction events are reported. NULL is a no-op.
 *  tmem_context_destroy destroys the caches still alive (before the types
 *  they use); a cache must not be destroyed again after that.
 *  @par Threads externally synchronized: no other call on the cache in flight. */
TMEM_API void tmem_kv_cache_destroy(tmem_kv_cache *cache);

/** @brief The heaps and geometry behind the cache (see "Device memory").
 *  The heaps belong to the cache: use them for tmem_heap_device_span and
 *  tmem_vk_buffer_create, never to allocate or free.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_cache_get_device(tmem_kv_cache *cache, tmem_kv_device_info *out);

/** @brief Read the cache's counters. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_cache_get_stats(tmem_kv_cache *cache, tmem_kv_cache_stats *out);

/** @brief Walk every sequence, block and snapshot and verify the invariants
 *  (reference counts equal block-table references, lengths fit the tables,
 *  LRU lists consistent, counters match). Slow, for tests.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_CORRUPT @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_cache_check(tmem_kv_cache *cache);

/* ---- sequences ---- */

/** @brief State of a sequence handle. */
typedef enum tmem_kv_seq_status {
    TMEM_KV_SEQ_LIVE = 0,
    TMEM_KV_SEQ_EVICTED       /**< memory taken back; only get_info and free work */
} tmem_kv_seq_status;

/** @brief Read-back of one sequence. */
typedef struct tmem_kv_seq_info {
    tmem_kv_seq_status status;
    uint32_t tokens;          /**< current length (0 when evicted) */
    uint32_t blocks;          /**< block-table entries */
    uint32_t shared_blocks;   /**< of those, shared with another sequence */
    uint32_t snapshots;       /**< snapshots of this sequence */
    bool pinned;
    uint64_t exclusive_bytes; /**< KV + state bytes freeing it would give back */
} tmem_kv_seq_info;

/** @brief New empty sequence; allocates its recurrent slot (zeroed) if the
 *  cache has a recurrent layout.
 *  @param[out] out  TMEM_KV_SEQ_NONE on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (max_sequences)
 *          | TMEM_E_BUDGET (state slot over budget after reclaim) | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_create(tmem_kv_cache *cache, tmem_kv_seq *out);

/** @brief Free a live or evicted sequence: its blocks lose a reference (freed
 *  at zero), its slot and snapshots are freed, the handle becomes stale.
 *  TMEM_KV_SEQ_NONE is a no-op (TMEM_OK, whatever the cache).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL cache, malformed handle)
 *          | TMEM_E_DOUBLE_FREE (handle already freed) | TMEM_E_NOT_FOUND (not
 *          this cache's). Nothing changes on failure. @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_free(tmem_kv_cache *cache, tmem_kv_seq seq);

/** @brief Grow the sequence by `tokens` tokens, allocating blocks as needed.
 *  All or nothing. The new tokens' K/V are uninitialised until written.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (tokens 0) | TMEM_E_NOT_FOUND (stale
 *          handle) | TMEM_E_STATE (evicted) | TMEM_E_OVERFLOW (past max_tokens)
 *          | TMEM_E_BUDGET | TMEM_E_FULL | TMEM_E_NO_MEMORY @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_append(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens);

/** @brief Shorten the sequence to `tokens` tokens, freeing whole blocks past
 *  it and dropping its snapshots beyond `tokens`. The recurrent state is NOT
 *  changed (it cannot be un-run): use tmem_kv_seq_rollback for a hybrid model.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (tokens > length) | TMEM_E_NOT_FOUND
 *          | TMEM_E_STATE @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_truncate(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens);

/** @brief Roll the sequence back to `tokens`: truncate the KV and, with a
 *  recurrent layout, restore the state from this sequence's snapshot at
 *  exactly `tokens` (tokens == length with no snapshot is a no-op).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (tokens > length) | TMEM_E_NOT_FOUND
 *          (stale handle, or no snapshot at `tokens`: nothing changed)
 *          | TMEM_E_STATE @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_rollback(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens);

/** @brief New sequence sharing all of `src`'s blocks (copy-on-write) with a
 *  copy of its recurrent state: tmem_kv_seq_fork_at(src's length).
 *  @param[out] out  TMEM_KV_SEQ_NONE on failure.
 *  @return as tmem_kv_seq_create, plus TMEM_E_NOT_FOUND / TMEM_E_STATE for src
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_fork(tmem_kv_cache *cache, tmem_kv_seq src, tmem_kv_seq *out);

/** @brief New sequence sharing `src`'s first `tokens` tokens; with a recurrent
 *  layout its state comes from src's snapshot at `tokens` (or, when there is
 *  none and tokens == src's length, from src's current state) — the same
 *  rule as tmem_kv_seq_rollback.
 *  @return as tmem_kv_seq_fork, plus TMEM_E_INVALID_ARG (tokens > length)
 *          and TMEM_E_NOT_FOUND (no snapshot at tokens) @par Threads safe
 *  On failure *out is TMEM_KV_SEQ_NONE. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_fork_at(tmem_kv_cache *cache, tmem_kv_seq src,
                                                        uint32_t tokens, tmem_kv_seq *out);

/** @brief Flags of tmem_kv_seq_kv. */
typedef enum tmem_kv_access_flag {
    TMEM_KV_WRITE = 1u << 0 /**< the caller will write: copy a shared block first */
} tmem_kv_access_flag;

/** @brief Addresses of the K and V rows (kv_heads x head_dim elements each)
 *  of token `token` in layer `layer`. With TMEM_KV_WRITE a block shared with
 *  another sequence is copied first, so the write stays private.
 *  Without it the rows must only be read.
 *  @param[out] k  may be NULL. @param[out] v  may be NULL. NULL on failure.
 *  On a device cache the rows have no host address: k and v must be NULL
 *  (TMEM_E_UNSUPPORTED otherwise) and the call only does the copy-on-write.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (layer or token out of range, bad
 *          flags) | TMEM_E_NOT_FOUND | TMEM_E_STATE | TMEM_E_BUDGET /
 *          TMEM_E_NO_MEMORY (copy-on-write could not get a block)
 *          | TMEM_E_UNSUPPORTED (device cache, k or v asked) | TMEM_E_OS
 *          (the device copy failed; nothing changed)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_kv(tmem_kv_cache *cache, tmem_kv_seq seq,
                                                   uint32_t layer, uint32_t token, uint32_t flags,
                                                   void **k, void **v);

/** @brief The sequence's block table, for paged-attention kernels: `*count`
 *  block ids, in token order; resolve them with tmem_kv_block_ptr. The array
 *  belongs to the cache (valid as the pointers above).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND | TMEM_E_STATE
 *  @par Threads safe
 *  On failure *ids is NULL and *count 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_blocks(tmem_kv_cache *cache, tmem_kv_seq seq,
                                                       const uint32_t **ids, uint32_t *count);

/** @brief Host address of a block (NULL for an unused id, a NULL cache, or
 *  a block in device memory: a device cache has no host addresses; use
 *  tmem_kv_block_offset).
 *  Valid while a sequence holding the block is pinned or unchanged. Takes the
 *  cache lock: a kernel that reads many rows resolves the whole table once
 *  with tmem_kv_seq_block_ptrs instead.
 *  @par Threads safe */
TMEM_API void *tmem_kv_block_ptr(tmem_kv_cache *cache, uint32_t id);

/** @brief Where block `id` lives: the KV heap and the block's offset in it
 *  (host and device caches alike). tmem_heap_device_span(heap, offset,
 *  block_bytes) gives the VkDeviceMemory and the offset inside it.
 *  Valid as tmem_kv_block_ptr's address.
 *  @param[out] heap    NULL on failure.  @param[out] offset  TMEM_OFFSET_NONE on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_NOT_FOUND (unused id)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_block_offset(tmem_kv_cache *cache, uint32_t id, tmem_heap **heap,
                                                         uint64_t *offset);

/** @brief The device view of a sequence: each of its blocks' offset in the
 *  KV heap, in token order, under one lock — tmem_kv_seq_block_ptrs for
 *  caches without host addresses (works on host caches too). The block
 *  table a paged-attention shader reads is offsets / block_stride within
 *  one memory object (tmem_kv_device_info). Same arguments, errors and
 *  validity as tmem_kv_seq_block_ptrs.
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_block_offsets(tmem_kv_cache *cache, tmem_kv_seq seq,
                                                              uint64_t *offsets, uint32_t cap, uint32_t *count);

/** @brief Make the blocks holding tokens [first, first + count) private to
 *  the sequence (copy-on-write of each shared one: the backend's copy on a
 *  device cache) before a kernel writes them. tmem_kv_seq_kv with
 *  TMEM_KV_WRITE does the same for one token. count 0 does nothing.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (no KV layout, range past the
 *          length) | TMEM_E_NOT_FOUND | TMEM_E_STATE | TMEM_E_BUDGET /
 *          TMEM_E_NO_MEMORY | TMEM_E_OS (the device copy failed). On
 *          failure the blocks already copied stay private (still correct),
 *          the rest are unchanged.
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_make_private(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t first,
                                                             uint32_t count);

/** @brief The sequence's view for a paged-attention kernel: the host address
 *  of each of its blocks, in token order (what tmem_kv_seq_blocks and
 *  tmem_kv_block_ptr give, id by id), copied into the caller's array under
 *  one acquisition of the cache lock. Token t of the sequence lives in block
 *  ptrs[t / block_tokens], at the rows of kv.h's block layout; the kernel
 *  indexes the view with no call and no lock per row.
 *  @param ptrs   room for cap addresses (may be NULL when cap is 0).
 *  @param cap    entries of ptrs.
 *  @param[out] count  on TMEM_OK the addresses written (the sequence's
 *                blocks); on TMEM_E_FULL the entries needed; 0 on any other
 *                failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL cache or count, NULL ptrs with
 *          cap > 0, TMEM_KV_SEQ_NONE) | TMEM_E_NOT_FOUND (no such sequence)
 *          | TMEM_E_STATE (the sequence was evicted) | TMEM_E_FULL (cap is
 *          smaller than the sequence's blocks) | TMEM_E_UNSUPPORTED (device
 *          cache: tmem_kv_seq_block_offsets)
 *  @par Threads safe
 *  @par How long a view stays valid
 *  Until the next call that changes this sequence's block table or the
 *  sharing of its blocks: tmem_kv_seq_append (it may add a block the view
 *  lacks), tmem_kv_seq_truncate / tmem_kv_seq_rollback (blocks freed),
 *  tmem_kv_seq_fork / tmem_kv_seq_fork_at from it (its blocks become shared:
 *  a write through the view would reach the fork too), a copy-on-write by
 *  tmem_kv_seq_kv(TMEM_KV_WRITE) (the block is replaced), tmem_kv_seq_free,
 *  or its eviction (never while the sequence is pinned: pin it while a kernel
 *  uses the view). Resolve the view again after each. A block never moves
 *  while a sequence holds it, so an address the view gives stays that
 *  block's until the block leaves the sequence.
 *  On failure ptrs is unchanged. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_block_ptrs(tmem_kv_cache *cache, tmem_kv_seq seq, void **ptrs,
                                                           uint32_t cap, uint32_t *count);

/** @brief Addresses of layer `layer`'s short-conv history and delta-rule
 *  state in the sequence's recurrent slot. The state is private to the
 *  sequence (forks copy it), so writes are always allowed.
 *  @param[out] conv  may be NULL. @param[out] ssm  may be NULL.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (no recurrent layout, layer out of
 *          range) | TMEM_E_NOT_FOUND | TMEM_E_STATE | TMEM_E_UNSUPPORTED
 *          (state in device memory: tmem_kv_seq_state_offset) @par Threads safe
 *  On failure *conv and *ssm are NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_state(tmem_kv_cache *cache, tmem_kv_seq seq,
                                                      uint32_t layer, void **conv, void **ssm);

/** @brief Where the sequence's recurrent slot lives: the state heap and the
 *  slot's offset (layer l's conv history at offset + l x layer_bytes, its
 *  delta-rule state conv_bytes after it: tmem_recurrent_layout_sizes). A
 *  kernel updates it in place. Valid until the sequence is freed or evicted
 *  (a slot never moves).
 *  @param[out] heap NULL on failure. @param[out] offset TMEM_OFFSET_NONE on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, no recurrent layout)
 *          | TMEM_E_NOT_FOUND | TMEM_E_STATE  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_state_offset(tmem_kv_cache *cache, tmem_kv_seq seq,
                                                             tmem_heap **heap, uint64_t *offset);

/** @brief Pin (true) or unpin a sequence: a pinned sequence is never evicted.
 *  Pin the sequence you are generating: a budget hit anywhere in the context
 *  runs its reclaim, which evicts unpinned sequences (LRU first) even between
 *  two of your appends (the next call then answers TMEM_E_STATE); pinned, the
 *  allocation that does not fit fails with TMEM_E_BUDGET instead. A call's
 *  own append never evicts the sequence it appends to.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND | TMEM_E_STATE
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_pin(tmem_kv_cache *cache, tmem_kv_seq seq, bool pinned);

/** @brief Mark the sequence most recently used (appends and writes do too).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND | TMEM_E_STATE
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_touch(tmem_kv_cache *cache, tmem_kv_seq seq);

/** @brief Read-back of a sequence (works on evicted handles).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_seq_get_info(tmem_kv_cache *cache, tmem_kv_seq seq, tmem_kv_seq_info *out);

/* ---- snapshots ---- */

/** @brief Copy the sequence's recurrent state at its current length into the
 *  snapshot type. Replaces an existing snapshot of the sequence at the same
 *  length. When the snapshot budget is reached the least recently used
 *  snapshots are dropped (reported, reason SNAPSHOT_BUDGET).
 *  @param[out] out  may be NULL; TMEM_KV_SNAP_NONE on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (no recurrent layout) | TMEM_E_NOT_FOUND
 *          | TMEM_E_STATE | TMEM_E_BUDGET (one snapshot exceeds the budget, or
 *          the type's budget after reclaim) | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_snapshot_take(tmem_kv_cache *cache, tmem_kv_seq seq, tmem_kv_snap *out);

/** @brief Drop a snapshot. TMEM_KV_SNAP_NONE is a no-op (TMEM_OK).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL cache) | TMEM_E_NOT_FOUND
 *          (unknown or already dropped/evicted; nothing changes)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_snapshot_drop(tmem_kv_cache *cache, tmem_kv_snap snap);

/** @brief Find the snapshot of `seq` at exactly `tokens` (does not count as a use).
 *  @param[out] out  TMEM_KV_SNAP_NONE on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND | TMEM_E_STATE
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_snapshot_find(tmem_kv_cache *cache, tmem_kv_seq seq,
                                                          uint32_t tokens, tmem_kv_snap *out);

/* ---- admission ---- */

struct tmem_kv_request;

/** @brief Caller-supplied estimate of the bytes a request needs outside the
 *  KV cache and recurrent state (image buffers, vision intermediates,
 *  activations) when prefilling `chunk` tokens at a time. */
typedef uint64_t (*tmem_kv_estimate_fn)(const struct tmem_kv_request *req, uint32_t chunk, void *user);

/** @brief A request to admit. */
typedef struct tmem_kv_request {
    tmem_kv_seq seq;                 /**< sequence that will grow, or NONE for a new one */
    uint32_t context_tokens;         /**< total length it will reach (prompt + output) */
    uint32_t image_width;            /**< 0 = no image */
    uint32_t image_height;
    uint32_t prefill_chunk;          /**< tokens per prefill step wanted; 0 = context_tokens */
    uint64_t extra_bytes;            /**< other bytes, added as-is */
    uint64_t activation_bytes_per_token; /**< with no estimate fn: activations = chunk x this */
    tmem_kv_estimate_fn estimate;    /**< NULL: image = w x h x 3 (RGB8) + chunk activations */
    void *estimate_user;
} tmem_kv_request;

/** @brief What admission found and did. */
typedef struct tmem_kv_admission {
    bool admitted;
    uint32_t prefill_chunk;          /**< chunk to use (may be smaller than asked) */
    uint64_t kv_bytes;               /**< new KV bytes the request needs */
    uint64_t state_bytes;            /**< new recurrent-state bytes */
    uint64_t other_bytes;            /**< image/activation estimate at prefill_chunk */
    uint64_t available_bytes;        /**< room found (after eviction) */
    uint64_t freed_bytes;            /**< given back by the policy */
    uint32_t snapshots_dropped;
    uint32_t sequences_evicted;
} tmem_kv_admission;

/** @brief Admit a request if its memory fits the budgets now, or after the
 *  policy (drop snapshots LRU, evict sequences LRU except the requester and
 *  pinned ones, then a smaller prefill chunk; CHUNK_FIRST tries the chunk
 *  before evicting). Nothing is evicted when even evicting everything
 *  allowed would not make it fit. Memory is checked, not reserved: allocate
 *  promptly. Every eviction is reported through on_evict.
 *  @param[out] out  may be NULL; filled on TMEM_OK and TMEM_E_BUDGET.
 *  @return TMEM_OK (admitted) | TMEM_E_BUDGET (does not fit even after the
 *          policy; out->prefill_chunk 0) | TMEM_E_INVALID_ARG (context_tokens
 *          0, or below the sequence's length) | TMEM_E_OVERFLOW | TMEM_E_NOT_FOUND
 *          | TMEM_E_STATE (seq stale / evicted) @par Threads safe
 *  On failure other than TMEM_E_BUDGET *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_admit(tmem_kv_cache *cache, const tmem_kv_request *req,
                                                  tmem_kv_admission *out);

/** @brief Run the eviction policy by hand: give back at least `bytes` bytes
 *  (snapshots first, then LRU sequences, never pinned ones), reason RECLAIM.
 *  @param[out] freed  may be NULL: bytes given back.
 *  @return TMEM_OK (freed >= bytes) | TMEM_E_BUDGET (could not; what could
 *          go went) | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  On failure *freed is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_kv_cache_reclaim(tmem_kv_cache *cache, uint64_t bytes, uint64_t *freed);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_KV_H */
