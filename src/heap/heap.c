/*
 * Heap objects: create, destroy, reset, read-back, check, and the
 * size-and-align query. The hot paths are in heap_alloc.c.
 *
 * A heap carves `size` bytes (rounded up to the pool granule, at a commit
 * chunk boundary when it is that big) from its type's pool and manages
 * offsets [0, size) inside it with the metadata of its kind: TLSF (GENERAL), a bump deque (LINEAR, RING) or
 * the interval index (PLACEMENT). Metadata lives in context memory, never in
 * the pool, so device pools work the same and poisoning cannot corrupt it.
 */
#include <string.h>
#include "heap/heap_internal.h"

/* The allocation granule of a placement: what sizes round to. Host memory
 * needs 16 bytes (max_align_t, SIMD loads); GPU APIs want 256-byte offsets
 * for storage/uniform buffers (Vulkan's minStorageBufferOffsetAlignment is
 * at most 256 on every desktop driver). */
static uint64_t alloc_granule(tmem_placement p) {
    return p == TMEM_PLACEMENT_DEVICE || p == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE ? 256 : TMEM__HEAP_DEFAULT_ALIGN;
}

tmem_status tmem_type_size_and_align(const tmem_type *type, uint64_t size, uint64_t alignment, tmem_size_align *out) {
    if (out) *out = (tmem_size_align){0, 0};
    if (!type || !out || !size) return tmem__err(TMEM_E_INVALID_ARG);
    if (!alignment) alignment = TMEM__HEAP_DEFAULT_ALIGN;
    if (!tmem__is_pow2(alignment) || alignment > TMEM__HEAP_MAX_ALIGN) return tmem__err(TMEM_E_ALIGNMENT);
    uint64_t g = alloc_granule(tmem__type_placement(type)), rounded;
    if (!tmem__align_up(size, g, &rounded) || rounded >= TMEM__HEAP_MAX_SIZE) return tmem__err(TMEM_E_OVERFLOW);
    out->size = rounded;
    out->alignment = alignment > g ? alignment : g;
    return TMEM_OK;
}

tmem_status tmem_type_heap_bytes(const tmem_type *type, uint64_t size, uint64_t *out) {
    if (out) *out = 0;
    if (!type || !out || !size) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t g = tmem__pool_granule(type), rounded;
    if (!g || !tmem__align_up(size, g, &rounded)) return tmem__err(TMEM_E_OVERFLOW);
    *out = rounded;
    return TMEM_OK;
}

/* Metadata goes through the context's allocator. */
static void *meta_alloc(size_t n, void *ctx) { return tmem__malloc(ctx, n); }
static void meta_free(void *p, size_t n, void *ctx) { tmem__free(ctx, p, n); }

static tmem_status validate_desc(tmem_context *ctx, const tmem_heap_desc *d) {
    if (!ctx || !d || !d->type || tmem__type_context(d->type) != ctx) return tmem__err(TMEM_E_INVALID_ARG);
    if ((unsigned)d->kind > TMEM_HEAP_BLOCK || (d->flags & ~TMEM__HEAP_FLAG_MASK))
        return tmem__err(TMEM_E_INVALID_ARG);
    if ((d->flags & TMEM_HEAP_RING) && d->kind != TMEM_HEAP_LINEAR) return tmem__err(TMEM_E_INVALID_ARG);
    if ((int)d->role < 0 || d->role >= TMEM_ROLE_MAX) return tmem__err(TMEM_E_INVALID_ARG);
    if (!d->size || d->size >= TMEM__HEAP_MAX_SIZE) return tmem__err(TMEM_E_INVALID_ARG);
    return TMEM_OK;
}

