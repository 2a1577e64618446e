/* The same session done the naive way, for comparison in the same run (in
 * its own forked process, so the peaks do not mix):
 *  - weights: malloc per tensor and read from the file (no mapping: dirty);
 *  - image: a copy per stage, Image (NV12 frame) -> Pixel Buffer (NV12 copy)
 *    -> RGB (RGB8) -> Texture (RGBA8) -> Tensor (f32 CHW, resized), all
 *    alive until the vision encoder is done;
 *  - activations: malloc per buffer of the same layer graphs, freed at the
 *    end of each layer (no aliasing inside a layer);
 *  - KV: one contiguous buffer for the maximum context, cleared at creation
 *    (as llama.cpp clears its KV buffer); recurrent state and its snapshot
 *    malloc'd.
 * The shapes come from the same model descriptor and layer graphs; only the
 * memory management differs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "demo/demo_session.h"

typedef struct naive {
    const tmem_demo_options *opt;
    tmem_demo_result *res;
    uint64_t base;
    tmem_model_desc m;
    void **weights;
    uint32_t nweights;
} naive;

static tmem_status load_weights(naive *n, const demo_model_files *f) {
    n->weights = calloc(f->ntensors, sizeof *n->weights);
    if (!n->weights) return TMEM_E_NO_MEMORY;
    FILE *files[2] = {fopen(f->text, "rb"), fopen(f->mmproj, "rb")};
    tmem_status st = files[0] && files[1] ? TMEM_OK : TMEM_E_IO;
    for (uint32_t i = 0; st == TMEM_OK && i < f->ntensors; i++) {
        FILE *in = files[i >= f->ntext];
        const demo_tensor_rec *t = &f->tensors[i];
        n->weights[i] = malloc(t->size);
        n->nweights = i + 1;
        n->res->weights_dirty += t->size;
        if (!n->weights[i]) st = TMEM_E_NO_MEMORY;
        else if (fseeko(in, (off_t)t->offset, SEEK_SET) != 0 || fread(n->weights[i], 1, t->size, in) != t->size)
            st = TMEM_E_IO;
    }
    for (int i = 0; i < 2; i++)
        if (files[i]) fclose(files[i]);
    return st;
}

/* One layer: malloc every buffer of its graph, write it, free them all. */
static tmem_status layer(naive *n, tmem_model_layer_kind kind, uint64_t tokens, uint64_t ctx,
                         uint32_t salt, bool sample) {
    tmem_model_buffer bufs[DEMO_GRAPH_CAP];
    void *ptrs[DEMO_GRAPH_CAP];
    uint32_t count;
    tmem_status st = tmem_model_layer_graph(&n->m, kind, tokens, ctx, 0, bufs, DEMO_GRAPH_CAP, &count);
    uint32_t i = 0;
    for (; st == TMEM_OK && i < count; i++) {
        if (!(ptrs[i] = malloc(bufs[i].size))) st = TMEM_E_NO_MEMORY;
        else demo_touch(ptrs[i], bufs[i].size, salt + i);
    }
    if (sample) demo_sample(n->res, n->base);
    while (i-- > 0) free(ptrs[i]);
    return st;
}

static uint8_t clamp8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* The image stages; returns the tensor stage (the others stay alive). */
static tmem_status image(naive *n, uint32_t side, void *stage[5]) {
    uint32_t w = n->opt->frame_width ? n->opt->frame_width : 1280,
             h = n->opt->frame_height ? n->opt->frame_height : 720;
    uint64_t nv12 = (uint64_t)w * h * 3 / 2;
    uint8_t *frame = stage[0] = malloc(nv12), *pb = stage[1] = malloc(nv12);
    uint8_t *rgb = stage[2] = malloc((uint64_t)w * h * 3), *tex = stage[3] = malloc((uint64_t)w * h * 4);
    float *tensor = stage[4] = malloc(3ull * side * side * sizeof(float));
    if (!frame || !pb || !rgb || !tex || !tensor) return TMEM_E_NO_MEMORY;
    for (uint64_t i = 0; i < nv12; i++) frame[i] = (uint8_t)(16 + (i % w) * 160 / w);
    memcpy(pb, frame, nv12); /* the camera's pixel buffer handed to the app */
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) { /* BT.601 limited range */
            int Y = pb[(uint64_t)y * w + x] - 16, U = pb[(uint64_t)w * h + (uint64_t)(y / 2) * w + (x & ~1u)] - 128,
                V = pb[(uint64_t)w * h + (uint64_t)(y / 2) * w + (x & ~1u) + 1] - 128;
            uint8_t *o = rgb + ((uint64_t)y * w + x) * 3;
            o[0] = clamp8((298 * Y + 409 * V + 128) >> 8);
            o[1] = clamp8((298 * Y - 100 * U - 208 * V + 128) >> 8);
            o[2] = clamp8((298 * Y + 516 * U + 128) >> 8);
        }
    for (uint64_t i = 0; i < (uint64_t)w * h; i++) { /* upload as a texture */
        memcpy(tex + i * 4, rgb + i * 3, 3);
        tex[i * 4 + 3] = 255;
    }
    for (uint32_t c = 0; c < 3; c++) /* resize (nearest), normalise, HWC -> CHW */
        for (uint32_t y = 0; y < side; y++)
            for (uint32_t x = 0; x < side; x++)
                tensor[((uint64_t)c * side + y) * side + x] =
                    (tex[((uint64_t)(y * h / side) * w + x * w / side) * 4 + c] / 255.0f - 0.5f) / 0.5f;
    return TMEM_OK;
}

