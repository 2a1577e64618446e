/*
 * Sorting an array of uint32 indices with a caller's comparison: the one
 * heap sort the model readers share (GGUF keys and tensors, safetensors
 * tensors, JSON object keys). Heap sort: O(n log n) worst case on hostile
 * input, no recursion, no allocation, and no qsort_r portability issue.
 */
#include "model_internal.h"

static void sift(uint32_t *a, uint64_t root, uint64_t n, tmem__index_cmp cmp, const void *ctx) {
    for (;;) {
        uint64_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && cmp(ctx, a[child], a[child + 1]) < 0) child++;
        if (cmp(ctx, a[root], a[child]) >= 0) return;
        uint32_t t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

void tmem__index_sort(uint32_t *a, uint64_t n, tmem__index_cmp cmp, const void *ctx) {
    for (uint64_t i = n / 2; i-- > 0;) sift(a, i, n, cmp, ctx);
    for (uint64_t end = n; end-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift(a, 0, end, cmp, ctx);
    }
}
