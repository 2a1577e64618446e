/*
 * Who is alive with whom: for every buffer, the buffers sharing at least one
 * section. Built from the buffers sorted by first section: the partners of i
 * that start no earlier than i are the next ones in that order whose first
 * section is before i's end, so each pair is found once, in O(n log n + pairs).
 */
#include "plan_internal.h"
#include <stdlib.h>

/* Indices are sorted by a packed key (first section << 32 | index), so the
 * comparator needs no context. */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

tmem_status tmem__plan_adj_build(const tmem__plan_inst *inst, uint64_t budget, tmem__plan_adj *out) {
    uint32_t n = inst->n;
    out->start = out->adj = NULL;
    out->pairs = 0;
    uint64_t *key = malloc((size_t)n * sizeof *key + 1);
    uint32_t *deg = calloc((size_t)n + 1, sizeof *deg);
    if (!key || !deg) {
        free(key);
        free(deg);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    /* key = first section << 32 | index: sorting it sorts by start. */
    for (uint32_t i = 0; i < n; i++) key[i] = (uint64_t)inst->lo[i] << 32 | i;
    qsort(key, n, sizeof *key, cmp_u64);
    uint64_t pairs = 0;
    uint32_t *reach = malloc((size_t)n * sizeof *reach + 1);
    if (!reach) {
        free(key);
        free(deg);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (uint32_t p = 0; p < n; p++) {
        uint32_t i = (uint32_t)key[p], hi = inst->hi[i];
        /* first position q > p whose start >= hi */
        uint32_t a = p + 1, b = n;
        while (a < b) {
            uint32_t m = a + (b - a) / 2;
            if ((uint32_t)(key[m] >> 32) < hi) a = m + 1;
            else b = m;
        }
        reach[p] = a;
        pairs += a - p - 1;
        if (pairs * 2 > budget || pairs * 2 >= UINT32_MAX) {
            free(key);
            free(deg);
            free(reach);
            return TMEM_E_LIMIT;
        }
    }
    uint32_t *start = malloc(((size_t)n + 1) * sizeof *start);
    uint32_t *adj = malloc((size_t)(pairs * 2) * sizeof *adj + 1);
    if (!start || !adj) {
        free(key);
        free(deg);
        free(reach);
        free(start);
        free(adj);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (uint32_t p = 0; p < n; p++) {
        uint32_t i = (uint32_t)key[p];
        deg[i] += reach[p] - p - 1;
        for (uint32_t q = p + 1; q < reach[p]; q++) deg[(uint32_t)key[q]]++;
    }
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        start[i] = (uint32_t)acc;
        acc += deg[i];
    }
    start[n] = (uint32_t)acc;
    for (uint32_t i = 0; i < n; i++) deg[i] = start[i];
    for (uint32_t p = 0; p < n; p++) {
        uint32_t i = (uint32_t)key[p];
        for (uint32_t q = p + 1; q < reach[p]; q++) {
            uint32_t j = (uint32_t)key[q];
            adj[deg[i]++] = j;
            adj[deg[j]++] = i;
        }
    }
    free(key);
    free(deg);
    free(reach);
    out->start = start;
    out->adj = adj;
    out->pairs = pairs;
    return TMEM_OK;
}

void tmem__plan_adj_free(tmem__plan_adj *adj) {
    if (!adj) return;
    free(adj->start);
    free(adj->adj);
    adj->start = adj->adj = NULL;
}