static tmem_status init_meta(tmem_heap *h) {
    tmem_allocator a = {meta_alloc, meta_free, h->ctx};
    uint64_t bias = h->ptr ? (uint64_t)(uintptr_t)h->ptr : h->base;
    tmem__ivx_init(&h->alias, &a);
    tmem__ivx_init(&h->live, &a);
    tmem__recent_clear(&h->recent);
    tmem_status st = TMEM_OK;
    if (h->kind == TMEM_HEAP_GENERAL) {
        st = tmem__tlsf_init(&h->tlsf, h->size, h->granule, &a);
        h->tlsf.bias = bias;
        /* pages need 64 KiB-aligned offsets to be 64 KiB-aligned addresses */
        bool pages = h->size >= TMEM__SMALL_MIN_HEAP && !(bias & (TMEM__SMALL_PAGE - 1)) &&
                     h->granule <= TMEM__SMALL_LINEAR_MAX;
        if (st == TMEM_OK && pages) st = tmem__small_init(&h->small, h->size, h->granule, &a);
    } else if (h->kind == TMEM_HEAP_LINEAR) {
        st = tmem__linear_init(&h->lin, h->size, h->granule, h->flags & TMEM_HEAP_RING, &a);
        h->lin.bias = bias;
    }
    return st;
}

static void fini_meta(tmem_heap *h) {
    tmem__small_destroy(&h->small);
    tmem__tlsf_destroy(&h->tlsf);
    tmem__linear_destroy(&h->lin);
    tmem__ivx_destroy(&h->live);
    tmem__ivx_destroy(&h->alias);
}

/* The role a heap charges: the desc's, or for TMEM_ROLE_DEFAULT the first
 * role the policy maps to its type (builtin roles first, then user roles);
 * none maps to it: no role (the bytes count in the type only). */
static tmem_status heap_role(tmem_context *ctx, const tmem_heap_desc *d, int32_t *out) {
    *out = (int32_t)d->role;
    if (d->role != TMEM_ROLE_DEFAULT) return TMEM_OK;
    for (int32_t r = TMEM_ROLE_BUILTIN_FIRST; r < TMEM_ROLE_MAX; r++) {
        tmem_type *t;
        if (tmem_role_get_type(ctx, (tmem_role)r, &t) == TMEM_OK && t == d->type) {
            *out = r;
            return TMEM_OK;
        }
    }
    return TMEM_OK; /* stays TMEM_ROLE_DEFAULT: no role */
}

tmem_status tmem_heap_create(tmem_context *ctx, const tmem_heap_desc *desc, tmem_heap **out) {
    if (out) *out = NULL;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = validate_desc(ctx, desc);
    if (st != TMEM_OK) return st;
    int32_t role;
    if ((st = heap_role(ctx, desc, &role)) != TMEM_OK) return st;
    if (desc->kind == TMEM_HEAP_BLOCK) return tmem__block_heap_create(ctx, desc, role, out);
    tmem_type *type = desc->type;
    uint64_t g = tmem__pool_granule(type), granule = alloc_granule(tmem__type_placement(type)), size, carved;
    if (!tmem__align_up(desc->size, granule, &size) || !tmem__align_up(size, g, &carved))
        return tmem__err(TMEM_E_INVALID_ARG);
    /* chunk-aligned in the pool when it spans chunks (tidy commits) */
    uint64_t carve_align = carved >= tmem__heap_commit_chunk(type) ? tmem__heap_commit_chunk(type) : g;
    tmem_heap *h = tmem__calloc(ctx, 1, sizeof *h);
    if (!h) return tmem__err(TMEM_E_NO_MEMORY);
    *h = (tmem_heap){.magic = TMEM__HEAP_MAGIC, .kind = desc->kind, .flags = desc->flags, .role = role,
                     .ctx = ctx, .type = type, .debug = tmem__context_debug(ctx), .size = size, .carved = carved,
                     .granule = granule};
    atomic_init(&h->purgeable, TMEM_PURGEABLE_NON_VOLATILE);
    if (desc->name) {
        strncpy(h->name, desc->name, sizeof h->name - 1);
    }
    bool mutex = false, carved_ok = false, registered = false, bits = false;
    st = tmem__pool_carve(type, carved, carve_align, &h->base);
    if (st != TMEM_OK) goto fail;
    carved_ok = true;
    h->ptr = tmem__pool_ptr(type, h->base);
    if ((st = tmem__heap_commit_init(h)) != TMEM_OK) goto fail;
    bits = true;
    if ((st = init_meta(h)) != TMEM_OK) goto fail;
    if (tmem__os_mutex_init(&h->lock, 0)) {
        st = tmem__err(TMEM_E_NO_MEMORY);
        goto fail;
    }
    mutex = true;
    if ((desc->flags & TMEM_HEAP_COMMIT_ALL) && (st = tmem__heap_commit(h, 0, size)) != TMEM_OK) goto fail;
    if ((st = tmem__context_add_member(ctx, h, &tmem__heap_member_ops)) != TMEM_OK) goto fail;
    registered = true;
    (void)registered;
    tmem__account_attach(type, role, &h->acct);
    *out = h;
    return TMEM_OK;
fail:
    if (bits) {
        (void)tmem__heap_decommit_all(h);
        tmem__heap_commit_fini(h);
    }
    fini_meta(h);
    if (mutex) tmem__os_mutex_destroy(&h->lock);
    if (carved_ok) tmem__pool_uncarve(type, h->base, carved);
    h->magic = 0;
    tmem__free(ctx, h, sizeof *h);
    return st;
}

