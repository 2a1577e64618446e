/* vk_deltanet.c: the Gated DeltaNet's core on the device: the recurrent
 * form (shaders/dn_recurrent.comp) and the chunked form
 * (dn_chunk_prep.comp then dn_chunk_scan.comp), the state updated in place. */
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

#define CHUNK 64u
#define MAX_DK 128u

uint64_t tmrt__vk_deltanet_scratch_bytes(uint32_t n_tok, uint32_t dk, uint32_t dv, uint32_t n_v_heads) {
    uint64_t chunks = (n_tok + CHUNK - 1) / CHUNK;
    return chunks * n_v_heads * (CHUNK + CHUNK * (uint64_t)dv + CHUNK * (uint64_t)dk + CHUNK * CHUNK) * 4;
}

static bool args_ok(tmrt_vk_rec *rec, const tmrt_vk_deltanet *d) {
    const char *op = "deltanet";
    uint32_t n = d->n_tok, Hv = d->n_v_heads;
    if (!n || !d->dk || d->dk > MAX_DK || !d->dv || !d->n_k_heads || !Hv || d->qk_ts < d->n_k_heads * d->dk ||
        d->v_ts < Hv * d->dv || d->o_ts < Hv * d->dv) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens, dk %u (<= %u), dv %u, %u key / %u value heads, "
                          "strides %u %u %u", op, n, d->dk, MAX_DK, d->dv, d->n_k_heads, Hv, d->qk_ts, d->v_ts,
                          d->o_ts);
        return false;
    }
    uint64_t qk = ((uint64_t)(n - 1) * d->qk_ts + (uint64_t)d->n_k_heads * d->dk) * 4;
    uint64_t v = ((uint64_t)(n - 1) * d->v_ts + (uint64_t)Hv * d->dv) * 4;
    uint64_t o = ((uint64_t)(n - 1) * d->o_ts + (uint64_t)Hv * d->dv) * 4, gb = (uint64_t)n * Hv * 4;
    if (!tmrt__vk_need(rec, op, "q", d->q, qk) || !tmrt__vk_need(rec, op, "k", d->k, qk) ||
        !tmrt__vk_need(rec, op, "v", d->v, v) || !tmrt__vk_need(rec, op, "gate", d->gate, gb) ||
        !tmrt__vk_need(rec, op, "beta", d->beta, gb) ||
        !tmrt__vk_need(rec, op, "state", d->state, (uint64_t)Hv * d->dv * d->dk * 4) ||
        !tmrt__vk_need(rec, op, "out", d->out, o))
        return false;
    return !d->chunked ||
           tmrt__vk_need(rec, op, "scratch", d->scratch, tmrt__vk_deltanet_scratch_bytes(n, d->dk, d->dv, Hv));
}

typedef struct rec_push {
    uint32_t n_tok, dk, dv, G, Hv, qk_ts, v_ts, o_ts, flags, bias_type, bias_base, a_type, a_base;
    float l2_eps, q_scale;
} rec_push;

static void recurrent(tmrt_vk_rec *rec, const tmrt_vk_deltanet *d) {
    const char *op = "deltanet";
    rec_push pc = {d->n_tok, d->dk, d->dv, d->n_k_heads, d->n_v_heads, d->qk_ts, d->v_ts, d->o_ts,
                   d->l2 ? 1u : 0u, 0, 0, 0, 0, d->l2_eps, d->q_scale};
    tmrt_vk_buf b[9] = {d->q, d->k, d->v, d->gate, d->beta, d->state, d->out, d->q, d->q};
    if (d->dt_bias.buf.buffer) {
        if (d->dt_bias.n_in < d->n_v_heads || d->ssm_a.n_in < d->n_v_heads) {
            tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: dt_bias / ssm_a of %u / %u for %u heads", op,
                              d->dt_bias.n_in, d->ssm_a.n_in, d->n_v_heads);
            return;
        }
        if (!tmrt__vk_wvec(rec, op, "dt_bias", &d->dt_bias, &b[7], &pc.bias_base) ||
            !tmrt__vk_wvec(rec, op, "ssm_a", &d->ssm_a, &b[8], &pc.a_base))
            return;
        pc.flags |= 2u, pc.bias_type = d->dt_bias.type, pc.a_type = d->ssm_a.type;
    }
    uint32_t rows = tmrt__vk_spec(rec->vk, TMRT_VK_K_DN_RECURRENT)[0] / 4; /* 4 threads a row */
    tmrt__vk_dispatch(rec, TMRT_VK_K_DN_RECURRENT, b, 9, &pc, sizeof pc,
                      (uint64_t)d->n_v_heads * tmrt__vk_div_up(d->dv, rows));
}

tmem_status tmrt__vk_deltanet(tmrt_vk_rec *rec, const tmrt_vk_deltanet *d) {
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    if (!args_ok(rec, d)) return rec->status;
    if (d->chunked && (d->l2 || d->dt_bias.buf.buffer))
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "deltanet: the fusions are the recurrent form's");
    if (!d->chunked) {
        recurrent(rec, d);
        return rec->status;
    }
    uint32_t pc[8] = {d->n_tok, d->dk, d->dv, d->n_k_heads, d->n_v_heads, d->qk_ts, d->v_ts, d->o_ts};
    tmrt_vk_buf b[8] = {d->q, d->k, d->v, d->gate, d->beta, d->state, d->out, d->scratch};
    tmrt__vk_dispatch(rec, TMRT_VK_K_DN_CHUNK_PREP, b, 8, pc, sizeof pc,
                      tmrt__vk_div_up(d->n_tok, CHUNK) * d->n_v_heads);
    tmrt__vk_barrier(rec);
    tmrt__vk_dispatch(rec, TMRT_VK_K_DN_CHUNK_SCAN, b, 8, pc, sizeof pc,
                      (uint64_t)d->n_v_heads * tmrt__vk_div_up(d->dv, 16));
    return rec->status;
}
