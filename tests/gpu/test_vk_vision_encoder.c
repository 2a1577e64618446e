/* The vision encoder on Vulkan (tmrt_vision_desc::gpu) against the CPU
 * runtime on the committed tiny VLM checkpoint
 * (tests/data/llamacpp/mmproj-qwen35-tiny-vlm-f32.gguf):
 *  - the committed PNG (decoded into an RGB surface: the CPU conversion into
 *    a host-visible staging image, 2 copies) and NV12 camera frames
 *    (imported, converted by the shader straight into the arena: 1 copy),
 *    identity and non-identity resizes: embeddings within 1e-4 of max |CPU|,
 *    and the PNG's within 1e-3 of Hugging Face's (ref_image_embeds.f32);
 *  - a second encode of the same grid re-submits the recording: the same
 *    bits, and no heap of the context changes (allocations and commits flat);
 *  - a frame being rewritten by a writer thread while the shader reads it is
 *    never accepted half-written: the writer fills whole frames with one of
 *    four levels; every embedding the encoder returns is one of the four
 *    uniform frames' embeddings bit for bit.
 * Skips (77) without a Vulkan device or the reference data. */
#include "harness.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tmemrt/image.h"
#include "tmemrt/vision.h"
#include "typedmem/vulkan.h"
#include "gpu_test_util.h"

static tmem_context *g_ctx;
static tmem_gpu *g_gpu;
static tmrt_vision *g_cpu, *g_dev;
static char g_src[512];

#ifdef TMRT_HAVE_PNG
static float *read_f32(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *p = malloc(n * sizeof(float));
    size_t got = p ? fread(p, sizeof(float), n, f) : 0;
    fclose(f);
    if (got != n) free(p), p = NULL;
    return p;
}
#endif

static double rel_err(const float *got, const float *ref, size_t n) {
    double mx = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i])) return INFINITY;
        if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
        if (fabs((double)got[i] - ref[i]) > e) e = fabs((double)got[i] - ref[i]);
    }
    return mx > 0 ? e / mx : e;
}

/* Encode a surface (kept) with model v; NULL on failure. */
static float *encode(tmrt_vision *v, tmem_surface *s, tmrt_vision_stats *st, size_t *n) {
    tmrt_vision_grid g;
    tmrt_error err = {""};
    if (tmrt_vision_image_grid(v, s, &g, &err) != TMEM_OK) return NULL;
    size_t oh = tmrt_vision_get_config(v)->out_hidden;
    *n = (size_t)g.n_tokens * oh;
    float *e = calloc(*n, sizeof(float));
    tmrt_vision_encode_desc d = {1, true};
    tmem_surface *ref = s;
    if (!e || tmrt_vision_encode(v, &ref, &d, e, oh, st, &err) != TMEM_OK) {
        printf("   encode: %s\n", err.message);
        free(e);
        return NULL;
    }
    return e;
}

/* An NV12 frame: random Y and UV (seeded), or every byte `level` (Y) and 128
 * (UV); `slow`: a 0.3 ms pause after each plane's top half (a writer the
 * shader can overtake). */
static void fill_nv12(tmem_surface *s, uint64_t seed, int level, bool slow) {
    tmem_rng r;
    tmem_rng_init(&r, seed);
    for (uint32_t k = 0; k < 2; k++) {
        tmem_tensor_view v;
        if (tmem_surface_plane_view(s, k, NULL, &v) != TMEM_OK) return;
        uint64_t row = (uint64_t)v.shape[1] * (v.rank > 2 ? (uint64_t)v.shape[2] : 1);
        for (uint64_t y = 0; y < (uint64_t)v.shape[0]; y++) {
            uint8_t *p = (uint8_t *)v.data + y * (uint64_t)v.strides[0];
            if (slow && y == (uint64_t)v.shape[0] / 2) {
                struct timespec ts = {0, 300000};
                nanosleep(&ts, NULL);
            }
            if (level >= 0) memset(p, k ? 128 : level, row);
            else
                for (uint64_t x = 0; x < row; x++) p[x] = (uint8_t)(tmem_rng_next(&r) >> 56);
        }
    }
}

static tmem_surface *nv12(uint32_t w, uint32_t h, uint64_t seed) {
    tmem_surface_desc d = {0};
    d.width = w, d.height = h, d.format = TMEM_FORMAT_NV12;
    tmem_surface *s;
    if (tmem_surface_create(g_ctx, &d, &s) != TMEM_OK) return NULL;
    if (tmem_surface_lock(s, 0, NULL) != TMEM_OK) return NULL;
    fill_nv12(s, seed, -1, false);
    if (tmem_surface_unlock(s, 0, NULL) != TMEM_OK) return NULL;
    return s;
}

