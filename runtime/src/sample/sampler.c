/* sampler.c: the next token from a row of logits. Greedy (argmax, lowest id
 * on ties), or temperature sampling restricted to the top-k tokens and then
 * to the smallest set whose probability reaches top-p, from a seeded
 * xorshift64* stream so a seed replays a run. */
#include <math.h>
#include <stdlib.h>
#include "rt_internal.h"

typedef struct cand {
    float logit;
    int32_t id;
} cand;

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

static int by_logit_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int32_t argmax(const float *logits, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

int32_t tmrt_sample(const float *logits, uint32_t n_vocab, tmrt_sampler *sp, void *scratch) {
    if (!logits || !n_vocab) return -1;
    if (!sp || sp->desc.temperature <= 0 || !scratch) return argmax(logits, n_vocab);
    cand *c = scratch;
    for (uint32_t i = 0; i < n_vocab; i++) c[i] = (cand){logits[i], (int32_t)i};
    qsort(c, n_vocab, sizeof *c, by_logit_desc);
    uint32_t n = sp->desc.top_k && sp->desc.top_k < n_vocab ? sp->desc.top_k : n_vocab;
    /* softmax over the candidates at the temperature, in place of the logits */
    float inv_t = 1.0f / sp->desc.temperature, mx = c[0].logit;
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
    double r = next_unit(sp) * sum, acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        acc += c[i].logit;
        if (r < acc) return c[i].id;
    }
    return c[n - 1].id;
}

tmem_status tmrt_session_sample(tmrt_session *s, tmrt_sampler *sp, int32_t *out) {
    if (!s || !sp || !out) return TMEM_E_INVALID_ARG;
    const float *logits = tmrt_session_logits(s);
    if (!logits) return TMEM_E_STATE;
    tmrt_run *r = tmrt__session_run(s);
    const tmrt_model *m = r->model;
    tmrt__scratch_reset(r);
    void *scratch = sp->desc.temperature > 0 ? tmrt__scratch(r, (size_t)m->hp.n_vocab * sizeof(cand)) : NULL;
    *out = tmrt_sample(logits, m->hp.n_vocab, sp, scratch);
    tmrt__scratch_reset(r);
    return TMEM_OK;
}
