/*
 * tmem bench vision [--json] [--image WxH] [--preset P] [--depth N] [--threads T] [--dtype f16|f32|q8_0]
 *
 * The vision encoder on one image, typed vs naive in the same run, each in a
 * fresh child process (exec of this binary) so peaks do not mix: a random
 * mmproj of the preset's shape (F16 matrices; --depth N keeps N blocks to
 * bound the time: per-block memory does not depend on the depth), a decoded
 * RGB8 image of WxH in a surface, then tmrt_vision_encode.
 *   typed  one fused conversion into patches (IMAGE heap), the activations of
 *          a placement heap planned for this grid, weights mapped (FILE, clean)
 *   naive  RGB -> RGBA -> f32 HWC -> CHW -> patches, a malloc per tensor,
 *          weights read into malloc'ed memory
 * Peak = the largest Private_Dirty growth over the child's baseline (before
 * the model is opened), sampled every millisecond by a thread. Also printed:
 * what the library's fit predicts for the encoder (vision activations +
 * image + embeddings) and the ratio to the typed peak.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include "bench/bench.h"
#include "typedmem/typedmem.h"
#include "tmemrt/vision.h"

typedef struct sampler {
    pthread_t th;
    atomic_bool stop;
    uint64_t base, peak;
} sampler;

static void *sample_loop(void *arg) {
    sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        tmem_footprint f;
        if (tmem_footprint_read(&f) == TMEM_OK && f.private_dirty > s->base && f.private_dirty - s->base > s->peak)
            s->peak = f.private_dirty - s->base;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

typedef struct vres {
    int ok;
    uint64_t peak, patch, arena, weights, copies;
    double pre_ms, enc_ms;
} vres;

static int child(int argc, char **argv) {
    if (argc < 7) return 2;
    bool naive = !strcmp(argv[2], "naive");
    const char *path = argv[3];
    uint32_t w = (uint32_t)atoi(argv[4]), h = (uint32_t)atoi(argv[5]);
    int threads = atoi(argv[6]);
    vres r = {0};
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_footprint f0;
    if (tmem_footprint_read(&f0) != TMEM_OK) return 1;
    sampler s = {0};
    s.base = f0.private_dirty;
    atomic_init(&s.stop, false);
    if (pthread_create(&s.th, NULL, sample_loop, &s) != 0) return 1;
    tmrt_error err = {{0}};
    tmrt_vision *v = NULL;
    tmrt_vision_desc vd = {path, naive ? TMRT_MEMORY_NAIVE : TMRT_MEMORY_TYPED, NULL};
    int rc = tmrt_vision_open(ctx, &vd, &v, &err);
    tmem_surface *img = NULL;
    float *emb = NULL;
    if (rc == 0) {
        tmem_surface_desc d = {0};
        d.width = w, d.height = h, d.format = TMEM_FORMAT_RGB8, d.name = "bench-image";
        tmem_tensor_view pv;
        if (tmem_surface_create(ctx, &d, &img) == TMEM_OK && tmem_surface_plane_view(img, 0, NULL, &pv) == TMEM_OK &&
            tmem_surface_lock(img, 0, NULL) == TMEM_OK) {
            for (uint32_t y = 0; y < h; y++) /* a smooth image, what a decoder would write */
                for (uint32_t x = 0; x < 3 * w; x++)
                    ((uint8_t *)pv.data)[(size_t)y * (size_t)pv.strides[0] + x] =
                        (uint8_t)((x / 3 + y * 2 + x % 3 * 60) & 0xFF);
            rc = tmem_surface_unlock(img, 0, NULL) == TMEM_OK ? 0 : -1;
        } else
            rc = -1;
    }
    tmrt_vision_grid g;
    if (rc == 0) rc = tmrt_vision_image_grid(v, img, &g, &err);
    if (rc == 0) {
        size_t out_h = tmrt_vision_get_config(v)->out_hidden;
        emb = malloc((size_t)g.n_tokens * out_h * sizeof(float));
        tmrt_vision_encode_desc ed = {threads, false};
        tmrt_vision_stats st;
        rc = emb ? tmrt_vision_encode(v, &img, &ed, emb, out_h, &st, &err) : -1;
        if (rc == 0) {
            r.patch = st.patch_bytes, r.arena = st.arena_bytes, r.copies = st.image_copies;
            r.pre_ms = st.preprocess_ms, r.enc_ms = st.encode_ms;
            r.weights = tmrt_vision_weight_bytes(v);
            r.ok = 1;
        }
    }
    atomic_store(&s.stop, true);
    pthread_join(s.th, NULL);
    r.peak = s.peak;
    if (rc != 0) fprintf(stderr, "bench vision (%s): %s\n", argv[2], err.message);
    printf("%d %llu %llu %llu %llu %llu %.3f %.3f\n", r.ok, (unsigned long long)r.peak,
           (unsigned long long)r.patch, (unsigned long long)r.arena, (unsigned long long)r.weights,
           (unsigned long long)r.copies, r.pre_ms, r.enc_ms);
    free(emb);
    tmem_surface_release(img);
    tmrt_vision_close(v);
    tmem_context_destroy(ctx);
    return r.ok ? 0 : 1;
}

