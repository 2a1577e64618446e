/* tmem demo: typed memory for one Qwen3.5-0.8B-shaped VLM session.
 *
 * Without the model math but with every byte real: the weights file is mapped
 * (FILE type, clean pages) and read; a camera frame lands in /memory/images;
 * the vision encoder's intermediates and the text activations live in
 * per-step linear heaps that are reset; the KV cache and the recurrent state
 * grow token by token; generated tokens go to their ring. Everything runs
 * under one budget, and at the end the per-type table is printed next to what
 * the OS measured (mincore per pool, smaps_rollup for the process).
 *
 * The session is a list of steps (see `steps` below); later work inserts
 * steps (planned transient heaps, surfaces, the KV cache API, the GGUF model,
 * tracing) without touching the driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "commands.h"
#include "demo.h"
#include "core/internal.h"
#include "os/os.h"

#define IGNORE_STATUS(expr) do { tmem_status ign_ = (expr); (void)ign_; } while (0)

/* ---- the model's shape (Qwen3.5-0.8B: hybrid Gated DeltaNet + attention) ---- */
enum {
    M_LAYERS = 24,
    M_ATTN_LAYERS = 6,          /* full-attention layers: the only ones with KV */
    M_HIDDEN = 1024,
    M_FFN = 3584,
    M_VOCAB = 248320,
    M_KV_BYTES_PER_TOKEN = 12288, /* 6 layers x (K+V) x 2 kv heads x 256 dims x 2 B */
    M_CONTEXT = 4096,
    M_KV_BLOCK_TOKENS = 256,
    V_LAYERS = 12,              /* vision encoder depth used by the demo */
    V_HIDDEN = 1024,
    V_FFN = 4096,
    V_PATCH = 16,
    V_MERGE = 2,                /* 2x2 patches merge into one image token */
    FRAME_W = 1280,
    FRAME_H = 720,
};
#define M_STATE_BYTES_PER_SEQ 10100736ull /* 18 DeltaNet layers' recurrent state */
#define M_PARAMS 800000000ull
#define M_WEIGHT_BITS 4.5 /* Q4_0-like */

typedef struct session {
    const tmem_demo_options *opt;
    tmem_context *ctx;
    tmem_heap *kv, *state, *tokens, *images, *vision, *act, *scratch;
    uint32_t *token_ring;
    uint32_t ntok;              /* tokens in the KV cache */
    uint32_t nkv_blocks;
    uint32_t image_tokens;
    float *image_embed;         /* output of the vision encoder, consumed by prefill */
    uint8_t *frame;
    uint32_t generated;
} session;

/* The weights mapping is owned by the context: destroyed with it. */
typedef struct weights_map {
    tmem_type *type;
    int fd;
    void *addr;
    uint64_t size;
} weights_map;

static void weights_destroy(void *p) {
    weights_map *w = p;
    tmem__type_uncharge(w->type, w->size, true);
    (void)tmem__os_unmap(w->addr, (size_t)w->size);
    (void)tmem__os_close(w->fd);
    free(w);
}

static void touch(void *p, uint64_t n, uint8_t v) { memset(p, v, (size_t)n); }

static tmem_status heap(session *s, tmem_role role, tmem_heap_kind kind, uint64_t size, const char *name, tmem_heap **out) {
    tmem_type *t;
    tmem_status st = tmem_role_get_type(s->ctx, role, &t);
    if (st != TMEM_OK) return st;
    tmem_heap_desc hd = {0};
    hd.kind = kind;
    hd.type = t;
    hd.role = role;
    hd.size = size;
    hd.name = name;
    return tmem_heap_create(s->ctx, &hd, out);
}

/* ---- steps ---- */

