/*
 * Size-class pages: see small.h for the design. This file holds the cold
 * parts (page records, trimming, walks, the checker); the hot take and
 * lookup are inline in small.h.
 */
#include <string.h>
#include "heap/small.h"

#define NIL TMEM__SMALL_NIL

/* Tag storage of a page record: room for the smallest class, so a recycled
 * record serves any class. */
static size_t slack_bytes(const tmem__small *s) {
    return (size_t)(TMEM__SMALL_PAGE >> s->granule_log2) * sizeof(uint16_t);
}

tmem_status tmem__small_init(tmem__small *s, uint64_t heap_size, uint64_t granule, const tmem_allocator *a) {
    memset(s, 0, sizeof *s);
    if (a) s->a = *a;
    if (granule < TMEM__SMALL_MIN_GRANULE || granule > TMEM__SMALL_LINEAR_MAX || !tmem__is_pow2(granule))
        return tmem__err(TMEM_E_INVALID_ARG);
    s->granule_log2 = (uint32_t)__builtin_ctzll(granule);
    s->nlinear = (uint32_t)(TMEM__SMALL_LINEAR_MAX / granule);
    /* medium classes step by 64 B at first: only for granules dividing that */
    bool medium = granule <= 64;
    s->nclasses = s->nlinear + (medium ? 4 * 8 : 0);
    s->max_size = medium ? TMEM__SMALL_MAX : TMEM__SMALL_LINEAR_MAX;
    s->nmap = (heap_size + TMEM__SMALL_PAGE - 1) >> TMEM__SMALL_PAGE_SHIFT;
    s->unused = NIL;
    for (uint32_t c = 0; c < TMEM__SMALL_CLASSES; c++) s->head[c] = NIL;
    s->map = tmem__meta_alloc(&s->a, (size_t)s->nmap * sizeof *s->map);
    if (!s->map) return tmem__err(TMEM_E_NO_MEMORY);
    memset(s->map, 0, (size_t)s->nmap * sizeof *s->map);
    return TMEM_OK;
}

void tmem__small_destroy(tmem__small *s) {
    if (!s->map) return;
    for (uint32_t i = 0; i < s->npages; i++) tmem__meta_free(&s->a, s->pages[i].tag, slack_bytes(s));
    tmem__meta_free(&s->a, s->pages, (size_t)s->cap * sizeof *s->pages);
    tmem__meta_free(&s->a, s->map, (size_t)s->nmap * sizeof *s->map);
    memset(s, 0, sizeof *s);
}

/* A record for a new page: a recycled one, or a new one (slack allocated). */
static tmem_status record_take(tmem__small *s, uint32_t *out) {
    if (s->unused != NIL) {
        *out = s->unused;
        s->unused = s->pages[*out].next;
        return TMEM_OK;
    }
    if (s->npages == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 16;
        tmem__small_page *np = tmem__meta_alloc(&s->a, (size_t)cap * sizeof *np);
        if (!np) return tmem__err(TMEM_E_NO_MEMORY);
        if (s->pages) memcpy(np, s->pages, (size_t)s->npages * sizeof *np);
        tmem__meta_free(&s->a, s->pages, (size_t)s->cap * sizeof *s->pages);
        s->pages = np;
        s->cap = cap;
    }
    uint16_t *tag = tmem__meta_alloc(&s->a, slack_bytes(s));
    if (!tag) return tmem__err(TMEM_E_NO_MEMORY);
    memset(tag, 0, slack_bytes(s));
    memset(&s->pages[s->npages], 0, sizeof s->pages[0]);
    s->pages[s->npages].tag = tag;
    *out = s->npages++;
    return TMEM_OK;
}

static void list_push(tmem__small *s, uint32_t p) {
    tmem__small_page *pg = &s->pages[p];
    uint32_t head = s->head[pg->cls];
    pg->prev = NIL;
    pg->next = head;
    if (head != NIL) s->pages[head].prev = p;
    s->head[pg->cls] = p;
    pg->listed = 1;
}

static void list_unlink(tmem__small *s, uint32_t p) {
    tmem__small_page *pg = &s->pages[p];
    if (pg->prev != NIL) s->pages[pg->prev].next = pg->next;
    else s->head[pg->cls] = pg->next;
    if (pg->next != NIL) s->pages[pg->next].prev = pg->prev;
    pg->prev = pg->next = NIL;
    pg->listed = 0;
}

tmem_status tmem__small_add_page(tmem__small *s, uint32_t cls, uint64_t off, uint32_t tlsf_index) {
    uint32_t p = NIL;
    tmem_status st = record_take(s, &p);
    if (st != TMEM_OK) return st;
    tmem__small_page *pg = &s->pages[p];
    uint32_t bsize = tmem__small_class_size(s, cls);
    pg->offset = off;
    pg->tlsf_index = tlsf_index;
    pg->cls = cls;
    pg->bsize = bsize;
    /* ceil(2^32 / b): exact for every rel < 2^16 because rel * b < 2^32 */
    pg->inv = (uint32_t)(((1ull << 32) + bsize - 1) / bsize);
    pg->nblocks = (uint32_t)(TMEM__SMALL_PAGE / bsize);
    pg->nfree = pg->nblocks;
    pg->in_use = 1;
    memset(pg->free, 0, sizeof pg->free);
    pg->summary = 0;
    for (uint32_t w = 0; w * 64 < pg->nblocks; w++) {
        uint32_t n = pg->nblocks - w * 64;
        pg->free[w] = n >= 64 ? ~0ull : (1ull << n) - 1;
        pg->summary |= 1ull << w;
    }
    s->map[off >> TMEM__SMALL_PAGE_SHIFT] = p + 1;
    s->live_pages++;
    s->empty[cls]++;
    list_push(s, p);
    return TMEM_OK;
}

