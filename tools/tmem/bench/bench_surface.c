/*
 * tmem bench surface [--json] [--frames N] [--size S] [--handoffs N]
 *
 * The article's image path, Image -> Pixel Buffer -> RGB Buffer -> Texture ->
 * Tensor, on 1080p and 4K NV12 frames, two ways in the same run:
 *   naive     a malloc + copy per stage, as a typical framework does it:
 *             pixel buffer copy, NV12 -> RGB8, RGB8 -> RGBA8 "texture upload",
 *             ToTensor (full-resolution float CHW), Resize, Normalize; every
 *             stage's output is held until the frame is done;
 *   surfaces  one NV12 surface shared by every stage (the texture stage
 *             imports the same memory, as a GPU backend would), and one fused
 *             conversion straight into the model's input tensor (an
 *             allocation of the activations heap when available).
 * Each variant runs in a fresh child process (exec of this binary) so the
 * peaks do not mix; peak = the largest Private_Dirty + Shared_Dirty growth
 * over the child's baseline seen at the end of a frame (smaps_rollup).
 * Copies and bytes copied count every byte a stage writes from another
 * buffer (the fused conversion is the surfaces variant's one copy).
 *
 * Then cross-process hand-off latency: a producer writes a timestamp into a
 * 1080p surface and sends it (export -> sendmsg); the consumer process
 * receives, imports, locks read-only and reads the timestamp; p50/p99 of
 * (read time - send time) over N hand-offs, one in flight at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench.h"
#include "cli/cli.h"
#include "typedmem/typedmem.h"
#include "typedmem/surface.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Dirty bytes: private + shared. Shared_Dirty matters here because a page
 * mapped twice (the texture stage's import) moves from private to shared. */
static uint64_t dirty_now(uint64_t *private_only) {
    tmem_footprint f;
    if (tmem_footprint_read(&f) != TMEM_OK) return *private_only = 0;
    *private_only = f.private_dirty;
    return f.private_dirty + f.shared_dirty;
}

typedef struct result {
    uint64_t copies, bytes_copied, peak, peak_private, ns_per_frame, cpu_ns_per_frame;
    int ok;
} result;

/* CPU time of this process (user + system, page faults included): robust
 * against a busy machine, unlike wall time. */
static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const float k_mean[3] = {0.485f, 0.456f, 0.406f}, k_std[3] = {0.229f, 0.224f, 0.225f};

/* The "decoder": writes a frame into NV12 memory (same cost both ways). */
static void decode_frame(uint8_t *y, size_t ybpr, uint8_t *uv, size_t uvbpr, uint32_t w, uint32_t h, uint32_t frame) {
    for (uint32_t r = 0; r < h; r++) memset(y + r * ybpr, (int)((r + frame) & 0xFF), w);
    for (uint32_t r = 0; r < h / 2; r++) memset(uv + r * uvbpr, (int)(128 + (r & 7)), w);
}