static tmem_status step_heaps(session *s) {
    uint64_t kv = (uint64_t)M_CONTEXT * M_KV_BYTES_PER_TOKEN;
    uint32_t p = s->opt->image_side / V_PATCH;
    uint64_t vis = (uint64_t)p * p * (V_HIDDEN + V_FFN) * 4 + (uint64_t)s->opt->image_side * s->opt->image_side * 3 * 4 + (1 << 20);
    uint64_t toks = (uint64_t)s->opt->prompt_tokens + (uint64_t)(p / V_MERGE) * (p / V_MERGE);
    uint64_t act = toks * (M_HIDDEN * 2 + M_FFN) * 4 + (uint64_t)M_VOCAB * 4 + (1 << 20);
    tmem_status st;
    if ((st = heap(s, TMEM_ROLE_KV_CACHE, TMEM_HEAP_GENERAL, kv, "kv", &s->kv)) != TMEM_OK) return st;
    if ((st = heap(s, TMEM_ROLE_RECURRENT_STATE, TMEM_HEAP_GENERAL, M_STATE_BYTES_PER_SEQ + (1 << 20), "state", &s->state)) != TMEM_OK) return st;
    if ((st = heap(s, TMEM_ROLE_OUTPUT_TOKENS, TMEM_HEAP_GENERAL, 1 << 20, "tokens", &s->tokens)) != TMEM_OK) return st;
    if ((st = heap(s, TMEM_ROLE_IMAGE, TMEM_HEAP_GENERAL, 4 << 20, "frames", &s->images)) != TMEM_OK) return st;
    if ((st = heap(s, TMEM_ROLE_VISION_INTERMEDIATE, TMEM_HEAP_LINEAR, vis, "vision", &s->vision)) != TMEM_OK) return st;
    if ((st = heap(s, TMEM_ROLE_ACTIVATION, TMEM_HEAP_LINEAR, act, "activations", &s->act)) != TMEM_OK) return st;
    return heap(s, TMEM_ROLE_SCRATCH, TMEM_HEAP_LINEAR, 8 << 20, "scratch", &s->scratch);
}

