/* The forward pass on Vulkan (runtime/src/gpurun/) against the CPU runtime
 * on the committed tiny checkpoints (tests/data/llamacpp: llama.cpp's own
 * conversions of the Hugging Face models of tests/data): every position's
 * logits within 1e-3 of max |logit| (f32 and f16 weights; q8_0: the CPU
 * quantises the activations to int8 for its dot products, the GPU keeps
 * them f32: 0.2, the bound runtime/test_parity allows the CPU's q8_0 against
 * Hugging Face),
 * for a full prefill, chunked prefills (chunk 1, 7, 16) and a prefill then
 * decode; the naive GPU twin bit-identical to the typed one. Then faults:
 * every device allocation of a session's creation and every compute-layer
 * call (descriptor sets, submissions, waits) of a
 * session's creation and first step failed in turn: a clean status, no
 * device byte, type or host byte left, and the next session right. Skips
 * (77) without a Vulkan device or the data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "logits_sink.h"
#include "gpu/gpu_internal.h"
#include "gpurun/gpu_internal.h"

#define N_TOK 40u

static const char *src_dir(void) {
    const char *s = getenv("TMEM_SOURCE_DIR");
    return s ? s : ".";
}

static int32_t g_tokens[N_TOK];

/* All-position logits of N_TOK tokens: prefill in chunks up to decode_from
 * (0 = all), then one at a time. */
static tmem_status eval_all(tmrt_session *s, uint32_t n_vocab, uint32_t decode_from, float *out, tmrt_error *e) {
    sink sk = {out, n_vocab, 0, N_TOK};
    uint32_t first = decode_from ? decode_from : N_TOK;
    tmrt_batch b = {0};
    b.tokens = g_tokens;
    b.n_tokens = first;
    b.logits = TMRT_LOGITS_ALL;
    tmem_status st = tmrt_session_eval(s, &b, keep, &sk, e);
    for (uint32_t t = first; !st && t < N_TOK; t++) {
        sk.base = t;
        b.tokens = g_tokens + t;
        b.n_tokens = 1;
        st = tmrt_session_eval(s, &b, keep, &sk, e);
    }
    return st;
}

static bool run(tmem_context *ctx, tmrt_model *m, uint32_t chunk, uint32_t decode_from, float *out) {
    tmrt_session *s = NULL;
    tmrt_error e = {{0}};
    tmrt_session_desc sd = {0};
    sd.n_ctx = 256;
    sd.chunk = chunk;
    sd.threads = 2;
    (void)ctx;
    tmem_status st = tmrt_session_create(m, &sd, &s, NULL, &e);
    CHECK_MSG(st == TMEM_OK, "session: %s", e.message);
    if (st == TMEM_OK) {
        st = eval_all(s, tmrt_model_hparams(m)->n_vocab, decode_from, out, &e);
        CHECK_MSG(st == TMEM_OK, "eval: %s", e.message);
    }
    tmrt_session_destroy(s);
    return st == TMEM_OK;
}

static tmrt_model *open_model_in(tmem_context *ctx, const char *path, tmrt_device_kind kind, bool *skip,
                                 tmrt_memory_mode mode) {
    tmrt_model *m = NULL;
    tmrt_error e = {{0}};
    tmrt_model_desc md = {0};
    md.path = path;
    md.memory = mode;
    md.device.kind = kind;
    md.device.chunk_size = 64ull << 20;
    tmem_status st = tmrt_model_open(ctx, &md, &m, &e);
    if (kind == TMRT_DEVICE_VULKAN && (st == TMEM_E_UNSUPPORTED || st == TMEM_E_NOT_FOUND) && skip) {
        printf("SKIP: no Vulkan device (%s: %s)\n", tmem_status_name(st), e.message);
        *skip = true;
        return NULL;
    }
    CHECK_MSG(st == TMEM_OK, "%s: %s", path, e.message);
    return m;
}
static tmrt_model *open_model(tmem_context *ctx, const char *path, tmrt_device_kind kind, bool *skip) {
    return open_model_in(ctx, path, kind, skip, TMRT_MEMORY_TYPED);
}