static void compare(const char *what, tmem_surface *s, uint32_t want_copies) {
    tmrt_vision_stats sc, sg;
    size_t n, n2;
    float *cpu = encode(g_cpu, s, &sc, &n), *gpu = encode(g_dev, s, &sg, &n2);
    REQUIRE(cpu && gpu && n == n2);
    double e = rel_err(gpu, cpu, n);
    printf("%s: grid %ux%u, %u tokens: GPU vs CPU err %.2e; copies %u (CPU %u), arena %llu bytes on the device "
           "(CPU %llu), %u conversion(s)\n",
           what, sg.grid.grid_w, sg.grid.grid_h, sg.grid.n_tokens, e, sg.image_copies, sc.image_copies,
           (unsigned long long)sg.arena_bytes, (unsigned long long)sc.arena_bytes, sg.frame_tries);
    CHECK_MSG(e <= 1e-4, "%s: GPU vs CPU %.2e", what, e);
    CHECK_MSG(sg.image_copies == want_copies, "%s: %u image copies, want %u", what, sg.image_copies, want_copies);
    /* again: the cached recording, the same bits, no heap activity */
    gpu_counters c0 = gpu_heap_counters(g_ctx);
    float *again = encode(g_dev, s, &sg, &n2);
    gpu_counters c1 = gpu_heap_counters(g_ctx);
    REQUIRE(again);
    CHECK_MSG(memcmp(again, gpu, n * 4) == 0, "%s: a second encode differs", what);
    CHECK_MSG(c0.committed == c1.committed && c0.allocs == c1.allocs,
              "%s: the second encode moved the heaps (committed %llu -> %llu, allocations %llu -> %llu)", what,
              (unsigned long long)c0.committed, (unsigned long long)c1.committed,
              (unsigned long long)c0.allocs, (unsigned long long)c1.allocs);
    free(cpu), free(gpu), free(again);
}

static void test_png(void) {
#ifndef TMRT_HAVE_PNG
    printf("SKIP part: no PNG decoder\n");
#else
    char png[700], emb[700];
    snprintf(png, sizeof png, "%s/tests/data/images/rgb_128x96.png", g_src);
    snprintf(emb, sizeof emb, "%s/tests/data/qwen35-tiny-vlm/ref_image_embeds.f32", g_src);
    size_t nc;
    const tmrt_image_codec *codecs = tmrt_image_codecs(&nc);
    tmem_surface *img;
    tmrt_error err = {""};
    REQUIRE_OK(tmrt_image_load(g_ctx, png, codecs, nc, &img, &err));
    compare("png 128x96", img, 2);
    float *ref = read_f32(emb, 12 * 64);
    tmrt_vision_stats st;
    size_t n;
    float *gpu = encode(g_dev, img, &st, &n);
    REQUIRE(ref && gpu && n == 12 * 64);
    double e = rel_err(gpu, ref, n);
    printf("png 128x96: GPU vs Hugging Face err %.2e\n", e);
    CHECK_MSG(e <= 1e-3, "GPU vs HF %.2e", e);
    free(ref), free(gpu);
    tmem_surface_release(img);
#endif
}

static void test_nv12(void) {
    uint32_t sizes[][2] = {{128, 96}, {200, 150}, {64, 320}};
    for (int i = 0; i < 3; i++) {
        tmem_surface *s = nv12(sizes[i][0], sizes[i][1], 7 + (uint64_t)i);
        REQUIRE(s);
        char what[64];
        snprintf(what, sizeof what, "nv12 %ux%u", sizes[i][0], sizes[i][1]);
        compare(what, s, 1);
        tmem_surface_release(s);
    }
}

/* ---- a frame rewritten while the shader reads it ---------------------------- */

static const int k_levels[4] = {16, 90, 170, 235};

typedef struct writer {
    tmem_surface *s;
    atomic_bool stop;
    unsigned frames;
} writer;

/* The writer's protocol (docs/vision.md): a write is a use of the surface
 * (use_begin, lock, write, unlock, use_end). Frames row by row, a pause
 * between frames so that quiet windows exist. */