static tmem_status step_weights(session *s) {
    uint64_t size = s->opt->weights_bytes ? s->opt->weights_bytes : (uint64_t)((double)M_PARAMS * M_WEIGHT_BITS / 8.0);
    uint64_t page = tmem__os_page_size();
    size = (size + page - 1) & ~(page - 1);
    /* A sparse file stands in for the GGUF until the model layer lands:
     * reading it faults in real (zeroed) page-cache pages, clean and
     * droppable, exactly like weights. */
    char path[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/tmem-demo-weightsXXXXXX", tmp && *tmp ? tmp : "/tmp");
    int tmpfd = mkstemp(path);
    if (tmpfd < 0) return TMEM_E_IO;
    int rc = ftruncate(tmpfd, (off_t)size);
    close(tmpfd);
    if (rc != 0) {
        unlink(path);
        return TMEM_E_IO;
    }
    weights_map *w = calloc(1, sizeof *w);
    if (!w) {
        unlink(path);
        return TMEM_E_NO_MEMORY;
    }
    uint64_t fsize = 0;
    tmem_status st = tmem__os_file_open(path, &w->fd, &fsize);
    unlink(path); /* the mapping keeps it alive */
    if (st != TMEM_OK) {
        free(w);
        return st;
    }
    st = tmem_role_get_type(s->ctx, TMEM_ROLE_WEIGHTS, &w->type);
    if (st == TMEM_OK) st = tmem__type_charge(w->type, size, true);
    if (st != TMEM_OK) {
        (void)tmem__os_close(w->fd);
        free(w);
        return st;
    }
    st = tmem__os_map_fd(w->fd, 0, (size_t)size, false, false, &w->addr);
    if (st == TMEM_OK) {
        w->size = size;
        st = tmem__context_add_owned(s->ctx, w, weights_destroy);
        if (st != TMEM_OK) weights_destroy(w);
    } else {
        tmem__type_uncharge(w->type, size, true);
        (void)tmem__os_close(w->fd);
        free(w);
    }
    if (st != TMEM_OK) return st;
    /* Read every page, as the first forward pass does. */
    volatile const uint8_t *p = w->addr;
    uint64_t sum = 0;
    for (uint64_t off = 0; off < size; off += page) sum += p[off];
    return sum == 0 ? TMEM_OK : TMEM_E_CORRUPT;
}

static tmem_status step_tokens(session *s) {
    return tmem_heap_alloc(s->tokens, (uint64_t)M_CONTEXT * sizeof(uint32_t), 64, (void **)&s->token_ring);
}

static tmem_status step_image(session *s) {
    uint64_t nv12 = (uint64_t)FRAME_W * FRAME_H * 3 / 2;
    tmem_status st = tmem_heap_alloc(s->images, nv12, 4096, (void **)&s->frame);
    if (st != TMEM_OK) return st;
    for (uint64_t i = 0; i < nv12; i++) s->frame[i] = (uint8_t)(i * 31 + (i >> 11));
    return TMEM_OK;
}

static tmem_status step_vision(session *s) {
    uint32_t side = s->opt->image_side, p = side / V_PATCH, n = p * p;
    /* Resize + normalise the frame's luma into an RGB float tensor. */
    float *rgb;
    tmem_status st = tmem_heap_alloc(s->vision, (uint64_t)side * side * 3 * 4, 64, (void **)&rgb);
    if (st != TMEM_OK) return st;
    for (uint32_t y = 0; y < side; y++)
        for (uint32_t x = 0; x < side; x++) {
            uint8_t l = s->frame[(uint64_t)(y * FRAME_H / side) * FRAME_W + x * FRAME_W / side];
            for (int c = 0; c < 3; c++) rgb[((uint64_t)y * side + x) * 3 + c] = (float)l / 255.0f - 0.5f;
        }
    uint64_t mark_hidden = (uint64_t)n * V_HIDDEN * 4, mark_ffn = (uint64_t)n * V_FFN * 4;
    for (int layer = 0; layer < V_LAYERS; layer++) {
        /* The linear heap rewinds per layer: the bytes are reused, never
         * recommitted. */
        float *h, *f;
        if ((st = tmem_heap_alloc(s->vision, mark_hidden, 64, (void **)&h)) != TMEM_OK) return st;
        if ((st = tmem_heap_alloc(s->vision, mark_ffn, 64, (void **)&f)) != TMEM_OK) return st;
        touch(h, mark_hidden, (uint8_t)layer);
        touch(f, mark_ffn, (uint8_t)layer);
        void *sc;
        if ((st = tmem_heap_alloc(s->scratch, 1 << 20, 64, &sc)) != TMEM_OK) return st;
        touch(sc, 1 << 20, 1);
        if ((st = tmem_heap_reset(s->scratch)) != TMEM_OK) return st;
        if ((st = tmem_heap_reset(s->vision)) != TMEM_OK) return st;
        if ((st = tmem_heap_alloc(s->vision, (uint64_t)side * side * 3 * 4, 64, (void **)&rgb)) != TMEM_OK) return st;
    }
    s->image_tokens = (p / V_MERGE) * (p / V_MERGE);
    st = tmem_heap_alloc(s->act, (uint64_t)s->image_tokens * M_HIDDEN * 4, 64, (void **)&s->image_embed);
    if (st != TMEM_OK) return st;
    touch(s->image_embed, (uint64_t)s->image_tokens * M_HIDDEN * 4, 3);
    return tmem_heap_reset(s->vision);
}

/* Make room for `count` more tokens in the KV cache (blocks of 256 tokens). */
static tmem_status kv_grow(session *s, uint32_t count) {
    while ((uint64_t)s->nkv_blocks * M_KV_BLOCK_TOKENS < (uint64_t)s->ntok + count) {
        void *blk;
        uint64_t bytes = (uint64_t)M_KV_BLOCK_TOKENS * M_KV_BYTES_PER_TOKEN;
        tmem_status st = tmem_heap_alloc(s->kv, bytes, 4096, &blk);
        if (st != TMEM_OK) return st;
        touch(blk, bytes, 0x4b);
        s->nkv_blocks++;
    }
    s->ntok += count;
    return TMEM_OK;
}

/* One forward pass over `t` tokens: per-layer activations in the linear heap. */
static tmem_status forward(session *s, uint32_t t) {
    tmem_status st;
    for (int layer = 0; layer < M_LAYERS; layer++) {
        void *h, *f, *sc;
        if ((st = tmem_heap_alloc(s->act, (uint64_t)t * M_HIDDEN * 4, 64, &h)) != TMEM_OK) return st;
        if ((st = tmem_heap_alloc(s->act, (uint64_t)t * M_FFN * 4, 64, &f)) != TMEM_OK) return st;
        if ((st = tmem_heap_alloc(s->scratch, (uint64_t)t * M_HIDDEN * 2, 64, &sc)) != TMEM_OK) return st;
        touch(h, (uint64_t)t * M_HIDDEN * 4, 1);
        touch(f, (uint64_t)t * M_FFN * 4, 2);
        touch(sc, (uint64_t)t * M_HIDDEN * 2, 3);
        if ((st = tmem_heap_reset(s->scratch)) != TMEM_OK) return st;
        if ((st = tmem_heap_reset(s->act)) != TMEM_OK) return st;
    }
    void *logits;
    if ((st = tmem_heap_alloc(s->act, (uint64_t)M_VOCAB * 4, 64, &logits)) != TMEM_OK) return st;
    touch(logits, (uint64_t)M_VOCAB * 4, 0);
    return tmem_heap_reset(s->act);
}

static tmem_status step_prefill(session *s) {
    void *state;
    tmem_status st = tmem_heap_alloc(s->state, M_STATE_BYTES_PER_SEQ, 4096, &state);
    if (st != TMEM_OK) return st;
    touch(state, M_STATE_BYTES_PER_SEQ, 0);
    uint32_t t = s->opt->prompt_tokens + s->image_tokens;
    if ((st = kv_grow(s, t)) != TMEM_OK) return st;
    s->image_embed = NULL; /* consumed: forward() resets the heap it lived in */
    return forward(s, t);
}

static tmem_status step_decode(session *s) {
    for (uint32_t i = 0; i < s->opt->decode_tokens; i++) {
        tmem_status st = kv_grow(s, 1);
        if (st == TMEM_OK) st = forward(s, 1);
        if (st != TMEM_OK) return st;
        s->token_ring[s->generated++ % M_CONTEXT] = 1000 + i;
    }
    return TMEM_OK;
}

typedef struct demo_step {
    const char *name;
    const char *what;
    tmem_status (*run)(session *s);
} demo_step;

static const demo_step steps[] = {
    {"heaps", "one heap per role over its type's pool", step_heaps},
    {"weights", "map the weights file (FILE type, clean pages) and read it", step_weights},
    {"tokens", "output token ring", step_tokens},
    {"image", "1280x720 NV12 camera frame into /memory/images", step_image},
    {"vision", "vision encoder: transient intermediates, reset per layer", step_vision},
    {"prefill", "recurrent state, KV for prompt + image tokens, activations", step_prefill},
    {"decode", "KV grows token by token, per-step activations", step_decode},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

tmem_status tmem_demo_run(const tmem_demo_options *opt, tmem_context **out_ctx) {
    *out_ctx = NULL;
    session s;
    memset(&s, 0, sizeof s);
    s.opt = opt;
    tmem_context_desc cd = {0};
    cd.budget = opt->budget ? opt->budget : 1ull << 30;
    cd.flags = TMEM_CONTEXT_READ_ENV;
    tmem_status st = tmem_context_create(&cd, &s.ctx);
    if (st != TMEM_OK) return st;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        double t0 = now_s();
        st = steps[i].run(&s);
        if (!opt->quiet) {
            tmem_budget_info bi;
            IGNORE_STATUS(tmem_context_budget(s.ctx, &bi));
            printf("  %-8s %-62s %7.1f MiB committed  %6.0f ms%s%s\n", steps[i].name, steps[i].what, (double)bi.committed / 1048576.0,
                   (now_s() - t0) * 1e3, st == TMEM_OK ? "" : "  FAILED: ", st == TMEM_OK ? "" : tmem_strerror(st));
        }
        if (st != TMEM_OK) {
            tmem_context_destroy(s.ctx);
            return st;
        }
    }
    *out_ctx = s.ctx;
    return TMEM_OK;
}

/* ---- the report: accounted vs measured ---- */

static void print_measured(tmem_context *ctx, const tmem_footprint *before) {
    printf("\n%-22s %12s %12s %12s\n", "type", "accounted", "resident", "difference");
    uint64_t page = tmem__os_page_size();
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_info ti;
        tmem_type_stats ts;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK || tmem_type_get_info(t, &ti) != TMEM_OK || tmem_type_get_stats(t, &ts) != TMEM_OK) break;
        uint64_t res = 0;
        if (tmem__pool_residency(t, 0, ti.reserve, &res) != TMEM_OK) res = 0;
        /* Charged bytes outside the pool (the mapped weights) are measured by
         * the process footprint below, not per pool. */
        uint64_t pool_acc = ts.committed.current - ts.clean;
        printf("%-22s %9.1f MiB %9.1f MiB %+9.1f KiB%s\n", ti.name, (double)pool_acc / 1048576.0, (double)res / 1048576.0,
               ((double)res - (double)pool_acc) / 1024.0, ts.clean ? "  (+ clean file pages)" : "");
    }
    tmem_footprint after;
    uint64_t dirty = 0, clean = 0;
    if (tmem_footprint_read(&after) != TMEM_OK || tmem_context_accounted(ctx, &dirty, &clean) != TMEM_OK) {
        printf("\n(process footprint not available here)\n");
        return;
    }
    double d_os = (double)after.private_dirty - (double)before->private_dirty;
    double c_os = (double)(after.private_clean + after.shared_clean) - (double)(before->private_clean + before->shared_clean);
    printf("\nprocess (smaps_rollup, change over the session)\n");
    printf("  private dirty   accounted %9.1f MiB   OS %9.1f MiB   (%+.2f%%)\n", (double)dirty / 1048576.0, d_os / 1048576.0,
           dirty ? 100.0 * (d_os - (double)dirty) / (double)dirty : 0.0);
    printf("  clean (file)    accounted %9.1f MiB   OS %9.1f MiB   (%+.2f%%)\n", (double)clean / 1048576.0, c_os / 1048576.0,
           clean ? 100.0 * (c_os - (double)clean) / (double)clean : 0.0);
    (void)page;
}

