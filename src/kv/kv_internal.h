/*
 * Internal structures of the KV cache (src/kv/). Groups follow the file that
 * defines them. Every function here expects the cache lock held.
 */
#ifndef TMEM_KV_INTERNAL_H
#define TMEM_KV_INTERNAL_H

#include "os/os.h"
#include "typedmem/kv.h"
#include "typedmem/heap.h"

/* ---- layouts (kv_layout.c) ---- */
/* Bytes of one K (or V) row: kv_heads x head_dim elements. */
tmem_status tmem__kv_row_bytes(const tmem_kv_layout *l, uint64_t *out);
uint32_t tmem__kv_block_tokens(const tmem_kv_layout *l);

/* ---- fixed-size slots over one BLOCK heap each (kv_slab.c) ----
 * A slot is named by its heap offset. On host types a slot is one heap
 * block (size rounded to the pool granule). On device types the granule is
 * a whole device memory object (a Vulkan chunk), so slots are packed: one
 * heap block of one granule holds `per` slots at the device's buffer
 * alignment, committed with its first slot and decommitted with its last. */
typedef struct kv_slab {
    tmem_context *ctx;
    tmem_heap *heap;        /* BLOCK heap over the type's pool; NULL when unused */
    uint64_t slot;          /* pool bytes per slot: host: size rounded to the
                               granule; device: to the buffer alignment */
    uint64_t size;          /* bytes asked per slot (what is accounted in use) */
    uint32_t nslots;        /* capacity */
    uint32_t live;
    bool device;            /* no host addresses: copies go through the backend */
    /* packed slots (device types) */
    bool packed;
    uint64_t stride;        /* one heap block: a granule */
    uint32_t per;           /* slots per heap block */
    uint32_t nsb;           /* heap blocks */
    uint32_t *sb_live;      /* live slots per heap block */
    uint32_t *next, *prev;  /* free list of slots in committed heap blocks */
    uint32_t free_head;
    uint32_t sb_used;       /* committed heap blocks */
} kv_slab;
#define KV_NO_OFF UINT64_MAX
/* A BLOCK heap of `range` bytes of the type's pool.
 * TMEM_E_FULL when not one slot fits, TMEM_E_INVALID_ARG on a FILE type,
 * the backend's error when a slot cannot lie in one device memory object. */
tmem_status tmem__kv_slab_init(tmem_context *ctx, kv_slab *s, tmem_type *type, uint64_t range,
                               uint64_t size, int32_t role, const char *name);
void tmem__kv_slab_fini(kv_slab *s);
/* Commit one slot (budgets and reclaim apply: TMEM_E_BUDGET) and return its heap offset. */
tmem_status tmem__kv_slab_alloc(kv_slab *s, uint64_t *out);
/* Take the slot back; returns the committed bytes given back (packed: 0
 * until its heap block empties). */
uint64_t tmem__kv_slab_free(kv_slab *s, uint64_t off);
/* Committed bytes of a packed slab (heap blocks holding a live slot). */
uint64_t tmem__kv_slab_committed(const kv_slab *s);
/* Host address of a slot; NULL on device types. */
void *tmem__kv_slab_ptr(const kv_slab *s, uint64_t off);
/* Copy `n` bytes between slots (memcpy on the host, the backend's copy on
 * the device), or zero a slot's first `n` bytes. */
tmem_status tmem__kv_slab_copy(kv_slab *dst, uint64_t doff, const kv_slab *src, uint64_t soff, uint64_t n);
tmem_status tmem__kv_slab_zero(kv_slab *s, uint64_t off, uint64_t n);

/* One physical block: refs == 0 means the id is on the free-id list. */
typedef struct kv_block {
    uint64_t off;        /* slot offset in the KV slab's heap */
    uint32_t refs;
    uint32_t next_free;  /* free-id list link */
} kv_block;

#define KV_NO_ID UINT32_MAX

typedef enum kv_seq_state {
    KV_SLOT_FREE = 0,
    KV_SLOT_LIVE,
    KV_SLOT_EVICTED
} kv_seq_state;

/* A sequence slot. The handle is (gen << 32) | (index + 1). */
typedef struct kv_seqrec {
    uint32_t gen;
    uint8_t state;       /* kv_seq_state */
    bool pinned;
    bool protect;        /* the sequence an operation is working on: never evicted under it */
    uint32_t tokens;
    uint32_t nblocks, cap;
    uint32_t *table;     /* block ids, token order */
    uint64_t state_off;  /* recurrent slot, KV_NO_OFF without a recurrent layout */
    uint64_t last_use;   /* LRU clock */
    uint32_t nsnaps;
    uint32_t next_free;  /* free-slot list link */
} kv_seqrec;

/* A snapshot of one sequence's recurrent state, on the LRU list (head =
 * least recently used). */
typedef struct kv_snaprec {
    tmem_kv_snap id;
    uint32_t slot;
    uint32_t tokens;
    uint64_t off;        /* slot in the snapshot slab */
    struct kv_snaprec *prev, *next;
} kv_snaprec;

struct tmem_kv_cache {
    tmem_context *ctx;
    tmem__os_mutex lock; /* recursive: the reclaim step may run inside our own allocations */
    uint32_t depth;       /* > 0 while a public call runs on this cache */
    tmem_kv_cache_desc desc;
    bool has_kv, has_state;