static float max_abs(const float *a, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fabsf(a[i]) > m ? fabsf(a[i]) : m;
    return m;
}
static float max_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* GPU vs CPU on one file; false = skip (no device). */
static bool parity(const char *file, float rel) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/data/llamacpp/%s", src_dir(), file);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        printf("   %s: absent\n", file);
        return true;
    }
    fclose(fp);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) abort();
    bool skip = false;
    tmrt_model *cpu = open_model(ctx, path, TMRT_DEVICE_CPU, NULL);
    tmrt_model *gpu = cpu ? open_model(ctx, path, TMRT_DEVICE_VULKAN, &skip) : NULL;
    if (!gpu) {
        tmrt_model_close(cpu);
        tmem_context_destroy(ctx);
        return !skip;
    }
    uint32_t V = tmrt_model_hparams(cpu)->n_vocab;
    for (uint32_t t = 0; t < N_TOK; t++) g_tokens[t] = (int32_t)((t * 37u + 11u) % V);
    size_t cells = (size_t)N_TOK * V;
    float *ref = calloc(cells, 4), *got = calloc(cells, 4);
    if (!ref || !got) abort();
    static const struct { uint32_t chunk, decode_from; const char *what; } modes[] = {
        {512, 0, "full prefill"}, {16, 0, "chunk 16"}, {7, 0, "chunk 7"}, {1, 0, "chunk 1"},
        {512, 9, "prefill 9 + decode"}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (!run(ctx, cpu, modes[i].chunk, modes[i].decode_from, ref)) continue;
        if (!run(ctx, gpu, modes[i].chunk, modes[i].decode_from, got)) continue;
        float mx = max_abs(ref, cells), d = max_diff(got, ref, cells);
        printf("   %-26s %-20s max|gpu-cpu| %.3g = %.3g of max|logit| %.3g\n", file, modes[i].what, d, d / mx, mx);
        CHECK_MSG(d <= rel * mx, "%s %s: %g > %g", file, modes[i].what, d, rel * mx);
    }
    /* the naive twin (a VkDeviceMemory per tensor, weights copied in full)
     * runs the same shaders: the same logits, bit for bit */
    tmrt_model *naive = open_model_in(NULL, path, TMRT_DEVICE_VULKAN, NULL, TMRT_MEMORY_NAIVE);
    for (int i = 0; naive && i < 2; i++) {
        uint32_t chunk = i ? 7 : 512, from = i ? 9 : 0;
        if (!run(ctx, gpu, chunk, from, ref) || !run(NULL, naive, chunk, from, got)) continue;
        CHECK_MSG(memcmp(ref, got, cells * 4) == 0, "%s: typed and naive GPU logits differ (chunk %u)", file, chunk);
    }
    if (naive) printf("   %-26s typed and naive GPU runs: bit-identical\n", file);
    tmrt_model_close(naive);
    /* the weights uploaded rather than imported: the same bytes, the same logits */
    tmrt_model_desc ud = {0};
    ud.path = path;
    ud.device.kind = TMRT_DEVICE_VULKAN;
    ud.device.weights = TMRT_WEIGHTS_UPLOAD;
    ud.device.gpu = tmrt_model_gpu(gpu); /* one gpu for the context's device types */
    tmrt_model *up = NULL;
    tmrt_error ue = {{0}};
    CHECK_MSG(tmrt_model_open(ctx, &ud, &up, &ue) == TMEM_OK, "upload: %s", ue.message);
    if (up && run(ctx, gpu, 16, 20, ref) && run(ctx, up, 16, 20, got))
        CHECK_MSG(memcmp(ref, got, cells * 4) == 0, "%s: uploaded and imported weights differ", file);
    tmrt_model_close(up);
    free(ref);
    free(got);
    tmrt_model_close(gpu);
    tmrt_model_close(cpu);
    tmem_context_destroy(ctx);
    return true;
}

/* ---- faults ---------------------------------------------------------------- */

