/* libFuzzer target for encoding: arbitrary bytes never crash, and
 * decode(encode(x)) == x byte for byte, through both decode and the UTF-8
 * stream. The first input byte picks the flags and the vocabulary (a
 * synthetic Qwen-style BPE of 1,000 or 6,000 tokens, built once per process,
 * pre-tokenizer qwen35 or qwen2). Seeds: fuzz/tok_encode/corpus. Runtime sources:
 * runtime_sources.cmake. */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "tmemrt/tokenizer.h"

typedef struct vocab {
    tmem_context *ctx;
    void *img;
    tmem_gguf *g;
    tmrt_tokenizer *tok;
} vocab;

static tmrt_tokenizer *build(vocab *v, uint32_t n_vocab) {
    if (v->tok) return v->tok;
    tmem_context_desc cd = {0};
    tmem_gguf_writer *w;
    size_t need = 0, len;
    tmrt_error err = {""};
    tmem_gguf_error ge;
    if (tmem_context_create(&cd, &v->ctx) != TMEM_OK || tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) abort();
    if (tmrt_tokenizer_synth_write(w, n_vocab) != TMEM_OK || tmem_gguf_writer_write(w, NULL, 0, &need) != TMEM_E_FULL)
        abort();
    v->img = malloc(need);
    if (!v->img || tmem_gguf_writer_write(w, v->img, need, &len) != TMEM_OK) abort();
    tmem_gguf_writer_destroy(w);
    if (tmem_gguf_open_memory(v->ctx, v->img, len, &v->g, &ge) != TMEM_OK) abort();
    if (tmrt_tokenizer_load(v->ctx, v->g, &v->tok, &err) != TMEM_OK) abort();
    return v->tok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static vocab small, large; /* built once: the fuzzer's per-process fixture */
    if (!size) return 0;
    const tmrt_tokenizer *tok = (data[0] & 1) ? build(&large, 6000) : build(&small, 1000);
    uint32_t flags = (data[0] & 2) ? TMRT_TOKENIZE_PARSE_SPECIAL : 0;
    const char *s = (const char *)data + 1;
    size_t len = size - 1, n = 0;
    tmem_status sized = tmrt_tokenizer_encode(tok, s, len, flags, NULL, 0, &n);
    if (sized != (n ? TMEM_E_FULL : TMEM_OK) || (len && !n)) abort();
    int32_t *ids = malloc((n + 1) * sizeof *ids);
    char *back = malloc(len + 4);
    size_t n2;
    if (!ids || !back || tmrt_tokenizer_encode(tok, s, len, flags, ids, n + 1, &n2) != TMEM_OK || n2 != n) abort();
    size_t o = 0, o2 = 0;
    tmrt_utf8_stream st = {0};
    char *streamed = malloc(len + 4);
    if (!streamed) abort();
    for (size_t i = 0; i < n; i++) {
        size_t m;
        if (tmrt_tokenizer_decode(tok, ids[i], back + o, len + 4 - o, &m) != TMEM_OK) abort();
        o += m;
        if (o > len) abort();
        if (tmrt_tokenizer_decode_stream(tok, &st, ids[i], streamed + o2, len + 4 - o2, &m) != TMEM_OK) abort();
        o2 += m;
    }
    size_t m;
    if (tmrt_utf8_stream_flush(&st, streamed + o2, len + 4 - o2, &m) != TMEM_OK) abort();
    o2 += m;
    if (o != len || memcmp(back, s, len) || o2 != len || memcmp(streamed, s, len)) abort();
    free(ids);
    free(back);
    free(streamed);
    return 0;
}
