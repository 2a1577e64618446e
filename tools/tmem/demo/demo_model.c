/* The demo's model: a Qwen3.5-0.8B-shaped GGUF pair (text weights and the
 * vision encoder's mmproj) generated with the library's GGUF writer at the
 * real tensor sizes, mapped into the FILE type as clean pages and read
 * through, its memory descriptor read back from the GGUF metadata, and the
 * fit calculator's prediction for the session printed up front. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/out.h"
#include "demo/demo_session.h"
#include "cli/progress.h"

/* ---- generating the files ---- */

typedef struct tensor_spec {
    const char *name; /* printf pattern with the layer index */
    uint32_t type;
    uint32_t n_dims;
    uint64_t d0, d1, d2, d3;
} tensor_spec;

/* llama.cpp's qwen35 tensor names and shapes (ne[0] = input features).
 * Q4_K_M-like: matrices Q4_K, the tied embedding Q6_K, norms f32. */
static const tensor_spec FFN[] = {
    {"blk.%u.attn_norm.weight", TMEM_GGML_F32, 1, 1024, 1, 1, 1},
    {"blk.%u.post_attention_norm.weight", TMEM_GGML_F32, 1, 1024, 1, 1, 1},
    {"blk.%u.ffn_gate.weight", TMEM_GGML_Q4_K, 2, 1024, 3584, 1, 1},
    {"blk.%u.ffn_up.weight", TMEM_GGML_Q4_K, 2, 1024, 3584, 1, 1},
    {"blk.%u.ffn_down.weight", TMEM_GGML_Q4_K, 2, 3584, 1024, 1, 1},
};
static const tensor_spec ATTN[] = {
    {"blk.%u.attn_q.weight", TMEM_GGML_Q4_K, 2, 1024, 4096, 1, 1}, /* 8 heads x 256, doubled by the output gate */
    {"blk.%u.attn_k.weight", TMEM_GGML_Q4_K, 2, 1024, 512, 1, 1},
    {"blk.%u.attn_v.weight", TMEM_GGML_Q4_K, 2, 1024, 512, 1, 1},
    {"blk.%u.attn_output.weight", TMEM_GGML_Q4_K, 2, 2048, 1024, 1, 1},
    {"blk.%u.attn_q_norm.weight", TMEM_GGML_F32, 1, 256, 1, 1, 1},
    {"blk.%u.attn_k_norm.weight", TMEM_GGML_F32, 1, 256, 1, 1, 1},
};
static const tensor_spec DELTANET[] = {
    {"blk.%u.attn_qkv.weight", TMEM_GGML_Q4_K, 2, 1024, 6144, 1, 1},
    {"blk.%u.attn_gate.weight", TMEM_GGML_Q4_K, 2, 1024, 2048, 1, 1},
    {"blk.%u.ssm_alpha.weight", TMEM_GGML_F32, 2, 1024, 16, 1, 1},
    {"blk.%u.ssm_beta.weight", TMEM_GGML_F32, 2, 1024, 16, 1, 1},
    {"blk.%u.ssm_conv1d.weight", TMEM_GGML_F32, 2, 4, 6144, 1, 1},
    {"blk.%u.ssm_a", TMEM_GGML_F32, 1, 16, 1, 1, 1},
    {"blk.%u.ssm_dt.bias", TMEM_GGML_F32, 1, 16, 1, 1, 1},
    {"blk.%u.ssm_norm.weight", TMEM_GGML_F32, 1, 128, 1, 1, 1},
    {"blk.%u.ssm_out.weight", TMEM_GGML_Q4_K, 2, 2048, 1024, 1, 1},
};
/* The vision encoder (llama.cpp's clip naming), Q8_0 matrices. */
static const tensor_spec VBLOCK[] = {
    {"v.blk.%u.ln1.weight", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"v.blk.%u.ln1.bias", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"v.blk.%u.attn_qkv.weight", TMEM_GGML_Q8_0, 2, 768, 2304, 1, 1},
    {"v.blk.%u.attn_qkv.bias", TMEM_GGML_F32, 1, 2304, 1, 1, 1},
    {"v.blk.%u.attn_out.weight", TMEM_GGML_Q8_0, 2, 768, 768, 1, 1},
    {"v.blk.%u.attn_out.bias", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"v.blk.%u.ln2.weight", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"v.blk.%u.ln2.bias", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"v.blk.%u.ffn_up.weight", TMEM_GGML_Q8_0, 2, 768, 3072, 1, 1},
    {"v.blk.%u.ffn_up.bias", TMEM_GGML_F32, 1, 3072, 1, 1, 1},
    {"v.blk.%u.ffn_down.weight", TMEM_GGML_Q8_0, 2, 3072, 768, 1, 1},
    {"v.blk.%u.ffn_down.bias", TMEM_GGML_F32, 1, 768, 1, 1, 1},
};
static const tensor_spec VGLOBAL[] = {
    {"v.patch_embd.weight", TMEM_GGML_F16, 4, 16, 16, 3, 768},
    {"v.patch_embd.weight.1", TMEM_GGML_F16, 4, 16, 16, 3, 768},
    {"v.position_embd.weight", TMEM_GGML_F16, 2, 768, 2304, 1, 1},
    {"v.post_ln.weight", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"v.post_ln.bias", TMEM_GGML_F32, 1, 768, 1, 1, 1},
    {"mm.0.weight", TMEM_GGML_Q8_0, 2, 3072, 3072, 1, 1},
    {"mm.0.bias", TMEM_GGML_F32, 1, 3072, 1, 1, 1},
    {"mm.2.weight", TMEM_GGML_Q8_0, 2, 3072, 1024, 1, 1},
    {"mm.2.bias", TMEM_GGML_F32, 1, 1024, 1, 1, 1},
};

