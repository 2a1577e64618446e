/* bench_vk_vision: the vision encoder on Vulkan through the public API
 * (tmrt_vision_desc::gpu), two parts:
 *
 *  encode   an image of --image WxH (default 1024x1024) as an NV12 camera
 *           frame (imported, the shader's conversion into the arena: one
 *           copy) and as RGB (CPU conversion + staging: two), R timed
 *           encodes after a warm-up: median and min ms, the device arena,
 *           weights on the device, image copies; --cpu N also times the CPU
 *           encoder with N threads on the same frame and compares the
 *           embeddings (max |d| / max |CPU|).
 *  frames   --frames N camera frames of --frame WxH (default 1920x1080) NV12
 *           written by the CPU into one surface (the writer's protocol:
 *           use_begin, lock, write, unlock, use_end), each encoded with the
 *           pixel bounds set to --pixels P (default 448 x 448): paced at
 *           --fps F (default 30; 0 = as fast as it goes), the sustained rate,
 *           the p50/p99/max latency from the CPU's last write to the end of
 *           the conversion (an upper bound of "to the shader's start": the
 *           library's conversion submits and waits, no device timestamp is
 *           read), the p50/p99 encode, and the heap counters of every type
 *           before and after the loop (committed bytes, allocations: flat).
 *
 * The mmproj: --mmproj PATH, else the qwen3.5-0.8b preset's encoder with
 * random F16 weights written to $TMPDIR (tmrt_vision_write_random). Reports,
 * asserts nothing but success; --quick: the tiny preset, small sizes (the
 * CI smoke run on lavapipe). Skips (77) without a Vulkan device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tmemrt/vision.h"
#include "typedmem/model.h"
#include "typedmem/vulkan.h"
#include "gpu_test_util.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double pct(double *v, int n, double p) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)ceil(p / 100.0 * n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static tmem_context *g_ctx;


/* Fill a surface's planes: a gradient moving with `frame`. */
static int fill(tmem_surface *s, uint32_t planes, uint32_t frame) {
    for (uint32_t k = 0; k < planes; k++) {
        tmem_tensor_view v;
        if (tmem_surface_plane_view(s, k, NULL, &v) != TMEM_OK) return -1;
        uint64_t row = (uint64_t)v.shape[1] * (v.rank > 2 ? (uint64_t)v.shape[2] : 1);
        for (uint64_t y = 0; y < (uint64_t)v.shape[0]; y++) {
            uint8_t *p = (uint8_t *)v.data + y * (uint64_t)v.strides[0];
            for (uint64_t x = 0; x < row; x++) p[x] = (uint8_t)(x * 3 + y * 5 + frame * 7 + k * 50);
        }
    }
    return 0;
}

static tmem_surface *surface(tmem_pixel_format f, uint32_t w, uint32_t h) {
    tmem_surface_desc d = {0};
    d.width = w, d.height = h, d.format = f;
    tmem_surface *s;
    if (tmem_surface_create(g_ctx, &d, &s) != TMEM_OK) return NULL;
    if (tmem_surface_lock(s, 0, NULL) != TMEM_OK || fill(s, f == TMEM_FORMAT_NV12 ? 2 : 1, 0) ||
        tmem_surface_unlock(s, 0, NULL) != TMEM_OK)
        return NULL;
    return s;
}

static int encode(tmrt_vision *v, tmem_surface *s, float **emb, size_t *n, tmrt_vision_stats *st, int threads) {
    tmrt_vision_grid g;
    tmrt_error err = {""};
    if (tmrt_vision_image_grid(v, s, &g, &err) != TMEM_OK) return fprintf(stderr, "grid: %s\n", err.message), -1;
    size_t oh = tmrt_vision_get_config(v)->out_hidden;
    if (!*emb) {
        *n = (size_t)g.n_tokens * oh;
        *emb = calloc(*n, sizeof(float));
    }
    tmrt_vision_encode_desc d = {threads, true};
    tmem_surface *ref = s;
    if (!*emb || tmrt_vision_encode(v, &ref, &d, *emb, oh, st, &err) != TMEM_OK)
        return fprintf(stderr, "encode: %s\n", err.message), -1;
    return 0;
}