static tmem_status run(naive *n, const demo_model_files *f, void *stage[5], void *keep[4]) {
    const tmem_demo_options *o = n->opt;
    tmem_model_desc *m = &n->m;
    tmem_status st = tmem_model_preset("qwen3.5-0.8b", m);
    if (st == TMEM_OK) st = load_weights(n, f);
    demo_sample(n->res, n->base);
    uint32_t side = o->image_side;
    uint64_t itok, patches;
    if (st == TMEM_OK) st = tmem_model_vision_tokens(m, side, side, &itok, &patches);
    if (st == TMEM_OK) st = image(n, side, stage);
    for (uint32_t l = 0; st == TMEM_OK && l < m->vis_depth; l++)
        st = layer(n, TMEM_MODEL_LAYER_VISION, patches, patches, l, l == m->vis_depth / 2);
    float *embd = keep[0] = st == TMEM_OK ? malloc(itok * m->n_embd * 4) : NULL;
    if (st == TMEM_OK && !embd) st = TMEM_E_NO_MEMORY;
    if (st != TMEM_OK) return st;
    demo_touch(embd, itok * m->n_embd * 4, 7);
    demo_sample(n->res, n->base);
    for (int i = 0; i < 5; i++) {
        free(stage[i]);
        stage[i] = NULL;
    }

    uint64_t kvtok, state;
    if ((st = tmem_model_kv_bytes_per_token(m, TMEM_KV_DTYPE_DEFAULT, &kvtok)) != TMEM_OK ||
        (st = tmem_model_recurrent_bytes(m, TMEM_KV_DTYPE_DEFAULT, &state)) != TMEM_OK)
        return st;
    uint8_t *kv = keep[1] = malloc(DEMO_MAX_CONTEXT * kvtok), *rs = keep[2] = malloc(state);
    float *logits = keep[3] = malloc((uint64_t)m->n_vocab * 4);
    if (!kv || !rs || !logits) return TMEM_E_NO_MEMORY;
    /* cleared at creation (a memset the compiler may not turn into calloc's
     * untouched zero pages: the clear writes every page, as llama.cpp's does) */
    demo_touch(kv, DEMO_MAX_CONTEXT * kvtok, 0);
    demo_touch(rs, state, 0);
    uint32_t total = o->prompt_tokens + (uint32_t)itok, chunk = total < 512 ? total : 512;
    uint64_t ctx = (uint64_t)total + o->decode_tokens;
    for (uint32_t pos = 0, nt = 0; pos < total + o->decode_tokens; pos += nt) {
        bool prefill = pos < total;
        nt = prefill ? (total - pos < chunk ? total - pos : chunk) : 1;
        for (uint32_t l = 0; l < m->n_layers && st == TMEM_OK; l++) {
            bool full = (l + 1) % m->full_attn_interval == 0;
            st = layer(n, full ? TMEM_MODEL_LAYER_ATTENTION : TMEM_MODEL_LAYER_DELTANET,
                       prefill ? chunk : 1, ctx, pos + l, prefill);
        }
        if (st != TMEM_OK) return st;
        memset(kv + (uint64_t)pos * kvtok, (int)pos, (uint64_t)nt * kvtok);
        demo_touch(rs, state, pos);
        demo_touch(logits, (uint64_t)m->n_vocab * 4, pos);
        if (pos + nt == total) { /* the snapshot at the end of the prompt */
            void *snap = malloc(state);
            if (!snap) return TMEM_E_NO_MEMORY;
            memcpy(snap, rs, state);
            keep[0] = snap; /* the image embeddings were consumed */
            free(embd);
        }
        demo_sample(n->res, n->base);
        if (!prefill) n->res->generated++;
    }
    return TMEM_OK;
}

tmem_status demo_naive_run(const tmem_demo_options *opt, const demo_model_files *files, tmem_demo_result *res) {
    naive n = {0};
    n.opt = opt;
    n.res = res;
    tmem_footprint fp;
    if (tmem_footprint_read(&fp) == TMEM_OK) n.base = fp.private_dirty;
    void *stage[5] = {0}, *keep[4] = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tmem_status st = run(&n, files, stage, keep);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    res->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    for (int i = 0; i < 5; i++) free(stage[i]);
    for (int i = 0; i < 4; i++) free(keep[i]);
    for (uint32_t i = 0; i < n.nweights; i++) free(n.weights[i]);
    free(n.weights);
    return st;
}