typedef struct gen {
    tmem_gguf_writer *w;
    tmem_status st;
    uint64_t bytes, cap;
} gen;

static void add(gen *g, const tensor_spec *t, uint32_t layer) {
    if (g->st != TMEM_OK) return;
    char name[64];
    snprintf(name, sizeof name, t->name, layer);
    uint64_t dims[4] = {t->d0, t->d1, t->d2, t->d3}, row;
    g->st = tmem_ggml_row_size(t->type, t->d0 * t->d1 * t->d2 * t->d3, &row);
    if (g->st == TMEM_OK && g->cap && g->bytes + row > g->cap) return; /* capped: a smaller file */
    g->bytes += row;
    /* data NULL: the writer fills a generated pattern, so every page is real */
    if (g->st == TMEM_OK) g->st = tmem_gguf_writer_add_tensor(g->w, name, t->type, t->n_dims, dims, NULL);
}

static void add_all(gen *g, const tensor_spec *t, size_t n, uint32_t layer) {
    for (size_t i = 0; i < n; i++) add(g, &t[i], layer);
}

static void set_u32(gen *g, const char *key, uint64_t v) {
    tmem_gguf_value val = {.type = TMEM_GGUF_UINT32};
    val.v.u = v;
    if (g->st == TMEM_OK) g->st = tmem_gguf_writer_set(g->w, key, &val);
}

static void set_str(gen *g, const char *key, const char *s) {
    tmem_gguf_value val = {.type = TMEM_GGUF_STRING};
    val.v.s.data = s;
    val.v.s.len = strlen(s);
    if (g->st == TMEM_OK) g->st = tmem_gguf_writer_set(g->w, key, &val);
}

/* Serialise the writer to `path` and record where each tensor's data lies. */
static tmem_status write_file(tmem_gguf_writer *w, const char *path, demo_model_files *f, uint64_t *file_size) {
    size_t need = 0;
    tmem_status st = tmem_gguf_writer_write(w, NULL, 0, &need);
    if (st != TMEM_E_FULL) return st == TMEM_OK ? TMEM_E_CORRUPT : st;
    uint8_t *buf = malloc(need);
    if (!buf) return TMEM_E_NO_MEMORY;
    st = tmem_gguf_writer_write(w, buf, need, NULL);
    tmem_gguf *g = NULL;
    if (st == TMEM_OK) st = tmem_gguf_open_memory(NULL, buf, need, &g, NULL);
    tmem_gguf_info gi;
    if (st == TMEM_OK) st = tmem_gguf_get_info(g, &gi);
    if (st == TMEM_OK) {
        demo_tensor_rec *t = realloc(f->tensors, (f->ntensors + gi.tensor_count) * sizeof *t);
        if (!t) st = TMEM_E_NO_MEMORY;
        else f->tensors = t;
        for (uint64_t i = 0; st == TMEM_OK && i < gi.tensor_count; i++) {
            tmem_gguf_tensor tt;
            st = tmem_gguf_tensor_at(g, i, &tt);
            f->tensors[f->ntensors++] = (demo_tensor_rec){gi.data_offset + tt.offset, tt.size};
        }
    }
    tmem_gguf_close(g);
    if (st == TMEM_OK) {
        tmem_out_file *of = NULL;
        FILE *out = tool_out_open("gen", path, NULL, 0, &of); /* renamed over path only when whole */
        if (!out) st = TMEM_E_IO;
        else {
            /* In pieces, so a terminal shows how the generation goes. */
            tmem_progress prog;
            tmem_progress_begin(&prog, "writing model", need);
            for (size_t done = 0; st == TMEM_OK && done < need;) {
                size_t piece = need - done < (16u << 20) ? need - done : (16u << 20);
                if (fwrite(buf + done, 1, piece, out) != piece) st = TMEM_E_IO;
                done += piece;
                tmem_progress_update(&prog, done);
            }
            tmem_progress_end(&prog);
            /* On disk, as a downloaded model is: its page-cache pages are
             * then clean (a dirty page cache page reads as Private_Dirty in
             * smaps even through a read-only private mapping). */
            if (fflush(out) != 0) st = TMEM_E_IO;
            if (!tool_out_close("gen", of, st == TMEM_OK)) st = TMEM_E_IO; /* fsync + rename */
        }
    }
    free(buf);
    *file_size = need;
    return st;
}

