/* batch.c: one decode step of several sessions as one forward pass.
 *
 * The sessions are attached to one runner (session.c): the runner's
 * one-token graphs are planned for its batch of rows, so token i of the
 * step is sequence i's next token, through the same kernels and the same
 * per-row arithmetic as a session decoding alone: the matmuls give a row
 * the same bits alone or in a batch (kern.h), attention and the delta rule
 * run per (token, head) over that token's own cache rows and state, the
 * conv per token over its own history. So every weight matrix, the LM head
 * included, is read once per step for all of them, and each sequence's
 * logits are bit for bit those of a session that runs alone. */
#include <string.h>
#include "session.h"

tmem_status tmrt__session_decode_batch(tmrt_session *runner, tmrt_session *const *ss, const int32_t *tokens,
                                       uint32_t n, tmrt_error *err) {
    if (!runner || !runner->is_runner || !ss || !tokens || !n || n > runner->decode_rows || n > TMRT_MAX_BATCH)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "batch: bad arguments");
    const tmrt_hparams *hp = &runner->model->hp;
    for (uint32_t i = 0; i < n; i++) {
        const tmrt_session *s = ss[i];
        if (!s || s->runner != runner || s->suspended)
            return tmrt__fail(err, TMEM_E_INVALID_ARG, "batch: session %u is not attached to this runner", i);
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= hp->n_vocab)
            return tmrt__fail(err, TMEM_E_INVALID_ARG, "batch: token %d outside the vocabulary", tokens[i]);
        if (s->n_past >= s->n_ctx)
            return tmrt__fail(err, TMEM_E_FULL, "batch: session %u is at its context of %u", i, s->n_ctx);
        for (uint32_t j = 0; j < i; j++)
            if (ss[j] == s) return tmrt__fail(err, TMEM_E_INVALID_ARG, "batch: session %u twice", i);
    }
    /* room for one token each, all or nothing */
    tmem_status st = TMEM_OK;
    uint32_t grown = 0;
    for (; grown < n && !st; grown++)
        if ((st = tmrt__session_grow(ss[grown], 1, err))) break;
    if (!st) st = tmrt__session_reset_scratch(runner);
    if (st) {
        for (uint32_t i = 0; i < grown; i++) {
            (void)!tmem_kv_seq_truncate(ss[i]->cache, ss[i]->seq, ss[i]->n_past);
            (void)!tmrt__session_refresh(ss[i]);
        }
        return st;
    }
    tmrt_lane lanes[TMRT_MAX_BATCH];
    for (uint32_t i = 0; i < n; i++)
        lanes[i] = (tmrt_lane){&ss[i]->run.kv, ss[i]->run.conv_state, ss[i]->run.ssm_state, ss[i]->n_past};
    tmrt_run *r = &runner->run;
    r->logits = runner->batch_logits;
    tmrt_step step = {0};
    step.tokens = tokens;
    step.n = n;
    step.decode = true;
    step.logits = TMRT_LOGITS_LAST;
    step.lanes = lanes;
    if ((st = tmrt__forward(r, &step))) return tmrt__fail(err, st, "batch: %s", tmem_strerror(st));
    for (uint32_t i = 0; i < n; i++) {
        tmrt_session *s = ss[i];
        memcpy(s->run.logits, r->logits + (size_t)i * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
        s->have_logits = true;
        s->tokens[s->n_past++] = tokens[i];
    }
    return TMEM_OK;
}
