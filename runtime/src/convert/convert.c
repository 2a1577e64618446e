/*
 * tmrt_convert: a Hugging Face Qwen3.5 checkpoint -> llama.cpp's qwen35 GGUF.
 * Everything is checked before the output file is created (config, every
 * tensor present with the shape the config implies, no tensor left over);
 * then the header is written and each tensor streamed from the mapped
 * shards. Any failure removes the partial output.
 */
#include "convert_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tmem_status check_dtype(tmem_weight_dtype *d, tmrt_error *err) {
    if (*d == TMEM_WEIGHT_DEFAULT) *d = TMEM_WEIGHT_F16;
    if (*d != TMEM_WEIGHT_F32 && *d != TMEM_WEIGHT_F16 && *d != TMEM_WEIGHT_BF16 && *d != TMEM_WEIGHT_Q8_0)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "output dtype must be f32, f16, bf16 or q8_0");
    return TMEM_OK;
}

/* Tensors of a checkpoint that a text conversion leaves out on purpose. */
static const char *const skipped_text[] = {"model.visual.", "visual.", "mtp.", "model.mtp.", NULL};
static const char *const skipped_tied[] = {"model.visual.", "visual.", "mtp.", "model.mtp.", "lm_head.", NULL};

tmem_status tmrt__cv_writer_new(const cv_hparams *h, tmem_weight_dtype dtype, tmem_gguf_writer **w,
                                tmrt_error *err) {
    tmem_status st = tmem_gguf_writer_create(NULL, 0, w);
    if (st) return tmrt__fail(err, st, "out of memory for the GGUF writer");
    if ((st = tmrt__cv_layout_metadata(*w, h, dtype))) {
        tmem_gguf_writer_destroy(*w);
        *w = NULL;
        return tmrt__fail(err, st, "writing the metadata failed: %s", tmem_strerror(st));
    }
    return TMEM_OK;
}

tmem_status tmrt__cv_write_model(tmem_gguf_writer *w, const char *path, const cv_tensor *t, size_t n,
                                 const cv_hparams *h, const tmem_safetensors_tensor *src, uint64_t seed,
                                 tmrt_progress_fn fn, void *user, uint64_t *file_bytes,
                                 tmrt_error *err) {
    tmem_status st = TMEM_OK;
    for (size_t i = 0; i < n; i++)
        if ((st = tmem_gguf_writer_add_tensor_info(w, t[i].name, t[i].type, t[i].n_dims, t[i].ne)))
            return tmrt__fail(err, st, "declaring tensor '%s' failed: %s", t[i].name, tmem_strerror(st));
    cv_progress p = {fn, user, 0, 0, 0};
    for (size_t i = 0; i < n; i++) p.total += tmrt__cv_tensor_bytes(&t[i]);
    tmem_gguf_stream *s;
    st = tmem_gguf_stream_begin(w, path, &s);
    if (st) return tmrt__fail(err, st, "%s: cannot create: %s", path, tmem_strerror(st));
    for (size_t i = 0; i < n && !st; i++)
        st = src ? tmrt__cv_rows_convert(s, &t[i], h, &src[i], &p, err)
                 : tmrt__cv_rows_generate(s, &t[i], h, seed, &p, err);
    if (st) {
        tmem_gguf_stream_abort(s);
        return st;
    }
    if ((st = tmem_gguf_stream_finish(s, file_bytes)))
        return tmrt__fail(err, st, "%s: writing failed: %s", path, tmem_strerror(st));
    return TMEM_OK;
}

void tmrt__cv_fill_result(tmrt_convert_result *out, const cv_tensor *t, size_t n, const cv_hparams *h, uint64_t bytes,
                    bool tokenizer) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->file_bytes = bytes;
    out->tensors = n;
    for (size_t i = 0; i < n; i++) out->params += t[i].ne[0] * t[i].ne[1] * t[i].ne[2] * t[i].ne[3];
    out->n_layers = h->n_layers;
    for (uint32_t i = 0; i < h->n_layers; i++) {
        if (h->recurrent[i]) out->n_linear_attention++;
        else out->n_full_attention++;
    }
    out->tokenizer = tokenizer;
}

tmem_status tmrt_convert(tmem_context *ctx, const tmrt_convert_desc *desc, tmrt_convert_result *out,
                         tmrt_error *err) {
    if (out) memset(out, 0, sizeof *out);
    if (err) err->message[0] = 0;
    if (!ctx || !desc || !desc->hf_dir || !desc->out_path)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "a context, hf_dir and out_path are required");
    tmem_weight_dtype dtype = desc->dtype;
    tmem_status st = check_dtype(&dtype, err);
    if (st) return st;
    cv_hparams h;
    if ((st = tmrt__cv_config_read(ctx, desc->hf_dir, &h, err))) return st;
    if (desc->name) snprintf(h.name, sizeof h.name, "%s", desc->name);
    cv_source *src = NULL;
    cv_tensor *t = NULL;
    size_t n = 0;
    tmem_safetensors_tensor *views = NULL;
    tmem_gguf_writer *w = NULL;
    bool tok = false;
    uint64_t bytes = 0;
    if ((st = tmrt__cv_source_open(ctx, desc->hf_dir, &src, err))) goto done;
    if ((st = tmrt__cv_layout_tensors(&h, dtype, &t, &n, err))) goto done;
    views = calloc(n ? n : 1, sizeof *views);
    if (!views) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && !st; i++) {
        if (tmrt__cv_source_find(src, t[i].hf, &views[i]) != TMEM_OK)
            st = tmrt__fail(err, TMEM_E_NOT_FOUND, "checkpoint has no tensor '%s' (needed for '%s')",
                               t[i].hf, t[i].name);
        else st = tmrt__cv_rows_check(&t[i], &views[i], err);
    }
    if (st) goto done;
    if (h.tied) {
        tmem_safetensors_tensor lm;
        (void)tmrt__cv_source_find(src, "lm_head.weight", &lm); /* tied: the embedding serves as output */
    }
    const char *left = tmrt__cv_source_unused(src, h.tied ? skipped_tied : skipped_text);
    if (left) {
        st = tmrt__fail(err, TMEM_E_CORRUPT, "checkpoint tensor '%s' has no place in the qwen35 layout", left);
        goto done;
    }
    if ((st = tmrt__cv_writer_new(&h, dtype, &w, err))) goto done;
    if ((st = tmrt__cv_tokenizer_convert(ctx, w, desc->hf_dir, &h, &tok, err))) goto done;
    if ((st = tmrt__cv_write_model(w, desc->out_path, t, n, &h, views, 0, desc->progress, desc->progress_user,
                                   &bytes, err)))
        goto done;
    tmrt__cv_fill_result(out, t, n, &h, bytes, tok);
    if (desc->mmproj_path) {
        uint64_t mb = 0;
        st = tmrt__cv_vision_convert(ctx, desc->hf_dir, desc->mmproj_path, dtype, &mb, err);
        if (out) out->mmproj_bytes = mb;
        if (st) { /* all or nothing: no text model without the tower asked for */
            (void)remove(desc->out_path);
            if (out) memset(out, 0, sizeof *out);
        }
    }
done:
    tmem_gguf_writer_destroy(w);
    free(views);
    free(t);
    tmrt__cv_source_close(src);
    return st;
}