static uint8_t clamp_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* ---- naive: a buffer and a copy per stage ---- */
static result run_naive(uint32_t w, uint32_t h, uint32_t S, uint32_t frames) {
    result res = {0};
    uint64_t base_priv, base = dirty_now(&base_priv), t0 = now_ns(), c0 = cpu_ns();
    size_t n = (size_t)w * h;
    for (uint32_t f = 0; f < frames; f++) {
        uint64_t copies = 0, bytes = 0;
        uint8_t *image = malloc(n * 3 / 2);                 /* Image (decoder output) */
        uint8_t *pixbuf = malloc(n * 3 / 2);                /* Pixel Buffer */
        uint8_t *rgb = malloc(n * 3);                       /* RGB Buffer */
        uint8_t *tex = malloc(n * 4);                       /* Texture */
        float *full = malloc(n * 3 * sizeof(float));        /* ToTensor */
        float *resized = malloc((size_t)S * S * 3 * sizeof(float)); /* Resize */
        float *tensor = malloc((size_t)S * S * 3 * sizeof(float));  /* Normalize */
        if (!image || !pixbuf || !rgb || !tex || !full || !resized || !tensor) return res;
        decode_frame(image, w, image + n, w, w, h, f);
        memcpy(pixbuf, image, n * 3 / 2), copies++, bytes += n * 3 / 2;
        for (uint32_t y = 0; y < h; y++) {
            for (uint32_t x = 0; x < w; x++) {
                int Y = (pixbuf[(size_t)y * w + x] - 16) * 298;
                const uint8_t *uv = pixbuf + n + (size_t)(y / 2) * w + (x & ~1u);
                int U = uv[0] - 128, V = uv[1] - 128;
                uint8_t *o = rgb + ((size_t)y * w + x) * 3;
                o[0] = clamp_u8((Y + 409 * V + 128) >> 8);
                o[1] = clamp_u8((Y - 100 * U - 208 * V + 128) >> 8);
                o[2] = clamp_u8((Y + 516 * U + 128) >> 8);
            }
        }
        copies++, bytes += n * 3;
        for (size_t i = 0; i < n; i++)
            tex[4 * i] = rgb[3 * i], tex[4 * i + 1] = rgb[3 * i + 1],
            tex[4 * i + 2] = rgb[3 * i + 2], tex[4 * i + 3] = 255;
        copies++, bytes += n * 4;
        for (size_t i = 0; i < n; i++)
            for (int c = 0; c < 3; c++) full[(size_t)c * n + i] = tex[4 * i + (size_t)c] / 255.0f;
        copies++, bytes += n * 3 * sizeof(float);
        for (uint32_t c = 0; c < 3; c++) {
            for (uint32_t y = 0; y < S; y++) {
                float sy = ((float)y + 0.5f) * (float)h / (float)S - 0.5f;
                sy = sy < 0 ? 0 : sy > (float)(h - 1) ? (float)(h - 1) : sy;
                uint32_t y0 = (uint32_t)sy, y1 = y0 + 1 < h ? y0 + 1 : y0;
                float fy = sy - (float)y0;
                for (uint32_t x = 0; x < S; x++) {
                    float sx = ((float)x + 0.5f) * (float)w / (float)S - 0.5f;
                    sx = sx < 0 ? 0 : sx > (float)(w - 1) ? (float)(w - 1) : sx;
                    uint32_t x0 = (uint32_t)sx, x1 = x0 + 1 < w ? x0 + 1 : x0;
                    float fx = sx - (float)x0;
                    const float *p = full + (size_t)c * n;
                    float top = p[(size_t)y0 * w + x0] * (1 - fx) + p[(size_t)y0 * w + x1] * fx;
                    float bot = p[(size_t)y1 * w + x0] * (1 - fx) + p[(size_t)y1 * w + x1] * fx;
                    resized[((size_t)c * S + y) * S + x] = top * (1 - fy) + bot * fy;
                }
            }
        }
        copies++, bytes += (size_t)S * S * 3 * sizeof(float);
        for (size_t i = 0; i < (size_t)S * S * 3; i++) {
            size_t c = i / ((size_t)S * S);
            tensor[i] = (resized[i] - k_mean[c]) / k_std[c];
        }
        copies++, bytes += (size_t)S * S * 3 * sizeof(float);
        uint64_t priv, d = dirty_now(&priv);
        if (d > base && d - base > res.peak) res.peak = d - base;
        if (priv > base_priv && priv - base_priv > res.peak_private) res.peak_private = priv - base_priv;
        res.copies = copies, res.bytes_copied = bytes;
        free(tensor), free(resized), free(full), free(tex), free(rgb), free(pixbuf), free(image);
    }
    res.ns_per_frame = (now_ns() - t0) / frames;
    res.cpu_ns_per_frame = (cpu_ns() - c0) / frames;
    res.ok = 1;
    return res;
}