static tmem_status unaccount(tmem_heap *h, uint64_t off, uint64_t size, uint64_t user, bool aliasable, void *arg) {
    (void)aliasable;
    (void)off;
    (void)size;
    (void)arg;
    tmem__heap_count_free(h, tmem__heap_user_role(user), tmem__heap_user_size(user));
    return TMEM_OK;
}

/* The heap as a member of its context (core/internal.h): core destroys,
 * checks and purges heaps through these without knowing what a heap is. */
static void member_destroy(void *heap) { tmem_heap_destroy(heap); }
static tmem_status member_check(void *heap) { return tmem_heap_check(heap); }
static uint64_t member_purge(void *heap) { return tmem__heap_purge_volatile(heap); }
static tmem_type *member_type(const void *heap) { return tmem__heap_type(heap); }

const tmem__member_ops tmem__heap_member_ops = {
    .destroy = member_destroy,
    .check = member_check,
    .purge = member_purge,
    .type = member_type,
};

void tmem_heap_destroy(tmem_heap *heap) {
    if (!tmem__heap_valid(heap)) return;
    if (heap->kind == TMEM_HEAP_BLOCK) {
        tmem__block_heap_destroy(heap);
        return;
    }
    /* Unregister first: once out of the registry no reclaim can reach it. */
    tmem__context_remove_member(heap->ctx, heap);
    (void)tmem__heap_for_each_live(heap, unaccount, NULL);
    tmem__account_detach(&heap->acct);
    tmem__trace(heap->ctx, TMEM__TRACE_RESET, heap->type, heap->role, heap->carved, heap->base, heap->name);
    tmem__heap_drop_sentinels(heap);
    (void)tmem__heap_decommit_all(heap);
    tmem__heap_commit_fini(heap);
    fini_meta(heap);
    tmem__pool_uncarve(heap->type, heap->base, heap->carved);
    tmem__os_mutex_destroy(&heap->lock);
    heap->magic = 0;
    tmem__free(heap->ctx, heap, sizeof *heap);
}

tmem_status tmem_heap_reset(tmem_heap *heap) {
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (heap->kind == TMEM_HEAP_BLOCK) return tmem__block_reset(heap);
    bool locked = tmem__heap_enter(heap);
    (void)tmem__heap_for_each_live(heap, unaccount, NULL);
    if (heap->kind == TMEM_HEAP_GENERAL) {
        tmem__tlsf_reset(&heap->tlsf);
        if (tmem__small_on(&heap->small)) tmem__small_reset(&heap->small);
    }
    else if (heap->kind == TMEM_HEAP_LINEAR) tmem__linear_reset(&heap->lin);
    tmem__ivx_reset(&heap->live);
    tmem__ivx_reset(&heap->alias);
    tmem__recent_clear(&heap->recent);
    heap->used = 0;
    heap->live_count = 0;
    /* Pages stay committed: a reset heap is about to be refilled. */
    /* One RESET event frees every live allocation of the heap in a trace. */
    tmem__trace(heap->ctx, TMEM__TRACE_RESET, heap->type, heap->role, heap->carved, heap->base, heap->name);
    tmem__heap_leave(heap, locked);
    return TMEM_OK;
}

/* Largest gap between live solid intervals of a PLACEMENT heap (O(n)). */
typedef struct gap_walk {
    uint64_t end, best;
} gap_walk;

static bool gap_visit(void *c, const tmem__ivx_node *n) {
    gap_walk *g = c;
    if (n->flags & TMEM__IVX_ALIASABLE) return true;
    if (n->start > g->end && n->start - g->end > g->best) g->best = n->start - g->end;
    if (n->end > g->end) g->end = n->end;
    return true;
}

