/* Parity with Hugging Face transformers' Qwen3.5 (tests/data, made by
 * tests/data/gen/gen_text.py in float32): the runtime's logits on the same
 * token ids, max |diff| <= 1e-3 x max |logit|, for a full prefill, chunked
 * prefills (chunk 1, 7, 16, 64: the same logits within 1e-5 of each other
 * too) and prefill-then-decode (teacher forcing from the reference's
 * prefill_n). Models: the GGUF tmem convert makes from the checkpoint (f32),
 * and the GGUFs llama.cpp's own converter made (tests/data/llamacpp), f32
 * at the same bound, f16 and q8_0 weights at the bound their rounding
 * allows (2e-2 and 0.2 of max |logit|; the figures are printed). Two configs: A (3:1
 * layers, 2 key / 4 value DeltaNet heads, tied, partial rotary 0.25) and B
 * (1:1 layers, 5 layers, untied). Skips (77) when tests/data is absent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "harness.h"
#include "logits_sink.h"
#include "tmemrt/runtime.h"

typedef struct ref {
    int32_t tokens[512];
    uint32_t n_tokens, n_vocab, prefill_n;
    float *prefill, *decode, *chunked;
    uint32_t chunked_chunk;
    float max_abs;
} ref;

static const char *src_dir(void) {
    const char *s = getenv("TMEM_SOURCE_DIR");
    return s ? s : ".";
}

static float *read_f32(const char *dir, const char *name, size_t n) {
    char p[1600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    float *d = malloc(n * sizeof *d);
    if (d && fread(d, sizeof *d, n, f) != n) {
        free(d);
        d = NULL;
    }
    fclose(f);
    return d;
}

/* The few fields of ref.json the test needs (our generator's fixed layout). */
static bool read_ref(const char *dir, ref *r) {
    char p[1600];
    snprintf(p, sizeof p, "%s/ref.json", dir);
    FILE *f = fopen(p, "rb");
    if (!f) return false;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    memset(r, 0, sizeof *r);
    char *t = strstr(text, "\"tokens\"");
    if (!t || !(t = strchr(t, '['))) return false;
    for (t++; r->n_tokens < 512;) {
        char *end;
        long v = strtol(t, &end, 10);
        if (end == t) break;
        r->tokens[r->n_tokens++] = (int32_t)v;
        t = end;
        while (*t == ',' || *t == ' ' || *t == '\n') t++;
    }
    char *v = strstr(text, "\"n_vocab\":");
    char *pn = strstr(text, "\"prefill_n\":");
    char *ch = strstr(text, "\"chunk\":");
    if (!v || !pn || !ch) return false;
    r->n_vocab = (uint32_t)strtoul(v + 10, NULL, 10);
    r->prefill_n = (uint32_t)strtoul(pn + 12, NULL, 10);
    r->chunked_chunk = (uint32_t)strtoul(ch + 8, NULL, 10);
    size_t cells = (size_t)r->n_tokens * r->n_vocab;
    r->prefill = read_f32(dir, "ref_prefill_logits.f32", cells);
    r->decode = read_f32(dir, "ref_decode_logits.f32", cells);
    r->chunked = read_f32(dir, "ref_chunked_logits.f32", cells);
    if (!r->prefill || !r->decode || !r->chunked) return false;
    for (size_t i = 0; i < cells; i++)
        if (fabsf(r->prefill[i]) > r->max_abs) r->max_abs = fabsf(r->prefill[i]);
    return r->n_tokens > 0 && r->n_vocab > 0;
}

/* All-position logits: prefill in `chunk`s up to decode_from (0 = all), then one token at a time. */
static bool run(const char *gguf, const ref *r, uint32_t chunk, uint32_t decode_from, tmem_kv_dtype kv,
                float *out) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx)) return false;
    tmrt_model *m = NULL;
    tmrt_session *s = NULL;
    tmrt_error e = {{0}};
    tmrt_model_desc md = {0};
    md.path = gguf;
    bool ok = tmrt_model_open(ctx, &md, &m, &e) == TMEM_OK;
    CHECK_MSG(ok, "%.100s: %.120s", gguf, e.message);
    tmrt_session_desc sd = {0};
    sd.n_ctx = 1024;
    sd.chunk = chunk;
    sd.threads = 2;
    sd.kv_dtype = kv;
    if (ok) {
        ok = tmrt_session_create(m, &sd, &s, NULL, &e) == TMEM_OK;
        CHECK_MSG(ok, "session: %.200s", e.message);
    }
    if (ok) CHECK_MSG(tmrt_model_hparams(m)->n_vocab == r->n_vocab, "vocab %u vs %u", tmrt_model_hparams(m)->n_vocab,
                      r->n_vocab);
    uint32_t first = decode_from ? decode_from : r->n_tokens;
    sink sk = {out, r->n_vocab, 0, r->n_tokens};
    if (ok && tmrt_model_hparams(m)->n_vocab == r->n_vocab) {
        tmrt_batch b = {0};
        b.tokens = r->tokens;
        b.n_tokens = first;
        b.logits = TMRT_LOGITS_ALL;
        ok = tmrt_session_eval(s, &b, keep, &sk, &e) == TMEM_OK;
        for (uint32_t t = first; ok && t < r->n_tokens; t++) {
            sk.base = t;
            b.tokens = r->tokens + t;
            b.n_tokens = 1;
            ok = tmrt_session_eval(s, &b, keep, &sk, &e) == TMEM_OK;
        }
        CHECK_MSG(ok, "eval: %.200s", e.message);
    } else {
        ok = false;
    }
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
    return ok;
}