/* ---- surfaces: one buffer shared by every stage, one fused conversion ---- */
static result run_surfaces(uint32_t w, uint32_t h, uint32_t S, uint32_t frames) {
    result res = {0};
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return res;
    /* The tensor lives in the activations heap when heaps are available. */
    size_t tensor_bytes = (size_t)S * S * 3 * sizeof(float);
    tmem_heap *heap = NULL;
    tmem_type *act;
    void *tensor = NULL;
    if (tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act) == TMEM_OK) {
        tmem_heap_desc hd = {0};
        hd.kind = TMEM_HEAP_LINEAR;
        hd.type = act;
        hd.role = TMEM_ROLE_ACTIVATION;
        hd.size = tensor_bytes + (1u << 20);
        hd.name = "bench-activations";
        if (tmem_heap_create(ctx, &hd, &heap) != TMEM_OK || tmem_heap_alloc(heap, tensor_bytes, 64, &tensor) != TMEM_OK)
            tensor = NULL;
    }
    bool own_tensor = tensor == NULL;
    if (own_tensor) tensor = malloc(tensor_bytes);
    uint64_t base_priv, base = dirty_now(&base_priv), t0 = now_ns(), c0 = cpu_ns();
    tmem_tensor_view dst;
    tmem_convert_desc conv = {0};
    memcpy(conv.mean, k_mean, sizeof k_mean);
    memcpy(conv.std, k_std, sizeof k_std);
    if (!tensor || tmem_tensor_view_chw(tensor, TMEM_DTYPE_F32, 3, S, S, &dst) != TMEM_OK) goto out;
    for (uint32_t f = 0; f < frames; f++) {
        /* Image: the decoder writes straight into a surface. */
        tmem_surface_desc d = {0};
        d.format = TMEM_FORMAT_NV12;
        d.width = w;
        d.height = h;
        d.name = "camera-frame";
        tmem_surface *image, *texture;
        if (tmem_surface_create(ctx, &d, &image) != TMEM_OK) goto out;
        if (tmem_surface_lock(image, 0, NULL) != TMEM_OK) goto out;
        tmem_surface_info info;
        if (tmem_surface_get_info(image, &info) != TMEM_OK) goto out;
        decode_frame(tmem_surface_plane_ptr(image, 0), info.layout.planes[0].bytes_per_row,
                     tmem_surface_plane_ptr(image, 1), info.layout.planes[1].bytes_per_row, w, h, f);
        if (tmem_surface_unlock(image, 0, NULL) != TMEM_OK) goto out;
        /* Pixel Buffer: the same surface, one more user. */
        tmem_surface *pixbuf = tmem_surface_retain(image);
        if (tmem_surface_use_begin(pixbuf) != TMEM_OK) goto out;
        /* RGB Buffer: not materialised; the conversion reads NV12 directly. */
        /* Texture: a GPU backend imports the same memory (no upload). */
        tmem_surface_share sh;
        if (tmem_surface_export(pixbuf, TMEM_SHARE_READ_ONLY, &sh) != TMEM_OK) goto out;
        tmem_status st = tmem_surface_import(ctx, &sh, 0, &texture);
        tmem_surface_share_close(&sh);
        if (st != TMEM_OK) goto out;
        /* Tensor: the one conversion, into the activations heap. */
        if (tmem_surface_convert(texture, &conv, &dst) != TMEM_OK) goto out;
        res.copies = 1, res.bytes_copied = tensor_bytes;
        uint64_t priv, dd = dirty_now(&priv);
        if (dd > base && dd - base > res.peak) res.peak = dd - base;
        if (priv > base_priv && priv - base_priv > res.peak_private) res.peak_private = priv - base_priv;
        tmem_surface_release(texture);
        if (tmem_surface_use_end(pixbuf) != TMEM_OK) goto out;
        tmem_surface_release(pixbuf);
        tmem_surface_release(image);
    }
    res.ns_per_frame = (now_ns() - t0) / frames;
    res.cpu_ns_per_frame = (cpu_ns() - c0) / frames;
    res.ok = 1;
out:
    if (own_tensor) free(tensor);
    tmem_context_destroy(ctx); /* frees the heap and anything left on error */
    return res;
}

/* ---- child process entry: one variant, one result line ---- */
static int child_main(int argc, char **argv) {
    if (argc < 7) return 2;
    uint32_t w = (uint32_t)atoi(argv[3]), h = (uint32_t)atoi(argv[4]), S = (uint32_t)atoi(argv[5]);
    uint32_t frames = (uint32_t)atoi(argv[6]);
    result r = strcmp(argv[2], "naive") == 0 ? run_naive(w, h, S, frames) : run_surfaces(w, h, S, frames);
    printf("%d %llu %llu %llu %llu %llu %llu\n", r.ok, (unsigned long long)r.copies, (unsigned long long)r.bytes_copied,
           (unsigned long long)r.peak, (unsigned long long)r.ns_per_frame, (unsigned long long)r.cpu_ns_per_frame,
           (unsigned long long)r.peak_private);
    return r.ok ? 0 : 1;
}

