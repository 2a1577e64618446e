/* scratch.c: per-op scratch. The session gives the run one range (a LINEAR
 * heap's allocation in typed mode, a malloc in naive mode); every op takes
 * what it needs from its start and gives it all back before the next op,
 * so the range is sized by the largest op, not their sum. */
#include "rt_internal.h"

#define SCRATCH_ALIGN 64u

void *tmrt__scratch(tmrt_run *r, size_t bytes) {
    size_t at = (r->scratch_used + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
    if (bytes > r->scratch_cap || at > r->scratch_cap - bytes) return NULL; /* sized by tmrt__scratch_bytes */
    r->scratch_used = at + bytes;
    return r->scratch + at;
}

void tmrt__scratch_reset(tmrt_run *r) { r->scratch_used = 0; }

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

static size_t mm(const kern_wmat *w, uint32_t n, int threads) {
    return w->data ? tmrt__kern_matmul_scratch_bytes(w, n, threads) + SCRATCH_ALIGN : 0;
}

size_t tmrt__scratch_bytes(const tmrt_model *m, uint32_t chunk, int threads, uint32_t head_rows) {
    const tmrt_hparams *hp = &m->hp;
    size_t need = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        const tmrt_layer_weights *lw = &m->w.layers[il];
        const kern_wmat *all[] = {&lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->wqkv, &lw->wgate, &lw->wbeta,
                                  &lw->walpha, &lw->ssm_out, &lw->ffn_gate, &lw->ffn_up, &lw->ffn_down};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) need = max_sz(need, mm(all[i], chunk, threads));
    }
    /* the LM head row: the normed hidden row + the matmul's scratch; a batch
     * run's rows at once, with the output norm's vector beside them */
    need = max_sz(need, mm(&m->w.output, 1, threads) + (size_t)hp->n_embd * 4 + SCRATCH_ALIGN);
    if (head_rows > 1)
        need = max_sz(need, mm(&m->w.output, head_rows, threads) + (size_t)(head_rows + 1) * hp->n_embd * 4 +
                                2 * SCRATCH_ALIGN);
    /* vectors dequantised for an op (norm weights, gates' biases: at most
     * four of the widest) and the DeltaNet's cumulative gates per head */
    size_t vec = (size_t)(hp->n_embd > hp->ssm_inner ? hp->n_embd : hp->ssm_inner) * 4 * 4 + 4 * SCRATCH_ALIGN;
    size_t delta = (size_t)hp->ssm_v_heads * TMEM_MODEL_DELTA_CHUNK * 4 + SCRATCH_ALIGN;
    need = max_sz(need, vec + delta + 2 * SCRATCH_ALIGN);
    /* the sampler: (logit, id) pairs over the vocabulary */
    need = max_sz(need, (size_t)hp->n_vocab * 8 + SCRATCH_ALIGN);
    return need;
}