static vres run_child(const char *mode, const char *path, uint32_t w, uint32_t h, int threads) {
    vres r = {0};
    char a[4][32], buf[512];
    snprintf(a[0], 32, "%u", w), snprintf(a[1], 32, "%u", h), snprintf(a[2], 32, "%d", threads);
    char *const argv[] = {"tmem", "bench", "vision", "--child", (char *)mode, (char *)path, a[0], a[1], a[2], NULL};
    if (!tmem_bench_child(argv, buf, sizeof buf)) return r;
    unsigned long long p, pa, ar, we, co;
    if (sscanf(buf, "%d %llu %llu %llu %llu %llu %lf %lf", &r.ok, &p, &pa, &ar, &we, &co, &r.pre_ms, &r.enc_ms) == 8)
        r.peak = p, r.patch = pa, r.arena = ar, r.weights = we, r.copies = co;
    return r;
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

int tmem_bench_vision(int argc, char **argv, bool json) {
    if (argc >= 2 && !strcmp(argv[1], "--child")) return child(argc, argv);
    uint32_t w = 1024, h = 1024, depth = 0;
    int threads = 2;
    uint32_t wtype = 1; /* ggml F16 */
    const char *preset = "qwen3.5-0.8b";
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--image") && sscanf(argv[i + 1], "%ux%u", &w, &h) != 2) w = 0;
        if (!strcmp(argv[i], "--preset")) preset = argv[i + 1];
        if (!strcmp(argv[i], "--depth")) depth = (uint32_t)atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--dtype")) wtype = !strcmp(argv[i + 1], "f32") ? 0 : !strcmp(argv[i + 1], "q8_0") ? 8 : 1;
    }
    tmrt_vision_config c;
    if (!w || !h || threads < 1 || threads > 64 || tmrt_vision_preset(preset, &c) != 0) {
        fprintf(stderr, "tmem bench vision: --image WxH, --preset qwen3.5-0.8b|qwen3.5-2b|tiny, --threads 1..64\n");
        return 2;
    }
    uint32_t full_depth = c.depth;
    if (depth && depth < c.depth) c.depth = depth;
    char dir[] = "/tmp/tmem-bench-vision-XXXXXX", path[128];
    tmrt_error err;
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (tmrt_vision_write_random(&c, wtype, 1, path, &err) != TMEM_OK) {
        fprintf(stderr, "tmem bench vision: %s\n", err.message);
        return 1;
    }
    /* A freshly written file's page-cache pages are dirty until written back,
     * and a private mapping of them counts as Private_Dirty: flush first, as
     * a model file on a device would be. */
    int flush_fd = open(path, O_RDONLY);
    if (flush_fd < 0 || fsync(flush_fd) != 0) {
        fprintf(stderr, "tmem bench vision: cannot flush %s\n", path);
        return 1;
    }
    close(flush_fd);
    vres r[2] = {run_child("typed", path, w, h, threads), run_child("naive", path, w, h, threads)};
    unlink(path);
    rmdir(dir);
    /* the library's fit for the encoder's lines */
    tmem_model_desc m;
    tmem_fit_desc fd = {0};
    tmem_fit_result fr;
    uint64_t fit_vision = 0;
    if (tmem_model_preset("qwen3.5-0.8b", &m) == TMEM_OK) {
        m.vis_depth = c.depth, m.vis_hidden = c.hidden, m.vis_ff = c.ff, m.vis_heads = c.heads;
        m.vis_out_hidden = c.out_hidden, m.n_embd = c.out_hidden;
        fd.model = &m;
        fd.ctx_tokens = 8192;
        /* the fit sizes the grid by rounding; the encoder smart-resizes
         * into [min_pixels, max_pixels] first: give the fit that size */
        tmrt_vision_grid rg;
        fd.image_width = tmrt_vision_smart_resize(&c, w, h, &rg) == 0 ? rg.width : w;
        fd.image_height = rg.height ? rg.height : h;
        if (tmem_fit(&fd, &fr) == TMEM_OK) {
            /* the encoder phase of fit's encode-first peak (no text here) */
            uint64_t img = tmem_fit_bytes(&fr, TMEM_FIT_ITEM_IMAGE);
            uint64_t emb = tmem_fit_bytes(&fr, TMEM_FIT_ITEM_VISION_EMBEDDINGS);
            uint64_t pv = img - (uint64_t)fd.image_width * fd.image_height * 3,
                     rows = fr.image_patches * 2ull * c.hidden * 4;
            uint64_t vis = fr.vision_arena > img ? fr.vision_arena : img;
            if (pv + rows > vis) vis = pv + rows;
            fit_vision = vis + emb;
        }
    }
    int failed = !r[0].ok || !r[1].ok;
    if (json) {
        printf("{\"bench\":\"vision\",\"preset\":\"%s\",\"depth\":%u,\"image\":[%u,%u],"
               "\"threads\":%d,\"variants\":[",
               preset, c.depth, w, h, threads);
        for (int k = 0; k < 2; k++)
            printf("%s{\"variant\":\"%s\",\"ok\":%s,\"peak_private_dirty_bytes\":%llu,\"patch_bytes\":%llu,"
                   "\"arena_bytes\":%llu,\"weight_bytes\":%llu,\"image_copies\":%llu,\"preprocess_ms\":%.3f,"
                   "\"encode_ms\":%.3f}",
                   k ? "," : "", k ? "naive" : "typed", r[k].ok ? "true" : "false", (unsigned long long)r[k].peak,
                   (unsigned long long)r[k].patch, (unsigned long long)r[k].arena, (unsigned long long)r[k].weights,
                   (unsigned long long)r[k].copies, r[k].pre_ms, r[k].enc_ms);
        printf("],\"fit_vision_bytes\":%llu}\n", (unsigned long long)fit_vision);
        return failed;
    }
    printf("vision bench: %s tower (%u of %u blocks, hidden %u), one %ux%u RGB image, %d threads, each variant in a "
           "fresh process\n\n", preset, c.depth, full_depth, c.hidden, w, h, threads);
    printf("%-6s %7s %18s %12s %12s %14s %14s\n", "mode", "copies", "peak dirty MiB", "patches MiB", "arena MiB",
           "preprocess ms", "encode ms");
    for (int k = 0; k < 2; k++)
        printf("%-6s %7llu %18.1f %12.1f %12.1f %14.1f %14.1f%s\n", k ? "naive" : "typed",
               (unsigned long long)r[k].copies, mib(r[k].peak), mib(r[k].patch), mib(r[k].arena), r[k].pre_ms,
               r[k].enc_ms, r[k].ok ? "" : "  (FAILED)");
    if (r[1].peak)
        printf("ratio typed/naive: peak %.3f, encode time %.2f\n", (double)r[0].peak / (double)r[1].peak,
               r[1].enc_ms > 0 ? r[0].enc_ms / r[1].enc_ms : 0.0);
    printf("weights %.1f MiB: mapped clean in typed mode, private dirty in naive mode\n", mib(r[0].weights));
    if (fit_vision)
        printf("library fit, encoder phase (max(arena, image + pixel_values, ...) + embeddings): %.1f MiB; "
               "typed peak / fit = %.3f\n",
               mib(fit_vision), (double)r[0].peak / (double)fit_vision);
    printf("reproduce: tmem bench vision --image %ux%u --preset %s --depth %u --threads %d --dtype %s\n", w, h, preset,
           c.depth, threads, wtype == 0 ? "f32" : wtype == 8 ? "q8_0" : "f16");
    return failed;
}