/* Take page p out of service; returns its TLSF record. */
static uint32_t page_retire(tmem__small *s, uint32_t p) {
    tmem__small_page *pg = &s->pages[p];
    if (pg->listed) list_unlink(s, p);
    s->map[pg->offset >> TMEM__SMALL_PAGE_SHIFT] = 0;
    s->empty[pg->cls]--;
    s->live_pages--;
    pg->in_use = 0;
    pg->pgen++; /* handles into the old page go stale */
    pg->summary = 0;
    pg->next = s->unused;
    s->unused = p;
    return pg->tlsf_index;
}

void tmem__small_relist(tmem__small *s, uint32_t p) { list_push(s, p); }

bool tmem__small_emptied(tmem__small *s, uint32_t p, uint32_t *tlsf_index) {
    /* Empty: keep it if it is the class's only empty page. */
    if (s->empty[s->pages[p].cls]++ == 0) return false;
    *tlsf_index = page_retire(s, p);
    return true;
}

void tmem__small_trim(tmem__small *s, tmem__small_give_fn fn, void *ctx) {
    for (uint32_t p = 0; p < s->npages; p++) {
        const tmem__small_page *pg = &s->pages[p];
        if (pg->in_use && pg->nfree == pg->nblocks) fn(ctx, page_retire(s, p));
    }
}

void tmem__small_reset(tmem__small *s) {
    for (uint32_t p = 0; p < s->npages; p++)
        if (s->pages[p].in_use) s->map[s->pages[p].offset >> TMEM__SMALL_PAGE_SHIFT] = 0;
    s->unused = NIL;
    for (uint32_t p = s->npages; p-- > 0;) {
        if (s->pages[p].in_use) s->pages[p].pgen++;
        s->pages[p].in_use = 0;
        s->pages[p].listed = 0;
        s->pages[p].next = s->unused;
        s->unused = p;
    }
    for (uint32_t c = 0; c < TMEM__SMALL_CLASSES; c++) {
        s->head[c] = NIL;
        s->empty[c] = 0;
    }
    s->live_pages = 0;
}

void tmem__small_walk(const tmem__small *s, tmem__small_visit fn, void *ctx) {
    for (uint32_t p = 0; p < s->npages; p++) {
        const tmem__small_page *pg = &s->pages[p];
        if (!pg->in_use || pg->nfree == pg->nblocks) continue;
        for (uint32_t i = 0; i < pg->nblocks; i++) {
            if (pg->free[i >> 6] >> (i & 63) & 1) continue;
            uint64_t off = pg->offset + (uint64_t)i * pg->bsize;
            if (!fn(ctx, off, pg->bsize, pg->bsize - tmem__small_slack(pg, i))) return;
        }
    }
}

#define CHECK_(c) do { if (!(c)) return tmem__err(TMEM_E_CORRUPT); } while (0)

static tmem_status check_page(const tmem__small *s, uint32_t p) {
    const tmem__small_page *pg = &s->pages[p];
    CHECK_(!(pg->offset & (TMEM__SMALL_PAGE - 1)) && (pg->offset >> TMEM__SMALL_PAGE_SHIFT) < s->nmap);
    CHECK_(s->map[pg->offset >> TMEM__SMALL_PAGE_SHIFT] == p + 1 && pg->cls < s->nclasses);
    CHECK_(pg->bsize == tmem__small_class_size(s, pg->cls) && pg->nblocks == TMEM__SMALL_PAGE / pg->bsize);
    uint32_t nfree = 0;
    for (uint32_t w = 0; w < TMEM__SMALL_WORDS; w++) {
        uint64_t left = w * 64 >= pg->nblocks ? 0 : pg->nblocks - w * 64;
        uint64_t valid = left >= 64 ? ~0ull : (1ull << left) - 1;
        CHECK_(!(pg->free[w] & ~valid));
        CHECK_(!!(pg->summary >> w & 1) == (pg->free[w] != 0));
        nfree += (uint32_t)__builtin_popcountll(pg->free[w]);
    }
    CHECK_(nfree == pg->nfree && pg->listed == (nfree != 0));
    for (uint32_t i = 0; i < pg->nblocks; i++)
        if (!(pg->free[i >> 6] >> (i & 63) & 1)) CHECK_(tmem__small_slack(pg, i) < pg->bsize);
    return TMEM_OK;
}

tmem_status tmem__small_check(const tmem__small *s) {
    if (!s->map) return TMEM_OK;
    uint32_t live = 0, listed = 0, empty[TMEM__SMALL_CLASSES] = {0};
    for (uint32_t p = 0; p < s->npages; p++) {
        const tmem__small_page *pg = &s->pages[p];
        if (!pg->in_use) continue;
        tmem_status st = check_page(s, p);
        if (st != TMEM_OK) return st;
        live++;
        if (pg->nfree == pg->nblocks) empty[pg->cls]++;
    }
    for (uint32_t c = 0; c < TMEM__SMALL_CLASSES; c++) {
        CHECK_(empty[c] == s->empty[c]);
        uint32_t prev = NIL;
        for (uint32_t p = s->head[c]; p != NIL; p = s->pages[p].next) {
            CHECK_(p < s->npages && s->pages[p].in_use && s->pages[p].cls == c && s->pages[p].prev == prev);
            CHECK_(++listed <= live);
            prev = p;
        }
    }
    uint64_t mapped = 0;
    for (uint64_t m = 0; m < s->nmap; m++) mapped += s->map[m] != 0;
    CHECK_(live == s->live_pages && mapped == live);
    return TMEM_OK;
}