static float max_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* The three reference comparisons and the chunk-size agreement for one GGUF. */
static void parity(const char *label, const char *gguf, const ref *r, float rel, float rel_self) {
    size_t cells = (size_t)r->n_tokens * r->n_vocab;
    float *full = calloc(cells, sizeof *full), *other = calloc(cells, sizeof *other);
    REQUIRE(full && other);
    float bound = rel * r->max_abs;
    if (run(gguf, r, 512, 0, TMEM_KV_DTYPE_F16, other)) { /* the default: f16 K/V rows, as llama.cpp */
        float d = max_diff(other, r->prefill, cells);
        printf("   %-28s f16 KV prefill max|diff| %.3g\n", label, d);
        CHECK_MSG(d <= bound, "%s: f16 KV prefill max |diff| %g > %g", label, d, bound);
    }
    if (run(gguf, r, 512, 0, TMEM_KV_DTYPE_F32, full)) {
        float d = max_diff(full, r->prefill, cells);
        printf("   %-28s prefill      max|diff| %.3g (bound %.3g, max|logit| %.3g)\n", label, d, bound, r->max_abs);
        CHECK_MSG(d <= bound, "%s: prefill max |diff| %g > %g", label, d, bound);
    }
    uint32_t chunks[] = {1, 7, 16, 64};
    for (int i = 0; i < 4; i++) {
        if (!run(gguf, r, chunks[i], 0, TMEM_KV_DTYPE_F32, other)) continue;
        float d = max_diff(other, r->chunked, cells), self = max_diff(other, full, cells);
        printf("   %-28s chunk %-4u   max|diff| %.3g vs HF chunked, %.3g vs our full prefill\n", label, chunks[i], d,
               self);
        CHECK_MSG(d <= bound, "%s chunk %u: max |diff| %g > %g", label, chunks[i], d, bound);
        CHECK_MSG(self <= rel_self * r->max_abs, "%s chunk %u vs chunk 512: %g", label, chunks[i], self);
    }
    if (run(gguf, r, 512, r->prefill_n, TMEM_KV_DTYPE_F32, other)) {
        float d = max_diff(other, r->decode, cells);
        printf("   %-28s decode-from %-3u max|diff| %.3g\n", label, r->prefill_n, d);
        CHECK_MSG(d <= bound, "%s: decode max |diff| %g > %g", label, d, bound);
    }
    free(full);
    free(other);
}

/* `tmem convert` the checkpoint; false (and a message) if the tool lacks it. */
static bool convert(const char *hf_dir, const char *out) {
    const char *tool = getenv("TMEM_TOOL");
    if (!tool) return false;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --dtype f32 >/dev/null", tool, hf_dir, out);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

int main(void) {
    char data[1024];
    snprintf(data, sizeof data, "%s/tests/data", src_dir());
    static const char *const names[2] = {"a", "b"};
    ref refs[2];
    for (int i = 0; i < 2; i++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/qwen35-tiny-%s", data, names[i]);
        if (!read_ref(dir, &refs[i])) {
            printf("SKIP: no reference data in %s (tests/data from branch rt-ref)\n", dir);
            return 77;
        }
    }
    char tmp[512];
    if (!tmem_test_tmpdir(tmp, sizeof tmp)) return 1;
    for (int i = 0; i < 2; i++) {
        char hf[1100], gguf[1700], label[64];
        printf("-- config %s\n", names[i]);
        snprintf(hf, sizeof hf, "%s/qwen35-tiny-%s", data, names[i]);
        snprintf(gguf, sizeof gguf, "%s/tiny-%s-f32.gguf", tmp, names[i]);
        if (convert(hf, gguf)) {
            snprintf(label, sizeof label, "tmem convert %s f32", names[i]);
            parity(label, gguf, &refs[i], 1e-3f, 1e-5f);
            remove(gguf);
        } else {
            CHECK_MSG(0, "tmem convert failed for config %s (or the tool lacks it)", names[i]);
        }
        /* f16 weights: their rounding; q8_0: weights and activations on an
         * int8 grid, where a last-bit difference of the chunked sums can flip
         * a rounding (the split changes the logits by ~1%) */
        static const struct { const char *file; float rel, rel_self; } lc[] = {
            {"f32", 1e-3f, 1e-5f}, {"f16", 2e-2f, 1e-4f}, {"q8_0", 0.2f, 5e-2f}};
        for (int j = 0; j < 3; j++) {
            snprintf(gguf, sizeof gguf, "%s/llamacpp/qwen35-tiny-%s-%s.gguf", data, names[i], lc[j].file);
            FILE *f = fopen(gguf, "rb");
            if (!f) continue;
            fclose(f);
            snprintf(label, sizeof label, "llama.cpp convert %s %s", names[i], lc[j].file);
            parity(label, gguf, &refs[i], lc[j].rel, lc[j].rel_self);
        }
    }
    remove(tmp);
    for (int i = 0; i < 2; i++) {
        free(refs[i].prefill);
        free(refs[i].decode);
        free(refs[i].chunked);
    }
    return tmem_test_finish();
}