tmem_status demo_model_generate(const char *dir, uint64_t cap_bytes, demo_model_files *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    snprintf(f->text, sizeof f->text, "%s/qwen3.5-0.8b-demo.gguf", dir);
    snprintf(f->mmproj, sizeof f->mmproj, "%s/mmproj-qwen3.5-0.8b-demo.gguf", dir);

    gen g = {0};
    g.cap = cap_bytes;
    if ((g.st = tmem_gguf_writer_create(NULL, 0, &g.w)) != TMEM_OK) return g.st;
    set_str(&g, "general.architecture", "qwen35");
    set_str(&g, "general.name", "Qwen3.5-0.8B (typedmem demo, generated)");
    static const struct { const char *k; uint32_t v; } keys[] = {
        {"qwen35.block_count", 24}, {"qwen35.embedding_length", 1024}, {"qwen35.feed_forward_length", 3584},
        {"qwen35.context_length", 262144}, {"qwen35.attention.head_count", 8},
        {"qwen35.attention.head_count_kv", 2}, {"qwen35.attention.key_length", 256},
        {"qwen35.attention.value_length", 256}, {"qwen35.full_attention_interval", 4},
        {"qwen35.ssm.conv_kernel", 4}, {"qwen35.ssm.state_size", 128}, {"qwen35.ssm.group_count", 16},
        {"qwen35.ssm.time_step_rank", 16}, {"qwen35.ssm.inner_size", 2048}, {"qwen35.vocab_size", 248320}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) set_u32(&g, keys[i].k, keys[i].v);
    static const tensor_spec embd = {"token_embd.weight", TMEM_GGML_Q6_K, 2, 1024, 248320, 1, 1};
    static const tensor_spec onorm = {"output_norm.weight", TMEM_GGML_F32, 1, 1024, 1, 1, 1};
    add(&g, &onorm, 0);
    for (uint32_t l = 0; l < 24; l++) {
        add_all(&g, FFN, sizeof FFN / sizeof FFN[0], l);
        if ((l + 1) % 4 == 0) add_all(&g, ATTN, sizeof ATTN / sizeof ATTN[0], l);
        else add_all(&g, DELTANET, sizeof DELTANET / sizeof DELTANET[0], l);
    }
    add(&g, &embd, 0); /* last: the part a cap drops first */
    if (g.st == TMEM_OK) g.st = write_file(g.w, f->text, f, &f->text_bytes);
    tmem_gguf_writer_destroy(g.w);
    f->ntext = f->ntensors;
    if (g.st != TMEM_OK) {
        demo_model_files_free(f);
        return g.st;
    }

    gen v = {0};
    v.cap = cap_bytes;
    if ((v.st = tmem_gguf_writer_create(NULL, 0, &v.w)) != TMEM_OK) {
        demo_model_files_free(f);
        return v.st;
    }
    static const struct { const char *k; uint32_t v; } vkeys[] = {
        {"clip.vision.block_count", 12}, {"clip.vision.embedding_length", 768},
        {"clip.vision.feed_forward_length", 3072}, {"clip.vision.attention.head_count", 12},
        {"clip.vision.patch_size", 16}, {"clip.vision.spatial_merge_size", 2}, {"clip.vision.projection_dim", 1024}};
    for (size_t i = 0; i < sizeof vkeys / sizeof vkeys[0]; i++) set_u32(&v, vkeys[i].k, vkeys[i].v);
    set_str(&v, "clip.vision.projector_type", "qwen3vl_merger");
    add_all(&v, VGLOBAL, sizeof VGLOBAL / sizeof VGLOBAL[0], 0);
    for (uint32_t l = 0; l < 12; l++) add_all(&v, VBLOCK, sizeof VBLOCK / sizeof VBLOCK[0], l);
    if (v.st == TMEM_OK) v.st = write_file(v.w, f->mmproj, f, &f->mmproj_bytes);
    tmem_gguf_writer_destroy(v.w);
    if (v.st != TMEM_OK) demo_model_files_free(f);
    return v.st;
}

