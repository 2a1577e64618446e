/* libFuzzer target for the tokenizer's metadata loader: any GGUF image
 * either fails to load with an error (and a message) or gives a tokenizer
 * that encodes and decodes without crashing, with decode(encode(x)) == x on
 * the input's own bytes. The input is copied to an exact-size allocation so
 * AddressSanitizer sees a read one byte past the end. Seeds: fuzz/tok_meta/corpus
 * (synthetic vocabularies and broken variants). It links the runtime:
 * see runtime_sources.cmake. */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "tmemrt/tokenizer.h"

static void round_trip(const tmrt_tokenizer *tok, const uint8_t *s, size_t len) {
    size_t n = 0;
    int32_t *ids = malloc((len + 2) * sizeof *ids);
    char *back = malloc(len + 1);
    if (!ids || !back) goto out;
    if (tmrt_tokenizer_encode(tok, (const char *)s, len, TMRT_TOKENIZE_PARSE_SPECIAL, ids, len + 2, &n) != TMEM_OK)
        goto out; /* (no scratch for a long piece is an error, not a crash) */
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char piece[1024];
        size_t m;
        if (tmrt_tokenizer_decode(tok, ids[i], piece, sizeof piece, &m) != TMEM_OK) abort();
        if (o + m > len || memcmp(piece, s + o, m)) abort();
        o += m;
    }
    if (o != len) abort();
out:
    free(ids);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    tmem_context *ctx;
    tmem_context_desc cd = {.budget = 256ull << 20};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) {
        free(copy);
        return 0;
    }
    tmem_gguf *g;
    tmem_gguf_error ge;
    if (tmem_gguf_open_memory(ctx, copy, size, &g, &ge) == TMEM_OK) {
        tmrt_tokenizer *tok;
        tmrt_error err = {""};
        tmem_status st = tmrt_tokenizer_load(ctx, g, &tok, &err);
        if (st == TMEM_OK) {
            round_trip(tok, (const uint8_t *)"Hello <|im_start|>world \xe4\xb8\xad\xff 123\n\n  x", 31);
            round_trip(tok, data, size < 4096 ? size : 4096);
            int32_t ids[64];
            size_t n;
            tmem_status cs = tmrt_tokenizer_chat(tok, "s", "u", 1, 0, ids, 64, &n);
            if (cs != TMEM_OK && cs != TMEM_E_NOT_FOUND && cs != TMEM_E_FULL) abort();
            tmrt_tokenizer_destroy(tok);
        } else if (!err.message[0]) {
            abort(); /* every failure explains itself */
        }
        tmem_gguf_close(g);
    }
    tmem_context_destroy(ctx);
    free(copy);
    return 0;
}