static int bench_encode(tmrt_vision *gv, tmrt_vision *cv, uint32_t w, uint32_t h, int reps, int cpu_threads) {
    const tmem_pixel_format fmts[2] = {TMEM_FORMAT_NV12, TMEM_FORMAT_RGB8};
    for (int f = 0; f < 2; f++) {
        tmem_surface *s = surface(fmts[f], w, h);
        if (!s) return fprintf(stderr, "surface %ux%u\n", w, h), -1;
        float *emb = NULL;
        size_t n = 0;
        tmrt_vision_stats st;
        if (encode(gv, s, &emb, &n, &st, 1)) return -1; /* warm-up: the arena, pipelines, the recording */
        double *ms = calloc((size_t)reps, sizeof(double)), *pre = calloc((size_t)reps, sizeof(double));
        for (int r = 0; r < reps; r++) {
            double t0 = now_ms();
            if (encode(gv, s, &emb, &n, &st, 1)) return -1;
            ms[r] = now_ms() - t0, pre[r] = st.preprocess_ms;
        }
        double med = pct(ms, reps, 50), mn = pct(ms, reps, 0), pmed = pct(pre, reps, 50);
        printf("encode %s %ux%u -> grid %ux%u (%u patches, %u tokens): median %.2f ms (min %.2f; conversion %.2f), "
               "device arena %.1f MiB, device buffers %.1f MiB, image copies %u\n",
               tmem_pixel_format_name(fmts[f]), w, h, st.grid.grid_w, st.grid.grid_h, st.grid.n_patches,
               st.grid.n_tokens, med, mn, pmed, st.arena_bytes / 1048576.0, st.device_bytes / 1048576.0,
               st.image_copies);
        if (cv && f == 0) {
            float *ref = NULL;
            size_t m = 0;
            tmrt_vision_stats cs;
            double t0 = now_ms();
            if (encode(cv, s, &ref, &m, &cs, cpu_threads)) return -1;
            double cms = now_ms() - t0, mx = 0, e = 0;
            for (size_t i = 0; i < m; i++) {
                if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
                if (fabs((double)emb[i] - ref[i]) > e) e = fabs((double)emb[i] - ref[i]);
            }
            printf("encode cpu %d threads %ux%u: %.1f ms, CPU arena %.1f MiB + patches %.1f MiB; GPU vs CPU "
                   "max |d| / max |CPU| = %.2e\n",
                   cpu_threads, w, h, cms, cs.arena_bytes / 1048576.0, cs.patch_bytes / 1048576.0,
                   mx > 0 ? e / mx : e);
            free(ref);
        }
        free(ms), free(pre), free(emb);
        tmem_surface_release(s);
    }
    return 0;
}