tmem_status tmem_heap_get_info(const tmem_heap *heap, tmem_heap_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__heap_valid(heap) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_heap *h = (tmem_heap *)heap;
    if (h->kind == TMEM_HEAP_BLOCK) {
        tmem__block_info(h, out);
        return TMEM_OK;
    }
    bool locked = tmem__heap_enter(h);
    out->kind = h->kind;
    out->size = h->size;
    out->used = h->used;
    out->committed = h->committed;
    out->peak_used = h->peak_used;
    out->live_count = h->live_count;
    out->purgeable = tmem__heap_state(h);
    if (h->kind == TMEM_HEAP_GENERAL) {
        /* Empty small pages would be given back by a failing search. Give
         * them back now only under the lock (THREAD_SAFE or not
         * NON_VOLATILE): info may come from another thread (stats), and a
         * heap used without its lock must not be written by it. Otherwise
         * largest_free may understate by what they would merge into. */
        if (locked) tmem__heap_small_trim(h);
        out->largest_free = tmem__tlsf_largest_free(&h->tlsf);
    } else if (h->kind == TMEM_HEAP_LINEAR) {
        out->largest_free = tmem__linear_largest_free(&h->lin);
    } else {
        gap_walk g = {0, 0};
        tmem__ivx_walk(&h->live, gap_visit, &g);
        if (h->size > g.end && h->size - g.end > g.best) g.best = h->size - g.end;
        out->largest_free = g.best;
    }
    tmem__heap_leave(h, locked);
    return TMEM_OK;
}

void *tmem_heap_ptr(const tmem_heap *heap, uint64_t offset) {
    if (!tmem__heap_valid(heap) || !heap->ptr || offset >= heap->size) return NULL;
    return heap->ptr + offset;
}

/* ---- check ---- */

typedef struct sum_walk {
    uint64_t used, count;
} sum_walk;

static bool committed_under(const tmem_heap *h, uint64_t off, uint64_t size) {
    for (uint64_t p = off >> h->page_shift; p <= (off + size - 1) >> h->page_shift; p++)
        if (!(h->bits[p >> 6] >> (p & 63) & 1)) return false;
    return true;
}

static tmem_status sum_live(tmem_heap *h, uint64_t off, uint64_t size, uint64_t user, bool aliasable, void *arg) {
    sum_walk *s = arg;
    s->count++;
    if (!aliasable) s->used += tmem__heap_user_size(user);
    if (!size || off + size > h->size || tmem__heap_user_size(user) > size ||
        tmem__heap_user_role(user) >= TMEM_ROLE_MAX)
        return tmem__err(TMEM_E_CORRUPT);
    /* a usable heap has every live non-aliasable byte committed */
    if (!aliasable && tmem__heap_state(h) == TMEM_PURGEABLE_NON_VOLATILE && !committed_under(h, off, size))
        return tmem__err(TMEM_E_CORRUPT);
    return TMEM_OK;
}

tmem_status tmem_heap_check(const tmem_heap *heap) {
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_CORRUPT);
    tmem_heap *h = (tmem_heap *)heap;
    if (h->kind == TMEM_HEAP_BLOCK) return tmem__block_check(h);
    bool locked = tmem__heap_enter(h);
    tmem_status st = TMEM_OK;
    if (h->kind == TMEM_HEAP_GENERAL) st = tmem__tlsf_check(&h->tlsf);
    if (st == TMEM_OK && h->kind == TMEM_HEAP_GENERAL) st = tmem__small_check(&h->small);
    else if (h->kind == TMEM_HEAP_LINEAR) st = tmem__linear_check(&h->lin);
    if (st == TMEM_OK) st = tmem__ivx_check(&h->live);
    if (st == TMEM_OK) st = tmem__ivx_check(&h->alias);
    sum_walk s = {0, 0};
    if (st == TMEM_OK) st = tmem__heap_for_each_live(h, sum_live, &s);
    if (st == TMEM_OK && (s.count != h->live_count || s.used != h->used || h->used > h->peak_used ||
                          tmem__heap_bits_bytes(h) != h->committed))
        st = tmem__err(TMEM_E_CORRUPT);
    tmem__heap_leave(h, locked);
    return st;
}