static result run_child(const char *variant, uint32_t w, uint32_t h, uint32_t S, uint32_t frames) {
    result r = {0};
    char cmd[512], args[4][16];
    snprintf(args[0], 16, "%u", w), snprintf(args[1], 16, "%u", h), snprintf(args[2], 16, "%u", S);
    snprintf(args[3], 16, "%u", frames);
    char *const argv[] = {"tmem", "bench", "surface", "--child", (char *)variant, args[0], args[1], args[2], args[3],
                          NULL};
    if (!tmem_bench_child(argv, cmd, sizeof cmd)) return r;
    unsigned long long a, b, c, d, e, f;
    if (sscanf(cmd, "%d %llu %llu %llu %llu %llu %llu", &r.ok, &a, &b, &c, &d, &e, &f) == 7)
        r.copies = a, r.bytes_copied = b, r.peak = c, r.ns_per_frame = d, r.cpu_ns_per_frame = e, r.peak_private = f;
    return r;
}

/* ---- cross-process hand-off ---- */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int handoff(uint32_t count, uint64_t *p50, uint64_t *p99, uint64_t *pmax) {
    int sv[2];
    /* the kind of socket tmem_surface_send wants: a connected Unix pair */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        /* Consumer: receive, import, lock, read; reply with the latency. */
        tmem_context *ctx;
        tmem_context_desc cd = {0};
        if (tmem_context_create(&cd, &ctx) != TMEM_OK) _exit(1);
        for (uint32_t i = 0; i < count; i++) {
            tmem_surface *s;
            if (tmem_surface_receive(ctx, sv[1], 0, &s) != TMEM_OK) _exit(2);
            if (tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, NULL) != TMEM_OK) _exit(3);
            uint64_t sent;
            memcpy(&sent, tmem_surface_base(s), sizeof sent);
            uint64_t lat = now_ns() - sent;
            if (tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, NULL) != TMEM_OK) _exit(4);
            tmem_surface_release(s);
            if (send(sv[1], &lat, sizeof lat, MSG_NOSIGNAL) != (ssize_t)sizeof lat) _exit(5);
        }
        tmem_context_destroy(ctx);
        _exit(0);
    }
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    uint64_t *lat = calloc(count, sizeof *lat);
    int rc = -1;
    tmem_surface *s = NULL;
    if (!lat || tmem_context_create(&cd, &ctx) != TMEM_OK) goto done;
    tmem_surface_desc d = {0};
    d.format = TMEM_FORMAT_NV12;
    d.width = 1920;
    d.height = 1080;
    if (tmem_surface_create(ctx, &d, &s) != TMEM_OK) goto done_ctx;
    uint32_t got = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (tmem_surface_lock(s, 0, NULL) != TMEM_OK) break;
        uint64_t t = now_ns();
        memcpy(tmem_surface_base(s), &t, sizeof t);
        if (tmem_surface_unlock(s, 0, NULL) != TMEM_OK) break;
        if (tmem_surface_send(s, sv[0], TMEM_SHARE_READ_ONLY) != TMEM_OK) break;
        if (recv(sv[0], &lat[i], sizeof lat[i], 0) != (ssize_t)sizeof lat[i]) break;
        got++;
    }
    if (got == count) {
        /* The first hand-offs warm caches and page tables: drop 1%. */
        uint32_t skip = count / 100;
        qsort(lat + skip, count - skip, sizeof *lat, cmp_u64);
        uint32_t m = count - skip;
        *p50 = lat[skip + m / 2];
        *p99 = lat[skip + (uint32_t)((uint64_t)m * 99 / 100)];
        *pmax = lat[count - 1];
        rc = 0;
    }
    tmem_surface_release(s);
done_ctx:
    tmem_context_destroy(ctx);
done:
    close(sv[0]);
    close(sv[1]);
    int status;
    waitpid(pid, &status, 0);
    free(lat);
    return rc;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* ---- the conversion alone: SIMD vs the scalar reference, one core ---- */
static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Median thread-CPU ns of one 1080p NV12 -> 3xSxS f32 conversion, each path,
 * the two paths interleaved so load drifts hit both alike. */
