/*
 * tmrt_gen: a qwen35 GGUF of a model descriptor's shape with seeded random
 * weights (convert_rows.c draws them), the same tensor list and metadata as
 * a converted checkpoint. Settings a descriptor does not carry are
 * Qwen3.5's published ones: rope theta 1e7, partial rotary 0.25, mrope
 * sections [11, 11, 10, 0], RMS eps 1e-6.
 */
#include "convert_internal.h"
#include "tmemrt/tokenizer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tmrt_tokenizer_synth_write's smallest vocabulary (bytes + specials + 1). */
#define GEN_MIN_TOKENIZER_VOCAB 283u

static tmem_status hparams_of(const tmem_model_desc *m, cv_hparams *h, tmrt_error *err) {
    memset(h, 0, sizeof *h);
    if (m->arch[0] && strcmp(m->arch, "qwen35"))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "model '%s' has architecture '%s', not qwen35", m->name, m->arch);
    snprintf(h->name, sizeof h->name, "%.40s (random weights)", m->name[0] ? m->name : "qwen35");
    h->n_layers = m->n_layers;
    h->n_embd = m->n_embd;
    h->n_ff = m->n_ff;
    h->n_vocab = m->n_vocab;
    h->n_ctx_train = m->n_ctx_train ? m->n_ctx_train : 262144;
    h->n_head = m->n_head;
    h->n_head_kv = m->n_head_kv;
    h->head_dim = m->head_dim_k;
    if (m->head_dim_v != m->head_dim_k)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "qwen35 needs equal key and value head dims (%u, %u)",
                             m->head_dim_k, m->head_dim_v);
    h->rope_dim = h->head_dim / 4;
    static const int32_t sections[4] = {11, 11, 10, 0};
    memcpy(h->rope_sections, sections, sizeof sections);
    h->rope_theta = 1e7;
    h->rms_eps = 1e-6;
    h->ssm_conv_kernel = m->ssm_conv_kernel;
    h->ssm_k_heads = m->ssm_group_count;
    h->ssm_k_dim = m->ssm_state_size;
    h->ssm_v_heads = m->ssm_time_step_rank;
    h->ssm_v_dim = m->ssm_time_step_rank ? m->ssm_inner_size / m->ssm_time_step_rank : 0;
    if (h->ssm_v_heads && h->ssm_v_dim * h->ssm_v_heads != m->ssm_inner_size)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "ssm_inner_size %u is not a multiple of ssm_time_step_rank %u",
                       m->ssm_inner_size, m->ssm_time_step_rank);
    if (h->n_layers > CV_MAX_LAYERS)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "%u layers (at most %u)", h->n_layers, CV_MAX_LAYERS);
    tmrt__cv_hparams_set_interval(h, m->full_attn_interval ? m->full_attn_interval : 1);
    h->tied = m->tied_embeddings;
    h->bos_id = h->eos_id = h->pad_id = -1;
    return tmrt__cv_hparams_check(h, err);
}

tmem_status tmrt_gen(tmem_context *ctx, const tmrt_gen_desc *desc, tmrt_convert_result *out, tmrt_error *err) {
    if (out) memset(out, 0, sizeof *out);
    if (err) err->message[0] = 0;
    if (!ctx || !desc || !desc->model || !desc->out_path)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "a context, a model and out_path are required");
    tmem_weight_dtype dtype = desc->dtype ? desc->dtype : TMEM_WEIGHT_F16;
    if (dtype != TMEM_WEIGHT_F32 && dtype != TMEM_WEIGHT_F16 && dtype != TMEM_WEIGHT_BF16 && dtype != TMEM_WEIGHT_Q8_0)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "output dtype must be f32, f16, bf16 or q8_0");
    cv_hparams h;
    tmem_status st = hparams_of(desc->model, &h, err);
    if (st) return st;
    cv_tensor *t = NULL;
    size_t n = 0;
    tmem_gguf_writer *w = NULL;
    uint64_t bytes = 0;
    if ((st = tmrt__cv_layout_tensors(&h, dtype, &t, &n, err))) return st;
    if ((st = tmrt__cv_writer_new(&h, dtype, &w, err))) goto done;
    /* the synthetic byte-level BPE needs room for 256 bytes and the specials */
    bool tok = !desc->no_tokenizer && h.n_vocab >= GEN_MIN_TOKENIZER_VOCAB;
    if (tok && (st = tmrt_tokenizer_synth_write(w, h.n_vocab))) {
        st = tmrt__fail(err, st, "writing the synthetic tokenizer failed: %s", tmem_strerror(st));
        goto done;
    }
    if ((st = tmrt__cv_write_model(w, desc->out_path, t, n, &h, NULL, desc->seed, desc->progress, desc->progress_user,
                             &bytes, err)))
        goto done;
    tmrt__cv_fill_result(out, t, n, &h, bytes, tok);
    if (desc->mmproj_path) {
        uint64_t mb = 0;
        st = tmrt__cv_vision_gen(ctx, desc->model, desc->mmproj_path, dtype, desc->seed, &mb, err);
        if (out) out->mmproj_bytes = mb;
        if (st) { /* all or nothing: no text model without the tower asked for */
            (void)remove(desc->out_path);
            if (out) memset(out, 0, sizeof *out);
        }
    }
done:
    tmem_gguf_writer_destroy(w);
    free(t);
    return st;
}