    /* KV geometry */
    uint32_t block_tokens;
    uint64_t row_bytes;   /* one K or V row of one layer */
    uint64_t token_bytes;
    uint64_t block_bytes;
    tmem_recurrent_sizes rs;

    tmem_type *kv_type, *state_type, *snap_type;
    kv_slab kv_slab, state_slab, snap_slab;
    uint64_t snap_budget;

    /* blocks (kv_blocks.c) */
    kv_block *blocks;
    uint32_t block_cap;
    uint32_t free_id;
    uint64_t blocks_used, blocks_shared, cow_copies;

    /* sequences (kv_seq.c) */
    kv_seqrec *seqs;
    uint32_t max_seqs;
    uint32_t free_slot;
    uint32_t live, evicted;
    uint64_t clock;
    uint64_t seqs_evicted;

    /* snapshots (kv_snapshot.c) */
    kv_snaprec *lru_head, *lru_tail;
    uint32_t nsnaps;
    uint64_t snap_bytes;
    uint64_t next_snap_id;
    uint64_t snaps_dropped;
    kv_snaprec *protect_snap; /* being copied from: the policy skips it */

    bool reclaim_registered;
};

/* ---- cache (kv_cache.c) ---- */
void tmem__kv_lock(tmem_kv_cache *c);
void tmem__kv_unlock(tmem_kv_cache *c);
/* Report an eviction to the caller's callback. */
void tmem__kv_report(tmem_kv_cache *c, const tmem_kv_event *ev);

/* ---- blocks (kv_blocks.c) ---- */
tmem_status tmem__kv_blocks_init(tmem_kv_cache *c);
void tmem__kv_blocks_fini(tmem_kv_cache *c);
/* New block with one reference. On TMEM_E_BUDGET the caller may run the
 * policy and retry. */
tmem_status tmem__kv_block_new(tmem_kv_cache *c, uint32_t *out_id);
void tmem__kv_block_ref(tmem_kv_cache *c, uint32_t id);
/* Drop one reference; returns the bytes given back (block_bytes when it
 * reached zero, else 0). */
uint64_t tmem__kv_block_unref(tmem_kv_cache *c, uint32_t id);

/* ---- sequences (kv_seq.c) ---- */
/* Resolve a handle to a LIVE slot: TMEM_E_INVALID_ARG (malformed),
 * TMEM_E_NOT_FOUND (stale), TMEM_E_STATE (evicted). */
tmem_status tmem__kv_seq_get(tmem_kv_cache *c, tmem_kv_seq h, kv_seqrec **out);
tmem_kv_seq tmem__kv_seq_handle(const tmem_kv_cache *c, const kv_seqrec *s);
void tmem__kv_seq_touch(tmem_kv_cache *c, kv_seqrec *s);
/* Evict a live sequence: release its blocks, slot and snapshots, report it,
 * keep the handle as EVICTED. Returns the bytes given back. */
uint64_t tmem__kv_seq_evict(tmem_kv_cache *c, kv_seqrec *s, tmem_kv_evict_reason reason);
/* Bytes freeing this sequence alone would give back. */
uint64_t tmem__kv_seq_exclusive_bytes(const tmem_kv_cache *c, const kv_seqrec *s);
void tmem__kv_seqs_fini(tmem_kv_cache *c);

/* ---- recurrent state (kv_state.c) ---- */
/* A zeroed slot, or a copy of `copy_from` (a slot of `from_slab`). */
tmem_status tmem__kv_state_alloc(tmem_kv_cache *c, kv_seqrec *s, const kv_slab *from_slab, uint64_t copy_from);
/* Returns the committed bytes given back. */
uint64_t tmem__kv_state_free(tmem_kv_cache *c, kv_seqrec *s);

/* ---- snapshots (kv_snapshot.c) ---- */
kv_snaprec *tmem__kv_snap_find(tmem_kv_cache *c, uint32_t slot, uint32_t tokens);
/* Drop one snapshot; report it when reason >= 0 (an eviction). Returns its bytes. */
uint64_t tmem__kv_snap_drop(tmem_kv_cache *c, kv_snaprec *s, int reason);
/* Drop the slot's snapshots past `tokens` (all of them with 0 and all=true). */
uint64_t tmem__kv_snap_drop_seq(tmem_kv_cache *c, uint32_t slot, uint32_t tokens, bool all);
void tmem__kv_snap_touch(tmem_kv_cache *c, kv_snaprec *s);

/* ---- policy (kv_policy.c) ---- */
/* Our own allocation in `type` was refused (`why`: TMEM_E_BUDGET, or
 * TMEM_E_FULL when its carved range is full; TMEM_OK from the reclaim step
 * and by hand): free room by the policy (snapshots when they help, then LRU
 * sequences other than protected/pinned ones). Returns the bytes given back. */
uint64_t tmem__kv_make_room(tmem_kv_cache *c, tmem_type *type, uint64_t needed,
                            tmem_kv_evict_reason reason, tmem_status why);
/* The context reclaim step. */
uint64_t tmem__kv_reclaim_step(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user);

#endif /* TMEM_KV_INTERNAL_H */