static int conversion_speed(uint32_t S, uint32_t reps, uint64_t *scalar_ns, uint64_t *simd_ns) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return -1;
    tmem_surface_desc d = {0};
    d.format = TMEM_FORMAT_NV12, d.width = 1920, d.height = 1080;
    tmem_surface *img = NULL;
    float *tensor = malloc((size_t)S * S * 3 * sizeof(float));
    uint64_t *t[2] = {calloc(reps, sizeof(uint64_t)), calloc(reps, sizeof(uint64_t))};
    int rc = -1;
    tmem_tensor_view dst;
    tmem_surface_info info;
    if (!tensor || !t[0] || !t[1] || tmem_surface_create(ctx, &d, &img) != TMEM_OK ||
        tmem_surface_get_info(img, &info) != TMEM_OK || tmem_tensor_view_chw(tensor, TMEM_DTYPE_F32, 3, S, S, &dst))
        goto out;
    decode_frame(tmem_surface_plane_ptr(img, 0), info.layout.planes[0].bytes_per_row, tmem_surface_plane_ptr(img, 1),
                 info.layout.planes[1].bytes_per_row, 1920, 1080, 7);
    tmem_convert_desc conv = {0};
    memcpy(conv.mean, k_mean, sizeof k_mean);
    memcpy(conv.std, k_std, sizeof k_std);
    for (uint32_t i = 0; i < reps; i++) {
        for (int v = 0; v < 2; v++) {
            conv.flags = v == 0 ? TMEM_CONVERT_REFERENCE : 0;
            uint64_t c0 = thread_cpu_ns();
            if (tmem_surface_convert(img, &conv, &dst) != TMEM_OK) goto out;
            t[v][i] = thread_cpu_ns() - c0;
        }
    }
    qsort(t[0], reps, sizeof(uint64_t), cmp_u64);
    qsort(t[1], reps, sizeof(uint64_t), cmp_u64);
    *scalar_ns = t[0][reps / 2], *simd_ns = t[1][reps / 2];
    rc = 0;
out:
    free(t[0]), free(t[1]), free(tensor);
    tmem_surface_release(img);
    tmem_context_destroy(ctx);
    return rc;
}