void demo_model_files_free(demo_model_files *f) {
    if (f->text[0]) (void)unlink(f->text);
    if (f->mmproj[0]) (void)unlink(f->mmproj);
    free(f->tensors);
    f->tensors = NULL;
    f->ntensors = f->ntext = 0;
    f->text[0] = f->mmproj[0] = '\0';
}

/* ---- the steps ---- */

/* Map one file into /memory/weights and read every page, as the first
 * forward pass does: the pages become resident, clean and droppable. */
static tmem_status map_and_read(session *s, const char *path, tmem_gguf **out) {
    tmem_gguf_desc gd = {0};
    gd.path = path;
    tmem_gguf_error e;
    tmem_status st = tmem_gguf_open(s->ctx, &gd, out, &e);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem demo: %s: %s at byte %llu\n", path, e.message, (unsigned long long)e.offset);
        return st;
    }
    tmem_gguf_info gi;
    if ((st = tmem_gguf_get_info(*out, &gi)) != TMEM_OK) return st;
    volatile uint64_t sum = 0;
    for (uint64_t i = 0; i < gi.tensor_count; i++) {
        tmem_gguf_tensor t;
        if ((st = tmem_gguf_tensor_at(*out, i, &t)) != TMEM_OK) return st;
        const volatile uint8_t *p = t.data;
        for (uint64_t off = 0; off < t.size; off += 4096) sum += p[off];
    }
    (void)sum;
    return TMEM_OK;
}

tmem_status demo_step_model(session *s) {
    tmem_status st;
    if ((st = map_and_read(s, s->gguf_path, &s->gguf)) != TMEM_OK) return st;
    if ((st = map_and_read(s, s->mmproj_path, &s->mmproj)) != TMEM_OK) return st;
    tmem_gguf_error e;
    if ((st = tmem_model_from_gguf(s->gguf, &s->model, &e)) != TMEM_OK ||
        (st = tmem_model_add_mmproj(s->mmproj, &s->model, &e)) != TMEM_OK) {
        fprintf(stderr, "tmem demo: model metadata: %s\n", e.message);
        return st;
    }
    return tmem_model_validate(&s->model);
}

tmem_status demo_step_predict(session *s) {
    const tmem_demo_options *o = s->opt;
    tmem_status st = tmem_model_vision_tokens(&s->model, s->side, s->side, &s->image_tokens, &s->image_patches);
    if (st != TMEM_OK) return st;
    s->prompt_total = o->prompt_tokens + (uint32_t)s->image_tokens;
    s->chunk = s->prompt_total < 512 ? s->prompt_total : 512;
    tmem_budget_info bi;
    if ((st = tmem_context_budget(s->ctx, &bi)) != TMEM_OK) return st;
    tmem_fit_desc fd = {0};
    fd.model = &s->model;
    fd.ctx = s->ctx;
    fd.ctx_tokens = (uint64_t)s->prompt_total + o->decode_tokens;
    fd.image_width = fd.image_height = s->side;
    /* budget 0: the breakdown alone (a budget would also search the largest
     * context and image that fit: hundreds of plans the session never uses) */
    fd.prefill_chunk = s->chunk;
    fd.state_snapshots = 1; /* the one taken at the end of the prompt */
    if ((st = tmem_fit(&fd, &s->fit)) != TMEM_OK) return st;
    if (s->res) {
        s->res->predicted_total = s->fit.total;
        s->res->predicted_dirty = s->fit.total_dirty;
        s->res->prompt_tokens = s->prompt_total;
        s->res->image_tokens = (uint32_t)s->image_tokens;
    }
    if (s->fit.total > bi.budget) /* said up front, also in --json and quiet runs */
        fprintf(stderr, "tmem demo: warning: the prediction (%.1f MiB) does not fit the budget (%.1f MiB): expect "
                        "reclaim, evictions and a budget failure\n", demo_mib(s->fit.total), demo_mib(bi.budget));
    if (o->quiet) return TMEM_OK;
    printf("\n  prediction (tmem_fit from the GGUF metadata: %s, %u layers, %u image tokens, ctx %llu, chunk %u):\n",
           s->model.name, s->model.n_layers, (unsigned)s->image_tokens, (unsigned long long)fd.ctx_tokens, s->chunk);
    for (uint32_t i = 0; i < s->fit.item_count; i++) {
        const tmem_fit_item *it = &s->fit.items[i];
        printf("    %-20s %-18s %9.1f MiB%s\n", it->what, it->type_name, demo_mib(it->bytes),
               it->clean ? "  clean" : "");
    }
    printf("    %-20s %-18s %9.1f MiB  (%.1f MiB dirty)  budget %.0f MiB: %s\n\n", "total", "", demo_mib(s->fit.total),
           demo_mib(s->fit.total_dirty), demo_mib(bi.budget), s->fit.total <= bi.budget ? "fits" : "DOES NOT FIT");
    return TMEM_OK;
}
