/* tmem bench tok: the runtime's tokenizer, its tables indexed in the mapped
 * GGUF (ours) vs the same tables with the token strings copied into the
 * heap (baseline, TMRT_TOKENIZER_COPY_STRINGS), in the same run: dirty bytes
 * from the library's accounting, load time, encode and decode speed.
 * Vocabulary: a GGUF (--gguf FILE, e.g. the Qwen3 one the npm comparison
 * writes to build/tokenizer/qwen3.gguf) or the synthetic byte-level BPE of
 * --vocab N tokens (default 248,320, Qwen3.5's size). Text: --corpus FILE
 * (e.g. tests/tokenizer/corpus.txt) or a built-in deterministic mix of
 * English, C, CJK, numbers and whitespace (about 1 MB). Times are the
 * calling thread's CPU time, best of 5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "typedmem/typedmem.h"
#include "tmemrt/tokenizer.h"

/* CPU time of this thread: the machine these run on is shared, and wall
 * time there measures the neighbours; the tokenizer is single-threaded. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

static char *builtin_text(size_t *len) {
    static const char *const parts[] = {
        "The quick brown fox jumps over the lazy dog. ", "Memory is typed: every byte has a role. ",
        "int main(void) { return tmem_heap_alloc(h, 64, 16, &p) == TMEM_OK ? 0 : 1; }\n",
        "我们在设备上运行大语言模型。", "日本語のテキスト、", "한국어 문장입니다. ",
        "3.14159 2026-12-01 0x1F ",
        "    indented\tline\r\n", "I'm sure they'll say it's fine. ", "😀👍🏽 ", "\n\n",
    };
    size_t cap = 1 << 20, o = 0;
    char *s = malloc(cap + 256);
    uint64_t x = 42;
    while (s && o < cap) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const char *p = parts[(x >> 33) % (sizeof parts / sizeof parts[0])];
        size_t n = strlen(p);
        memcpy(s + o, p, n);
        o += n;
    }
    *len = o;
    return s;
}

typedef struct result {
    uint64_t dirty, table, peak;
    double load_s, enc_s, dec_s;
    size_t tokens;
} result;

static int measure(const void *img, size_t img_len, const char *text, size_t len, bool copy, result *r) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_gguf *g;
    tmem_gguf_error ge;
    int rc = 1;
    if (tmem_gguf_open_memory(ctx, img, img_len, &g, &ge) != TMEM_OK) goto out_ctx;
    uint64_t d0, c0, d1, c1;
    if (tmem_context_accounted(ctx, &d0, &c0) != TMEM_OK) goto out_g;
    tmrt_tokenizer_desc td = {.flags = copy ? TMRT_TOKENIZER_COPY_STRINGS : 0};
    tmrt_tokenizer *tok;
    tmrt_error err;
    double t0 = now();
    if (tmrt_tokenizer_load_ex(ctx, g, &td, &tok, &err) != TMEM_OK) {
        fprintf(stderr, "tmem bench tok: %s\n", err.message);
        goto out_g;
    }
    r->load_s = now() - t0;
    tmrt_tokenizer_info in;
    if (tmem_context_accounted(ctx, &d1, &c1) != TMEM_OK || tmrt_tokenizer_get_info(tok, &in) != TMEM_OK) goto out_tok;
    r->dirty = d1 - d0;
    r->table = in.table_bytes;
    r->peak = in.load_peak_bytes;
    int32_t *ids = malloc((len + 1) * sizeof *ids);
    char *back = malloc(len + 1);
    if (!ids || !back) goto out_buf;
    r->enc_s = r->dec_s = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double a = now();
        if (tmrt_tokenizer_encode(tok, text, len, 0, ids, len + 1, &r->tokens) != TMEM_OK) goto out_buf;
        double b = now();
        size_t o = 0;
        for (size_t i = 0; i < r->tokens; i++) {
            size_t m;
            if (tmrt_tokenizer_decode(tok, ids[i], back + o, len + 1 - o, &m) != TMEM_OK) goto out_buf;
            o += m;
        }
        double c = now();
        if (o != len || memcmp(back, text, len)) {
            fprintf(stderr, "tmem bench tok: decode(encode(x)) != x\n");
            goto out_buf;
        }
        if (b - a < r->enc_s) r->enc_s = b - a;
        if (c - b < r->dec_s) r->dec_s = c - b;
    }
    rc = 0;
out_buf:
    free(ids);
    free(back);
out_tok:
    tmrt_tokenizer_destroy(tok);
out_g:
    tmem_gguf_close(g);
out_ctx:
    tmem_context_destroy(ctx);
    return rc;
}

int tmem_bench_tok(int argc, char **argv, bool json) {
    const char *gguf = NULL, *corpus = NULL;
    uint32_t n_vocab = 248320;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gguf") && i + 1 < argc) gguf = argv[++i];
        else if (!strcmp(argv[i], "--corpus") && i + 1 < argc) corpus = argv[++i];
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) n_vocab = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--json")) {
            fprintf(stderr, "usage: tmem bench tok [--json] [--gguf FILE | --vocab N] [--corpus FILE]\n");
            return 2;
        }
    }
    size_t img_len = 0, len = 0;
    void *img = NULL;
    if (gguf) {
        img = read_all(gguf, &img_len);
    } else {
        tmem_gguf_writer *w;
        size_t need = 0;
        if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return 1;
        if (tmrt_tokenizer_synth_write(w, n_vocab) == TMEM_OK &&
            tmem_gguf_writer_write(w, NULL, 0, &need) == TMEM_E_FULL && (img = malloc(need)) &&
            tmem_gguf_writer_write(w, img, need, &img_len) != TMEM_OK) {
            free(img);
            img = NULL;
        }
        tmem_gguf_writer_destroy(w);
    }
    char *text = corpus ? read_all(corpus, &len) : builtin_text(&len);
    if (!img || !text) {
        fprintf(stderr, "tmem bench tok: cannot read %s\n", !img ? (gguf ? gguf : "the synthetic vocabulary") : corpus);
        free(img);
        free(text);
        return 1;
    }
    result ours, plain;
    int rc = measure(img, img_len, text, len, false, &ours) || measure(img, img_len, text, len, true, &plain);
    if (!rc) {
        double mb = (double)len / 1e6;
        if (json) {
            printf("{\"bench\":\"tok\",\"vocab\":\"%s\",\"bytes\":%zu,\"tokens\":%zu,"
                   "\"in_place\":{\"dirty\":%llu,\"load_peak\":%llu,\"load_s\":%.4f,\"encode_mb_s\":%.2f,"
                   "\"encode_tokens_s\":%.0f,\"decode_mb_s\":%.2f},"
                   "\"copied\":{\"dirty\":%llu,\"load_peak\":%llu,\"load_s\":%.4f,\"encode_mb_s\":%.2f,"
                   "\"encode_tokens_s\":%.0f,\"decode_mb_s\":%.2f},"
                   "\"dirty_ratio\":%.4f,\"encode_ratio\":%.4f,\"target_dirty\":8388608,\"met\":%s}\n",
                   gguf ? gguf : "synthetic", len, ours.tokens, (unsigned long long)ours.dirty,
                   (unsigned long long)ours.peak, ours.load_s, mb / ours.enc_s, (double)ours.tokens / ours.enc_s,
                   mb / ours.dec_s, (unsigned long long)plain.dirty, (unsigned long long)plain.peak, plain.load_s,
                   mb / plain.enc_s, (double)plain.tokens / plain.enc_s, mb / plain.dec_s,
                   (double)ours.dirty / (double)plain.dirty, plain.enc_s / ours.enc_s,
                   ours.dirty <= 8388608 ? "true" : "false");
        } else {
            printf("tokenizer: %s vocabulary, %.2f MB of text, %zu tokens\n",
                   gguf ? gguf : "synthetic", mb, ours.tokens);
            printf("  %-22s %12s %12s %9s %12s %12s %12s\n", "", "dirty", "load peak", "load s", "encode MB/s",
                   "tokens/s", "decode MB/s");
            const result *rs[2] = {&ours, &plain};
            const char *names[2] = {"in place (ours)", "strings copied"};
            for (int i = 0; i < 2; i++)
                printf("  %-22s %9.2f MiB %9.2f MiB %9.3f %12.1f %12.0f %12.1f\n", names[i],
                       (double)rs[i]->dirty / 1048576.0, (double)rs[i]->peak / 1048576.0, rs[i]->load_s,
                       mb / rs[i]->enc_s, (double)rs[i]->tokens / rs[i]->enc_s, mb / rs[i]->dec_s);
            printf("  dirty in place / copied: %.2fx; encode speed copied / in place: %.2fx\n",
                   (double)ours.dirty / (double)plain.dirty, ours.enc_s / plain.enc_s);
            printf("  target <= 8 MiB dirty: %s\n", ours.dirty <= 8388608 ? "met" : "MISSED");
            printf("  reproduce: tmem bench tok%s%s%s%s\n", gguf ? " --gguf " : "", gguf ? gguf : "",
                   corpus ? " --corpus " : "", corpus ? corpus : "");
        }
    }
    free(img);
    free(text);
    return rc;
}