int tmem_bench_surface(int argc, char **argv, bool json) {
    if (argc >= 2 && strcmp(argv[1], "--child") == 0) return child_main(argc, argv);
    uint32_t frames = 8, S = 448, handoffs = 2000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *cmd = "tmem bench surface";
        if (!strcmp(a, "--frames")) { if (!tmem_cli_value_u32(cmd, a, v, 1, 1u << 20, &frames)) return 2; i++; }
        else if (!strcmp(a, "--size")) { if (!tmem_cli_value_u32(cmd, a, v, 1, 4096, &S)) return 2; i++; }
        else if (!strcmp(a, "--handoffs")) {
            if (!tmem_cli_value_u32(cmd, a, v, 100, 1u << 30, &handoffs)) return 2;
            i++;
        }
        else if (strcmp(a, "--json")) {
            fprintf(stderr, "usage: tmem bench surface [--json] [--frames N] [--size S] [--handoffs N]\n");
            return 2;
        }
    }
    if (!frames || !S || S > 4096 || handoffs < 100) {
        fprintf(stderr, "tmem bench surface: --frames >= 1, --size 1..4096, --handoffs >= 100\n");
        return 2;
    }
    static const struct { const char *name; uint32_t w, h; } res[] = {{"1080p", 1920, 1080}, {"4K", 3840, 2160}};
    result r[2][2];
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        r[i][0] = run_child("naive", res[i].w, res[i].h, S, frames);
        r[i][1] = run_child("surfaces", res[i].w, res[i].h, S, frames);
        failed |= !r[i][0].ok || !r[i][1].ok;
    }
    uint64_t p50 = 0, p99 = 0, pmax = 0;
    int hrc = handoff(handoffs, &p50, &p99, &pmax);
    failed |= hrc != 0;
    uint64_t conv_scalar = 0, conv_simd = 0;
    int crc = conversion_speed(S, 3 * frames + 1, &conv_scalar, &conv_simd);
    failed |= crc != 0;
    bool conv_met = crc == 0 && conv_simd <= 2000000;
    bool peak_met = true, copies_met = true;
    for (int i = 0; i < 2; i++) {
        peak_met &= r[i][1].peak * 3 <= r[i][0].peak;
        copies_met &= r[i][1].copies == 1;
    }
    bool handoff_met = hrc == 0 && p99 < 50000;
    if (json) {
        printf("{\"bench\":\"surface\",\"tensor\":[3,%u,%u],\"frames\":%u,\"pipelines\":[", S, S, frames);
        for (int i = 0; i < 2; i++) {
            for (int v = 0; v < 2; v++) {
                printf("%s{\"resolution\":\"%s\",\"variant\":\"%s\",\"ok\":%s,\"copies\":%llu,\"bytes_copied\":%llu,"
                       "\"peak_dirty_bytes\":%llu,\"peak_private_dirty_bytes\":%llu,\"ns_per_frame\":%llu,"
                       "\"cpu_ns_per_frame\":%llu}",
                       i + v ? "," : "", res[i].name, v ? "surfaces" : "naive", r[i][v].ok ? "true" : "false",
                       (unsigned long long)r[i][v].copies, (unsigned long long)r[i][v].bytes_copied,
                       (unsigned long long)r[i][v].peak, (unsigned long long)r[i][v].peak_private,
                       (unsigned long long)r[i][v].ns_per_frame,
                       (unsigned long long)r[i][v].cpu_ns_per_frame);
            }
        }
        printf("],\"handoff\":{\"count\":%u,\"ok\":%s,\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu},", handoffs,
               hrc == 0 ? "true" : "false", (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)pmax);
        printf("\"conversion\":{\"ok\":%s,\"isa\":\"%s\",\"scalar_cpu_ns\":%llu,\"simd_cpu_ns\":%llu},",
               crc == 0 ? "true" : "false", tmem_surface_convert_isa(), (unsigned long long)conv_scalar,
               (unsigned long long)conv_simd);
        printf("\"targets\":{\"peak_third_of_naive\":%s,\"one_copy\":%s,\"handoff_p99_under_50us\":%s,"
               "\"conversion_under_2ms\":%s}}\n",
               peak_met ? "true" : "false", copies_met ? "true" : "false", handoff_met ? "true" : "false",
               conv_met ? "true" : "false");
        return failed ? 1 : 0;
    }
    printf("surface bench: NV12 frame -> 3x%ux%u f32 tensor, %u frames per variant, "
           "each variant in a fresh process\n\n",
           S, S, frames);
    printf("%-6s %-9s %7s %12s %16s %14s %15s\n", "frame", "variant", "copies", "MiB copied", "peak dirty MiB",
           "cpu ms/frame", "wall ms/frame");
    for (int i = 0; i < 2; i++) {
        for (int v = 0; v < 2; v++) {
            const result *x = &r[i][v];
            printf("%-6s %-9s %7llu %12.1f %16.1f %14.2f %15.2f%s\n", res[i].name, v ? "surfaces" : "naive",
                   (unsigned long long)x->copies, mib(x->bytes_copied), mib(x->peak), x->cpu_ns_per_frame / 1e6,
                   x->ns_per_frame / 1e6, x->ok ? "" : "  (FAILED)");
        }
        const result *n = &r[i][0], *s = &r[i][1];
        printf("%-6s ratio     surfaces/naive: peak %.3f, bytes copied %.3f, cpu time %.2f\n", res[i].name,
               n->peak ? (double)s->peak / (double)n->peak : 0.0,
               n->bytes_copied ? (double)s->bytes_copied / (double)n->bytes_copied : 0.0,
               n->cpu_ns_per_frame ? (double)s->cpu_ns_per_frame / (double)n->cpu_ns_per_frame : 0.0);
    }
    if (hrc == 0)
        printf("\nhand-off 1080p NV12 across processes (export, send, receive, import, lock, read), %u runs:\n"
               "  p50 %.1f us, p99 %.1f us, max %.1f us\n",
               handoffs, p50 / 1e3, p99 / 1e3, pmax / 1e3);
    else
        printf("\nhand-off: FAILED\n");
    if (crc == 0)
        printf("\nconversion alone, 1080p NV12 -> 3x%ux%u f32, one core (thread CPU, median of %u):\n"
               "  scalar reference %.2f ms, %s %.2f ms, ratio %.1fx (bit-identical results)\n",
               S, S, 3 * frames + 1, conv_scalar / 1e6, tmem_surface_convert_isa(), conv_simd / 1e6,
               conv_simd ? (double)conv_scalar / (double)conv_simd : 0.0);
    else
        printf("\nconversion alone: FAILED\n");
    printf("\ntargets: peak <= 1/3 naive: %s; one copy (the fused conversion): %s; hand-off p99 < 50 us: %s; "
           "conversion <= 2 ms: %s\n",
           peak_met ? "met" : "MISSED", copies_met ? "met" : "MISSED", handoff_met ? "met" : "MISSED",
           conv_met ? "met" : "MISSED");
    printf("reproduce: tmem bench surface --frames %u --size %u --handoffs %u\n", frames, S, handoffs);
    return failed ? 1 : 0;
}