static void *write_frames(void *arg) {
    writer *w = arg;
    for (unsigned f = 0; !atomic_load(&w->stop); f++) {
        tmem_status a = tmem_surface_use_begin(w->s), b = tmem_surface_lock(w->s, 0, NULL);
        if (a || b) {
            printf("writer: use_begin %s, lock %s\n", tmem_status_name(a), tmem_status_name(b));
            break;
        }
        fill_nv12(w->s, 0, k_levels[f % 4], true);
        a = tmem_surface_unlock(w->s, 0, NULL), b = tmem_surface_use_end(w->s);
        if (a || b) {
            printf("writer: unlock %s, use_end %s\n", tmem_status_name(a), tmem_status_name(b));
            break;
        }
        w->frames = f + 1;
        struct timespec ts = {0, 20000000}; /* 20 ms */
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void test_rewritten_frame(void) {
    uint32_t W = 160, Hh = 120;
    tmem_surface *s = nv12(W, Hh, 1);
    REQUIRE(s);
    float *refs[4];
    size_t n = 0;
    for (int k = 0; k < 4; k++) { /* each level's embeddings, no writer running */
        tmrt_vision_stats st;
        REQUIRE_OK(tmem_surface_lock(s, 0, NULL));
        fill_nv12(s, 0, k_levels[k], false);
        REQUIRE_OK(tmem_surface_unlock(s, 0, NULL));
        refs[k] = encode(g_dev, s, &st, &n);
        REQUIRE(refs[k]);
    }
    CHECK(memcmp(refs[0], refs[1], n * 4) != 0); /* the levels are told apart */
    writer w = {s, false, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, write_frames, &w) == 0);
    unsigned ok = 0, busy = 0, retried = 0, bad = 0, seen[4] = {0};
    for (int i = 0; i < 30; i++) {
        tmrt_vision_stats st;
        size_t m;
        tmrt_error err = {""};
        float *e = calloc(n, sizeof(float));
        tmrt_vision_encode_desc d = {1, true};
        tmem_surface *ref = s;
        tmem_status r = tmrt_vision_encode(g_dev, &ref, &d, e, tmrt_vision_get_config(g_dev)->out_hidden, &st, &err);
        m = n;
        if (r == TMEM_E_BUSY) {
            busy++;
        } else if (r == TMEM_OK) {
            ok++;
            retried += st.frame_tries > 1;
            int match = -1;
            for (int k = 0; k < 4; k++)
                if (!memcmp(e, refs[k], m * 4)) match = k;
            if (match < 0) bad++;
            else seen[match]++;
        } else {
            printf("encode: %s\n", err.message);
            bad++;
        }
        free(e);
    }
    atomic_store(&w.stop, true);
    pthread_join(th, NULL);
    printf("rewritten frame: %u frames written, %u encodes accepted (%u after a retry), %u refused (busy), "
           "%u half-written; levels seen %u/%u/%u/%u\n",
           w.frames, ok, retried, busy, bad, seen[0], seen[1], seen[2], seen[3]);
    CHECK_MSG(bad == 0, "%u encodes returned a frame that is none of the written ones", bad);
    CHECK(ok > 0);
    for (int k = 0; k < 4; k++) free(refs[k]);
    tmem_surface_release(s);
}

int main(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    if (!src) tmem_test_skip("TMEM_SOURCE_DIR is not set (run through ctest)");
    snprintf(g_src, sizeof g_src, "%s", src);
    char mmproj[700];
    snprintf(mmproj, sizeof mmproj, "%s/tests/data/llamacpp/mmproj-qwen35-tiny-vlm-f32.gguf", src);
    tmem_context_desc cd = {0};
    cd.budget = 2ull << 30;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return 1;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = 64ull << 20;
    tmem_status st = tmem_gpu_attach(g_ctx, &gd, &g_gpu);
    if (st != TMEM_OK) {
        tmem_context_destroy(g_ctx);
        tmem_test_skip("no Vulkan device");
    }
    tmrt_error err = {""};
    tmrt_vision_desc vc = {mmproj, TMRT_MEMORY_TYPED, NULL}, vg = {mmproj, TMRT_MEMORY_TYPED, g_gpu};
    if (tmrt_vision_open(g_ctx, &vc, &g_cpu, &err) != TMEM_OK) {
        printf("SKIP: %s\n", err.message);
        return 77;
    }
    if (tmrt_vision_open(g_ctx, &vg, &g_dev, &err) != TMEM_OK) {
        printf("FAIL: GPU open: %s\n", err.message);
        return 1;
    }
    /* misuse: a gpu with naive memory */
    tmrt_vision *bad;
    tmrt_vision_desc vn = {mmproj, TMRT_MEMORY_NAIVE, g_gpu};
    CHECK(tmrt_vision_open(g_ctx, &vn, &bad, &err) == TMEM_E_INVALID_ARG && bad == NULL);
    RUN(test_png);
    RUN(test_nv12);
    RUN(test_rewritten_frame);
    tmrt_vision_close(g_dev);
    tmrt_vision_close(g_cpu);
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    return tmem_test_finish();
}