int tmem_cmd_demo(int argc, char **argv) {
    tmem_demo_options o = {0};
    o.prompt_tokens = 512;
    o.decode_tokens = 64;
    o.image_side = 448;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--budget-mib") && i + 1 < argc) o.budget = strtoull(argv[++i], NULL, 10) << 20;
        else if (!strcmp(argv[i], "--weights-mib") && i + 1 < argc) o.weights_bytes = strtoull(argv[++i], NULL, 10) << 20;
        else if (!strcmp(argv[i], "--decode") && i + 1 < argc) o.decode_tokens = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) o.prompt_tokens = (uint32_t)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: tmem demo [--budget-mib N] [--weights-mib N] [--prompt N] [--decode N]\n");
            return 2;
        }
    }
    printf("typedmem demo: a Qwen3.5-0.8B-shaped VLM session (%u prompt + image tokens, %u generated), budget %llu MiB\n\n",
           o.prompt_tokens, o.decode_tokens, (unsigned long long)((o.budget ? o.budget : 1ull << 30) >> 20));
    tmem_footprint before;
    bool have_fp = tmem_footprint_read(&before) == TMEM_OK;
    tmem_context *ctx;
    double t0 = now_s();
    tmem_status st = tmem_demo_run(&o, &ctx);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem demo: session failed: %s (%s)\n", tmem_strerror(st), tmem_status_name(st));
        return 1;
    }
    printf("\nsession done in %.2f s\n\n", now_s() - t0);
    size_t need = 0;
    IGNORE_STATUS(tmem_stats_table(ctx, NULL, 0, &need));
    char *table = malloc(need);
    if (table && tmem_stats_table(ctx, table, need, NULL) == TMEM_OK) fputs(table, stdout);
    free(table);
    if (have_fp) print_measured(ctx, &before);
    st = tmem_context_check(ctx);
    printf("\nconsistency check: %s\n", st == TMEM_OK ? "ok" : tmem_strerror(st));
    tmem_context_destroy(ctx);
    return st == TMEM_OK ? 0 : 1;
}
