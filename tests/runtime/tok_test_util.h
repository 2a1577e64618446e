/* tok_test_util.h: small tokenizer GGUFs for the tokenizer tests, with knobs
 * to break one thing at a time. The base vocabulary: the 256 byte tokens
 * (GPT-2 byte-level text, id = byte), "he", "ll", "hell", "hello", "Ġw",
 * "Ġwo", then <|im_start|>, <|im_end|>, <|endoftext|> (control) and
 * <think> (user defined). */
#ifndef TOK_TEST_UTIL_H
#define TOK_TEST_UTIL_H

#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "tmemrt/tokenizer.h"

#define MINI_BASE 256
enum { MINI_HE = 256, MINI_LL, MINI_HELL, MINI_HELLO, MINI_GW, MINI_GWO, MINI_IM_START, MINI_IM_END,
       MINI_EOT, MINI_THINK, MINI_N };

typedef struct mini {
    const char *model, *pre;          /* NULL: key omitted */
    const char *tokens[MINI_N + 8];
    int32_t types[MINI_N + 8];
    uint32_t n_tokens, n_types;
    const char *merges[16];
    uint32_t n_merges;
    bool omit_tokens, omit_merges, omit_types;
    bool tokens_wrong_type;           /* tokens as an INT32 array */
    bool types_wrong_type;            /* token_type as a UINT8 array */
    bool merges_scalar;               /* merges as one STRING */
    int64_t eos;                      /* -1: omitted */
    bool eos_as_string;
    char byte_text[256][3];
} mini;

static inline void mini_init(mini *m) {
    memset(m, 0, sizeof *m);
    m->model = "gpt2";
    m->pre = "qwen2";
    for (int b = 0; b < 256; b++) {
        uint32_t cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? (uint32_t)b : 0;
        if (!cp) {
            uint32_t k = b <= 0x20 ? (uint32_t)b : b <= 0xA0 ? 33u + (uint32_t)(b - 0x7F) : 67u;
            cp = 0x100 + k;
        }
        if (cp < 0x80) {
            m->byte_text[b][0] = (char)cp;
        } else {
            m->byte_text[b][0] = (char)(0xC0 | cp >> 6);
            m->byte_text[b][1] = (char)(0x80 | (cp & 0x3F));
        }
        m->tokens[b] = m->byte_text[b];
        m->types[b] = 1;
    }
    static const char *const extra[] = {"he", "ll", "hell", "hello", "\xc4\xa0w", "\xc4\xa0wo",
                                        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>"};
    static const int32_t extra_types[] = {1, 1, 1, 1, 1, 1, 3, 3, 3, 4};
    for (int i = 0; i < MINI_N - MINI_BASE; i++) {
        m->tokens[MINI_BASE + i] = extra[i];
        m->types[MINI_BASE + i] = extra_types[i];
    }
    m->n_tokens = m->n_types = MINI_N;
    static const char *const merges[] = {"h e", "l l", "he ll", "hell o", "\xc4\xa0 w", "\xc4\xa0w o"};
    for (int i = 0; i < 6; i++) m->merges[i] = merges[i];
    m->n_merges = 6;
    m->eos = MINI_IM_END;
}

/* Serialise m; *img must be freed. */
static inline bool mini_image(const mini *m, void **img, size_t *len) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return false;
    bool ok = true;
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    if (m->model) {
        v.v.s.data = m->model;
        v.v.s.len = strlen(m->model);
        ok &= tmem_gguf_writer_set(w, "tokenizer.ggml.model", &v) == TMEM_OK;
    }
    if (m->pre) {
        v.v.s.data = m->pre;
        v.v.s.len = strlen(m->pre);
        ok &= tmem_gguf_writer_set(w, "tokenizer.ggml.pre", &v) == TMEM_OK;
    }
    if (!m->omit_tokens) {
        if (m->tokens_wrong_type)
            ok &= tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_INT32, m->types, m->n_tokens) == TMEM_OK;
        else
            ok &= tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, m->tokens, m->n_tokens) == TMEM_OK;
    }
    if (!m->omit_types) {
        if (m->types_wrong_type) {
            uint8_t t8[MINI_N + 8];
            for (uint32_t i = 0; i < m->n_types; i++) t8[i] = (uint8_t)m->types[i];
            ok &= tmem_gguf_writer_set_array(w, "tokenizer.ggml.token_type", TMEM_GGUF_UINT8, t8, m->n_types) == TMEM_OK;
        } else {
            ok &= tmem_gguf_writer_set_array(w, "tokenizer.ggml.token_type", TMEM_GGUF_INT32, m->types, m->n_types) == TMEM_OK;
        }
    }
    if (!m->omit_merges) {
        if (m->merges_scalar) {
            v.v.s.data = "h e";
            v.v.s.len = 3;
            ok &= tmem_gguf_writer_set(w, "tokenizer.ggml.merges", &v) == TMEM_OK;
        } else {
            ok &= tmem_gguf_writer_set_array(w, "tokenizer.ggml.merges", TMEM_GGUF_STRING, m->merges, m->n_merges) == TMEM_OK;
        }
    }
    if (m->eos >= 0 || m->eos_as_string) {
        tmem_gguf_value id = {.type = m->eos_as_string ? TMEM_GGUF_STRING
                              : m->eos > (int64_t)UINT32_MAX ? TMEM_GGUF_UINT64 : TMEM_GGUF_UINT32};
        if (m->eos_as_string) {
            id.v.s.data = "<|im_end|>";
            id.v.s.len = 10;
        } else {
            id.v.u = (uint64_t)m->eos;
        }
        ok &= tmem_gguf_writer_set(w, "tokenizer.ggml.eos_token_id", &id) == TMEM_OK;
    }
    size_t need = 0;
    ok &= tmem_gguf_writer_write(w, NULL, 0, &need) == TMEM_E_FULL;
    *img = ok ? malloc(need) : NULL;
    ok = ok && *img && tmem_gguf_writer_write(w, *img, need, len) == TMEM_OK;
    tmem_gguf_writer_destroy(w);
    return ok;
}

/* Load m; returns the status, *tok on success (with *g to close after), err filled. */
static inline tmem_status mini_load(tmem_context *ctx, const mini *m, void **img, tmem_gguf **g, tmrt_tokenizer **tok,
                                    tmrt_error *err) {
    size_t len;
    *tok = NULL;
    *g = NULL;
    if (!mini_image(m, img, &len)) return TMEM_E_IO;
    tmem_gguf_error ge;
    tmem_status st = tmem_gguf_open_memory(ctx, *img, len, g, &ge);
    if (st != TMEM_OK) return st;
    return tmrt_tokenizer_load(ctx, *g, tok, err);
}

#endif /* TOK_TEST_UTIL_H */