static void faults(const char *file) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/data/llamacpp/%s", src_dir(), file);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model *m = open_model(ctx, path, TMRT_DEVICE_VULKAN, NULL);
    REQUIRE(m);
    uint32_t V = tmrt_model_hparams(m)->n_vocab;
    size_t cells = (size_t)N_TOK * V;
    float *ref = calloc(cells, 4), *got = calloc(cells, 4);
    REQUIRE(ref && got);
    REQUIRE(run(ctx, m, 16, 20, ref));
    tmem_gpu *gpu = m->gpu->gpu;
    tmrt_vk *vk = m->gpu->vk;
    uint64_t dev0 = tmem__gpu_device_bytes(gpu), dirty0, clean0;
    uint32_t types0 = tmem_type_count(ctx);
    REQUIRE_OK(tmem_context_accounted(ctx, &dirty0, &clean0));
    tmrt_session_desc sd = {0};
    sd.n_ctx = 256;
    sd.chunk = 16;
    /* device allocations of the session, one after another */
    uint32_t alloc_faults = 0, vk_faults = 0;
    for (int64_t nth = 1; nth < 64; nth++) {
        tmrt_session *s = NULL;
        tmrt_error e = {{0}};
        tmem__gpu_fault_set(gpu, nth);
        tmem_status st = tmrt_session_create(m, &sd, &s, NULL, &e);
        tmem__gpu_fault_set(gpu, 0);
        if (st == TMEM_OK) {
            tmrt_session_destroy(s);
            break;
        }
        alloc_faults++;
        CHECK_MSG(st != TMEM_OK && !s && e.message[0], "alloc %lld: %s (%s)", (long long)nth, tmem_status_name(st),
                  e.message);
        uint64_t dirty, clean;
        CHECK_OK(tmem_context_accounted(ctx, &dirty, &clean));
        CHECK_MSG(tmem__gpu_device_bytes(gpu) == dev0 && tmem_type_count(ctx) == types0 && dirty == dirty0,
                  "alloc %lld: device %llu (was %llu), types %u (%u), dirty %llu (%llu)", (long long)nth,
                  (unsigned long long)tmem__gpu_device_bytes(gpu), (unsigned long long)dev0,
                  tmem_type_count(ctx), types0, (unsigned long long)dirty, (unsigned long long)dirty0);
        CHECK_OK(tmem_context_check(ctx));
    }
    /* every compute-layer call of create + the first steps */
    for (int64_t nth = 1; nth <= 120; nth++) {
        tmrt_session *s = NULL;
        tmrt_error e = {{0}};
        tmrt__vk_fault_set(vk, nth, VK_ERROR_OUT_OF_DEVICE_MEMORY);
        tmem_status st = tmrt_session_create(m, &sd, &s, NULL, &e);
        if (st == TMEM_OK) st = eval_all(s, V, 20, got, &e);
        tmrt__vk_fault_set(vk, 0, VK_SUCCESS);
        tmrt_session_destroy(s);
        if (st == TMEM_OK) break;
        vk_faults++;
        CHECK_MSG(st == TMEM_E_NO_MEMORY && e.message[0], "vk call %lld: %s (%s)", (long long)nth,
                  tmem_status_name(st), e.message);
        CHECK_MSG(tmem__gpu_device_bytes(gpu) == dev0 && tmem_type_count(ctx) == types0, "vk call %lld: leak",
                  (long long)nth);
    }
    printf("   faults: %u device allocations, %u compute calls failed in turn: clean\n", alloc_faults, vk_faults);
    CHECK(alloc_faults >= 5 && vk_faults >= 5);
    /* usable afterwards, the same logits */
    REQUIRE(run(ctx, m, 16, 20, got));
    CHECK(max_diff(got, ref, cells) == 0);
    free(ref);
    free(got);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}

int main(void) {
    char probe[1200];
    snprintf(probe, sizeof probe, "%s/tests/data/llamacpp/qwen35-tiny-a-f32.gguf", src_dir());
    FILE *pf = fopen(probe, "rb");
    if (!pf) {
        printf("SKIP: no %s (set TMEM_SOURCE_DIR)\n", probe);
        return 77;
    }
    fclose(pf);
    static const struct { const char *file; float rel; } files[] = {
        {"qwen35-tiny-a-f32.gguf", 1e-3f}, {"qwen35-tiny-a-f16.gguf", 1e-3f},
        {"qwen35-tiny-b-f16.gguf", 1e-3f}, {"qwen35-tiny-a-q8_0.gguf", 0.2f}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!parity(files[i].file, files[i].rel)) return 77;
    faults("qwen35-tiny-a-f32.gguf");
    return tmem_test_finish();
}
