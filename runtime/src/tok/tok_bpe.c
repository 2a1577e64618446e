/* tok_bpe.c: byte-pair merging of one pre-token.
 *
 * The piece starts as one symbol per byte (its byte token). A min-heap of
 * candidate merges keyed (rank << 32 | left position) pops the lowest rank,
 * leftmost on ties (the order of Hugging Face's BPE and llama.cpp). Entries
 * are not removed when a neighbour merge invalidates them: a popped entry
 * is applied only if its left symbol is alive, has a right neighbour, and
 * the two ids are still the merge's pair (an id names its string, so this
 * is exact). Each merge pushes at most two entries, so the heap holds at
 * most 3n. O(n log n) per piece; memory 12 bytes per symbol + 8 per entry,
 * on the stack up to TOK_SHORT_PIECE bytes, else from the scratch heap. */
#include "tok/tok_internal.h"

uint32_t tmrt__bpe_rank(const tmrt_tokenizer *t, uint32_t l, uint32_t r) {
    uint32_t cap = t->pair_cap;
    if (!cap) return TOK_NONE;
    uint32_t h = tok_pair_hash(l, r), b = tok_bucket(h, cap);
    for (;;) {
        uint32_t v = t->pair_slots[b];
        if (!v) return TOK_NONE;
        if (tok_slot_fp_is(v, h)) {
            uint32_t rank = tok_slot_value(v) - 1;
            uint64_t m = t->merges[rank];
            if (merge_left(m) == l && merge_right(m) == r) return rank;
        }
        if (++b == cap) b = 0;
    }
}

typedef struct bpe_work {
    int32_t *id, *prev, *next;
    uint64_t *heap;
    size_t n_heap;
} bpe_work;

static void heap_push(bpe_work *w, uint64_t v) {
    size_t i = w->n_heap++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (w->heap[p] <= v) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = v;
}

static uint64_t heap_pop(bpe_work *w) {
    uint64_t top = w->heap[0], v = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && w->heap[c + 1] < w->heap[c]) c++;
        if (w->heap[c] >= v) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = v;
    return top;
}

static void push_pair(const tmrt_tokenizer *t, bpe_work *w, int32_t left) {
    if (left < 0) return;
    int32_t right = w->next[left];
    if (right < 0) return;
    uint32_t rank = tmrt__bpe_rank(t, (uint32_t)w->id[left], (uint32_t)w->id[right]);
    if (rank != TOK_NONE) heap_push(w, (uint64_t)rank << 32 | (uint32_t)left);
}

static void merge_all(const tmrt_tokenizer *t, bpe_work *w, size_t n) {
    w->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++) push_pair(t, w, (int32_t)i);
    while (w->n_heap) {
        uint64_t e = heap_pop(w);
        uint32_t rank = (uint32_t)(e >> 32);
        int32_t left = (int32_t)(uint32_t)e, right = w->next[left];
        if (w->id[left] < 0 || right < 0) continue;
        uint64_t m = t->merges[rank];
        if ((uint32_t)w->id[left] != merge_left(m) || (uint32_t)w->id[right] != merge_right(m)) continue;
        w->id[left] = (int32_t)merge_result(m);
        w->id[right] = -1;
        w->next[left] = w->next[right];
        if (w->next[right] >= 0) w->prev[w->next[right]] = left;
        push_pair(t, w, w->prev[left]);
        push_pair(t, w, left);
    }
}

tmem_status tmrt__bpe_piece(const tmrt_tokenizer *t, const uint8_t *s, size_t len, tok_out *o) {
    for (size_t i = 0; i < len; i++)
        if (t->byte_token[s[i]] < 0) return TMEM_E_UNSUPPORTED; /* a byte the vocabulary lacks */
    if (len == 1) {
        tok_emit(o, t->byte_token[s[0]]);
        return TMEM_OK;
    }
    int32_t sid[TOK_SHORT_PIECE], sprev[TOK_SHORT_PIECE], snext[TOK_SHORT_PIECE];
    uint64_t sheap[3 * TOK_SHORT_PIECE];
    bpe_work w = {sid, sprev, snext, sheap, 0};
    void *mem = NULL;
    if (len > TOK_SHORT_PIECE) {
        if (len > (size_t)INT32_MAX) return TMEM_E_OVERFLOW;
        if (!t->scratch) return TMEM_E_FULL; /* SCRATCH_EXACT with no scratch */
        tmem_status st = tmem_heap_alloc(t->scratch, (uint64_t)len * 36, 16, &mem);
        if (st != TMEM_OK) return st;
        w.heap = mem;
        w.id = (int32_t *)(w.heap + 3 * len);
        w.prev = w.id + len;
        w.next = w.prev + len;
    }
    for (size_t i = 0; i < len; i++) {
        w.id[i] = t->byte_token[s[i]];
        w.prev[i] = (int32_t)i - 1;
        w.next[i] = i + 1 < len ? (int32_t)i + 1 : -1;
    }
    merge_all(t, &w, len);
    for (int32_t i = 0; i >= 0; i = w.next[i]) tok_emit(o, w.id[i]);
    if (mem && tmem_heap_free(t->scratch, mem) != TMEM_OK) return TMEM_E_CORRUPT;
    return TMEM_OK;
}