static int bench_frames(tmrt_vision *gv, uint32_t w, uint32_t h, int frames, double fps, uint64_t pixels) {
    const tmrt_vision_config *c = tmrt_vision_get_config(gv);
    uint64_t lo = c->min_pixels < pixels ? c->min_pixels : pixels;
    if (tmrt_vision_set_pixel_bounds(gv, lo, pixels) != TMEM_OK)
        return fprintf(stderr, "pixel bounds %llu..%llu refused\n", (unsigned long long)lo,
                       (unsigned long long)pixels), -1;
    tmem_surface *s = surface(TMEM_FORMAT_NV12, w, h);
    if (!s) return -1;
    float *emb = NULL;
    size_t n = 0;
    tmrt_vision_stats st;
    if (encode(gv, s, &emb, &n, &st, 1)) return -1; /* warm-up */
    double *lat = calloc((size_t)frames, sizeof(double)), *enc = calloc((size_t)frames, sizeof(double));
    gpu_counters c0 = gpu_heap_counters(g_ctx);
    double start = now_ms(), period = fps > 0 ? 1000.0 / fps : 0;
    int late = 0, tries = 0;
    for (int i = 0; i < frames; i++) {
        if (period > 0) { /* the camera's clock */
            double due = start + i * period, t = now_ms();
            if (t < due) {
                struct timespec ts = {0, (long)((due - t) * 1e6)};
                nanosleep(&ts, NULL);
            } else if (t > due + period) {
                late++;
            }
        }
        if (tmem_surface_use_begin(s) != TMEM_OK || tmem_surface_lock(s, 0, NULL) != TMEM_OK ||
            fill(s, 2, (uint32_t)i + 1) || tmem_surface_unlock(s, 0, NULL) != TMEM_OK ||
            tmem_surface_use_end(s) != TMEM_OK)
            return fprintf(stderr, "frame write\n"), -1;
        double written = now_ms();
        if (encode(gv, s, &emb, &n, &st, 1)) return -1;
        double done = now_ms();
        lat[i] = (done - written) - st.encode_ms; /* write -> conversion finished */
        enc[i] = st.encode_ms;
        tries += (int)st.frame_tries - 1;
    }
    double secs = (now_ms() - start) / 1e3;
    gpu_counters c1 = gpu_heap_counters(g_ctx);
    printf("frames %ux%u nv12 -> grid %ux%u (%u tokens), %d frames at %s%.0f fps: sustained %.1f frames/s, %d late; "
           "write->conversion done p50 %.3f ms p99 %.3f ms max %.3f ms; encode p50 %.2f ms p99 %.2f ms; "
           "retried conversions %d; heaps: committed %llu -> %llu bytes, allocations %llu -> %llu (%s)\n",
           w, h, st.grid.grid_w, st.grid.grid_h, st.grid.n_tokens, frames, period > 0 ? "" : "unpaced ",
           period > 0 ? fps : 0.0, frames / secs, late, pct(lat, frames, 50), pct(lat, frames, 99),
           pct(lat, frames, 100), pct(enc, frames, 50), pct(enc, frames, 99), tries,
           (unsigned long long)c0.committed, (unsigned long long)c1.committed, (unsigned long long)c0.allocs,
           (unsigned long long)c1.allocs, c0.committed == c1.committed && c0.allocs == c1.allocs ? "flat" : "MOVED");
    free(lat), free(enc), free(emb);
    tmem_surface_release(s);
    return c0.committed == c1.committed && c0.allocs == c1.allocs ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *mmproj = NULL;
    uint32_t iw = 1024, ih = 1024, fw = 1920, fh = 1080;
    int frames = 300, reps = 10, cpu = 0;
    double fps = 30;
    uint64_t pixels = 448 * 448;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--mmproj") && i + 1 < argc) mmproj = argv[++i];
        else if (!strcmp(argv[i], "--image") && i + 1 < argc) (void)!sscanf(argv[++i], "%ux%u", &iw, &ih);
        else if (!strcmp(argv[i], "--frame") && i + 1 < argc) (void)!sscanf(argv[++i], "%ux%u", &fw, &fh);
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc) frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fps") && i + 1 < argc) fps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--pixels") && i + 1 < argc) pixels = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) cpu = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--mmproj F] [--image WxH] [--reps R] [--cpu THREADS] [--frames N] "
                            "[--frame WxH] [--fps F] [--pixels P]\n", argv[0]);
            return 2;
        }
    }
    if (quick) iw = ih = 128, fw = 320, fh = 240, frames = 20, reps = 3, fps = 0, pixels = 128 * 128;
    if (frames < 1 || reps < 1) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    tmem_context_desc cd = {0};
    cd.budget = 16ull << 30;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return 1;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = quick ? 64ull << 20 : 1ull << 30; /* a chunk holds the weights, another the arena */
    tmem_gpu *gpu;
    if (tmem_gpu_attach(g_ctx, &gd, &gpu) != TMEM_OK) {
        printf("SKIP: no Vulkan device\n");
        return 77;
    }
    tmem_gpu_info gi;
    if (tmem_gpu_get_info(gpu, &gi) == TMEM_OK) printf("device: %s\n", gi.device);
    char tmp[512] = "";
    tmrt_error err = {""};
    if (!mmproj) {
        tmrt_vision_config c;
        const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(tmp, sizeof tmp, "%s/bench_vk_vision_%d.gguf", dir, (int)getpid());
        if (tmrt_vision_preset(quick ? "tiny" : "qwen3.5-0.8b", &c) != TMEM_OK ||
            tmrt_vision_write_random(&c, TMEM_GGML_F16, 1, tmp, &err) != TMEM_OK)
            return fprintf(stderr, "mmproj: %s\n", err.message), 1;
        mmproj = tmp;
        printf("mmproj: the %s preset's encoder, random F16 weights\n", quick ? "tiny" : "qwen3.5-0.8b");
    }
    tmrt_vision *gv = NULL, *cv = NULL;
    tmrt_vision_desc vg = {mmproj, TMRT_MEMORY_TYPED, gpu}, vc = {mmproj, TMRT_MEMORY_TYPED, NULL};
    double t0 = now_ms();
    tmem_status st = tmrt_vision_open(g_ctx, &vg, &gv, &err);
    double open_ms = now_ms() - t0;
    if (st == TMEM_OK && cpu > 0) st = tmrt_vision_open(g_ctx, &vc, &cv, &err);
    if (tmp[0]) unlink(tmp);
    if (st != TMEM_OK) return fprintf(stderr, "open: %s\n", err.message), 1;
    const tmrt_vision_config *c = tmrt_vision_get_config(gv);
    printf("encoder: depth %u, hidden %u, heads %u, ff %u, out %u; weights %.1f MiB, open + upload %.0f ms\n",
           c->depth, c->hidden, c->heads, c->ff, c->out_hidden, tmrt_vision_weight_bytes(gv) / 1048576.0, open_ms);
    int rc = bench_encode(gv, cv, iw, ih, reps, cpu) || bench_frames(gv, fw, fh, frames, fps, pixels) ? 1 : 0;
    tmrt_vision_close(gv);
    tmrt_vision_close(cv);
    tmem_gpu_release(gpu);
    tmem_context_destroy(g_ctx);
    return rc;
}
