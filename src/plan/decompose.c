/*
 * Decomposition: at a time point that no buffer spans, the buffers before it
 * and after it never meet, so the two sides are independent problems (the
 * arena is the larger of their arenas). Splitting at every such point turns
 * one big search into many small ones.
 */
#include "plan_internal.h"
#include <stdlib.h>
#include <string.h>

void tmem__plan_parts_free(tmem__plan_inst *parts, uint32_t nparts) {
    if (!parts) return;
    for (uint32_t k = 0; k < nparts; k++) tmem__plan_inst_free(&parts[k]);
    free(parts);
}

tmem_status tmem__plan_decompose(const tmem__plan_inst *in, tmem__plan_inst **out, uint32_t *nparts) {
    *out = NULL;
    *nparts = 0;
    uint32_t ns = in->nsec;
    /* span[k] > 0: some buffer covers the boundary between sections k-1, k */
    int64_t *span = calloc((size_t)ns + 2, sizeof *span);
    uint32_t *part_of = malloc(((size_t)ns + 1) * sizeof *part_of);
    if (!span || !part_of) {
        free(span);
        free(part_of);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (uint32_t i = 0; i < in->n; i++) {
        if (in->hi[i] - in->lo[i] < 2) continue;
        span[in->lo[i] + 1]++;
        span[in->hi[i]]--;
    }
    uint32_t np = 0;
    int64_t cover = 0;
    for (uint32_t k = 0; k < ns; k++) {
        cover += span[k];
        if (k == 0 || cover == 0) np++;
        part_of[k] = np - 1;
    }
    if (np == 0) np = 1;
    tmem__plan_inst *parts = calloc(np, sizeof *parts);
    uint32_t *count = calloc(np, sizeof *count), *first = calloc((size_t)np + 1, sizeof *first);
    tmem_status st = TMEM_OK;
    if (!parts || !count || !first) {
        st = tmem__err(TMEM_E_NO_MEMORY);
        goto out;
    }
    for (uint32_t i = 0; i < in->n; i++) count[ns ? part_of[in->lo[i]] : 0]++;
    for (uint32_t k = 0; k < ns; k++)
        if (k == 0 || part_of[k] != part_of[k - 1]) first[part_of[k]] = k;
    first[np] = ns;
    for (uint32_t p = 0; p < np; p++) {
        st = tmem__plan_inst_alloc(&parts[p], count[p], first[p + 1] - first[p]);
        if (st) {
            tmem__plan_parts_free(parts, p);
            parts = NULL;
            goto out;
        }
        parts[p].n = 0;
        parts[p].step = in->step;
    }
    for (uint32_t i = 0; i < in->n; i++) {
        uint32_t p = ns ? part_of[in->lo[i]] : 0;
        tmem__plan_inst *q = &parts[p];
        uint32_t j = q->n++;
        q->size[j] = in->size[i];
        q->align[j] = in->align[i];
        q->fixed[j] = in->fixed[i];
        q->len[j] = in->len[i];
        q->lo[j] = in->lo[i] - first[p];
        q->hi[j] = in->hi[i] - first[p];
        q->orig[j] = i;
    }
    /* drop parts without buffers (time gaps) */
    uint32_t w = 0;
    for (uint32_t p = 0; p < np; p++) {
        if (parts[p].n == 0) {
            tmem__plan_inst_free(&parts[p]);
            continue;
        }
        parts[w++] = parts[p];
    }
    *out = parts;
    *nparts = w;
out:
    free(span);
    free(part_of);
    free(count);
    free(first);
    if (st) free(parts);
    return st;
}
