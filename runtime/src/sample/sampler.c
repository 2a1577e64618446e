/* sampler.c: the next token from a row of logits. Greedy (argmax, lowest id
 * on ties), or temperature sampling restricted to the top-k tokens and then
 * to the smallest set whose probability reaches top-p, from a seeded
 * xorshift64* stream so a seed replays a run. The candidates are ordered in
 * the caller's scratch by a heap (no qsort: glibc's may malloc a temporary
 * as large as the array): the top k by a k-entry min-heap, or, without
 * top-k, every token within exp(-30) of the most likely one, heap-sorted.
 * A non-finite logit (NaN, +-Inf) or a NaN temperature is refused (-1): it
 * means broken weights or input, and no token drawn from it is meaningful.
 * The most likely token is always a candidate, so the draw never runs over
 * an empty set, whatever the inputs. */
#include <math.h>
#include "rt_internal.h"

typedef struct cand {
    float logit;
    int32_t id;
} cand;
/* runtime.h promises n_vocab x 8 bytes of scratch; session_sample.c sizes it so */
_Static_assert(sizeof(cand) == 8, "a sampler candidate is 8 bytes");

void tmrt_sampler_init(tmrt_sampler *sp, const tmrt_sampler_desc *desc) {
    tmrt_sampler_desc d = {0};
    if (desc) d = *desc;
    sp->desc = d;
    sp->state = d.seed ^ 0x9E3779B97F4A7C15ull;
    if (!sp->state) sp->state = 1;
}

static double next_unit(tmrt_sampler *sp) {
    uint64_t x = sp->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    sp->state = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
}

/* a before b in the final order: higher logit first, lower id on ties */
static bool before(const cand *a, const cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* Sift down in a heap whose root is the candidate that comes LAST in the
 * order (a min-heap of the order), over c[0..n). */
static void sift(cand *c, uint32_t n, uint32_t i) {
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(&c[m], &c[l])) m = l;
        if (r < n && before(&c[m], &c[r])) m = r;
        if (m == i) return;
        cand t = c[i];
        c[i] = c[m];
        c[m] = t;
        i = m;
    }
}

/* Heap-sort c[0..n) into the order (best first). */
static void heap_sort(cand *c, uint32_t n) {
    for (uint32_t i = n / 2; i-- > 0;) sift(c, n, i);
    for (uint32_t end = n; end > 1; end--) { /* the worst goes to the end */
        cand t = c[0];
        c[0] = c[end - 1];
        c[end - 1] = t;
        sift(c, end - 1, 0);
    }
}

static int32_t argmax(const float *logits, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

uint32_t tmrt_logits_first_nonfinite(const float *logits, uint32_t n) {
    if (!logits) return n;
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(logits[i])) return i;
    return n;
}

int32_t tmrt_sample(const float *logits, uint32_t n_vocab, tmrt_sampler *sp, void *scratch) {
    if (!logits || !n_vocab) return -1;
    if (tmrt_logits_first_nonfinite(logits, n_vocab) != n_vocab) return -1;
    if (sp && isnan(sp->desc.temperature)) return -1;
    if (!sp || sp->desc.temperature <= 0 || !scratch) return argmax(logits, n_vocab);
    float inv_t = 1.0f / sp->desc.temperature;
    if (!isfinite(inv_t)) return argmax(logits, n_vocab); /* a temperature so small it is greedy */
    cand *c = scratch;
    uint32_t n = 0, best = (uint32_t)argmax(logits, n_vocab);
    float mx = logits[best];
    if (sp->desc.top_k && sp->desc.top_k < n_vocab) {
        uint32_t k = sp->desc.top_k;
        for (uint32_t i = 0; i < n_vocab; i++) {
            cand x = {logits[i], (int32_t)i};
            if (n < k) {
                c[n++] = x;
                if (n == k)
                    for (uint32_t j = k / 2; j-- > 0;) sift(c, k, j);
            } else if (before(&x, &c[0])) { /* better than the worst kept */
                c[0] = x;
                sift(c, k, 0);
            }
        }
        if (n < k)
            for (uint32_t j = n / 2; j-- > 0;) sift(c, n, j);
    } else {
        for (uint32_t i = 0; i < n_vocab; i++)
            if (i == best || (logits[i] - mx) * inv_t > -30.0f) c[n++] = (cand){logits[i], (int32_t)i};
    }
    heap_sort(c, n);
    /* softmax over the candidates at the temperature, in place of the logits */
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        c[i].logit = expf((c[i].logit - mx) * inv_t);
        sum += c[i].logit;
    }
    if (sp->desc.top_p > 0 && sp->desc.top_p < 1) {
        double acc = 0;
        for (uint32_t i = 0; i < n; i++) {
            acc += c[i].logit / sum;
            if (acc >= sp->desc.top_p) {
                n = i + 1;
                break;
            }
        }
        sum = 0;
        for (uint32_t i = 0; i < n; i++) sum += c[i].logit;
    }
    if (!(sum > 0) || !isfinite(sum)) return c[0].id; /* cannot happen with finite logits; never draw blind */
    double r = next_unit(sp) * sum, acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        acc += c[i].logit;
        if (r < acc) return c[i].id;
    }
    return c[n - 1].id;
}
