/* tok_synth.c: a deterministic synthetic byte-level BPE for generated
 * models (tmem gen), so `-p TEXT` runs on random weights.
 *
 * Tokens: the 256 byte tokens (id = byte), then one token per merge, then
 * the Qwen specials. Merges: first learned from a fixed seed text (English
 * and C, split by the Qwen3.5 pre-tokenizer; most frequent pair first, ties
 * to the lower ids, until every seed word of at most 15 bytes is one token),
 * so common words encode to few tokens; then drawn by a
 * fixed-seed splitmix64: a random existing token (at most 15 bytes) joined
 * with a random letter, digit or space byte, skipping results that exist.
 * Only integer arithmetic: the same bytes on every machine. */
#include <stdlib.h>
#include <string.h>
#include "tok/tok_internal.h"

static const char seed_text[] =
    "The quick brown fox jumps over the lazy dog. This is a synthetic tokenizer for generated models: "
    "the weights are random, so the text they produce is noise, but the memory and the speed are real. "
    "We measure what the runtime does with every byte, and we report the figures we reach, met or not. "
    "Hello, world! How are you today? I am fine, thank you. There is a model in the file and a tokenizer "
    "in its metadata; the tokens of a prompt go in and the logits of the last position come out.\n"
    "int main(int argc, char **argv) {\n    for (int i = 0; i < argc; i++) printf(\"%s\\n\", argv[i]);\n"
    "    return 0;\n}\n"
    "static const char *name = \"typedmem\"; if (size > capacity) return TMEM_E_FULL; else return TMEM_OK;\n"
    "0123456789 2024 2025 2026 100 1000 3.14159 42\n";

static const struct { const char *text; tmrt_token_type type; } specials[] = {
    {"<|endoftext|>", TMRT_TOKEN_CONTROL},       {"<|im_start|>", TMRT_TOKEN_CONTROL},
    {"<|im_end|>", TMRT_TOKEN_CONTROL},          {"<|object_ref_start|>", TMRT_TOKEN_CONTROL},
    {"<|object_ref_end|>", TMRT_TOKEN_CONTROL},  {"<|box_start|>", TMRT_TOKEN_CONTROL},
    {"<|box_end|>", TMRT_TOKEN_CONTROL},         {"<|quad_start|>", TMRT_TOKEN_CONTROL},
    {"<|quad_end|>", TMRT_TOKEN_CONTROL},        {"<|vision_start|>", TMRT_TOKEN_CONTROL},
    {"<|vision_end|>", TMRT_TOKEN_CONTROL},      {"<|vision_pad|>", TMRT_TOKEN_CONTROL},
    {"<|image_pad|>", TMRT_TOKEN_CONTROL},       {"<|video_pad|>", TMRT_TOKEN_CONTROL},
    {"<tool_call>", TMRT_TOKEN_USER_DEFINED},    {"</tool_call>", TMRT_TOKEN_USER_DEFINED},
    {"<|fim_prefix|>", TMRT_TOKEN_USER_DEFINED}, {"<|fim_middle|>", TMRT_TOKEN_USER_DEFINED},
    {"<|fim_suffix|>", TMRT_TOKEN_USER_DEFINED}, {"<|fim_pad|>", TMRT_TOKEN_USER_DEFINED},
    {"<|repo_name|>", TMRT_TOKEN_USER_DEFINED},  {"<|file_sep|>", TMRT_TOKEN_USER_DEFINED},
    {"<tool_response>", TMRT_TOKEN_USER_DEFINED}, {"</tool_response>", TMRT_TOKEN_USER_DEFINED},
    {"<think>", TMRT_TOKEN_USER_DEFINED},        {"</think>", TMRT_TOKEN_USER_DEFINED},
};
#define N_SPECIALS (sizeof specials / sizeof specials[0])
#define MAX_SYNTH_BYTES 15

typedef struct synth {
    uint32_t n;            /* tokens so far */
    char **text;           /* byte-level text of each token, NUL-terminated */
    uint8_t *len;          /* decoded bytes of each normal token */
    char **merge;          /* "LEFT RIGHT" */
    uint32_t n_merges;
    uint32_t *set;         /* string set: token id + 1 */
    uint32_t set_cap;
    uint64_t rng;
} synth;

static uint32_t fnv(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

static uint32_t *set_slot(synth *S, const char *s) {
    uint32_t b = tok_bucket(fnv(s), S->set_cap);
    while (S->set[b] && strcmp(S->text[S->set[b] - 1], s))
        if (++b == S->set_cap) b = 0;
    return &S->set[b];
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Add the merge l + r as a new token; false if the result exists (or no memory: S->n unchanged). */
static bool add_merge(synth *S, uint32_t l, uint32_t r, bool *oom) {
    size_t nl = strlen(S->text[l]), nr = strlen(S->text[r]);
    char *t = malloc(nl + nr + 1), *m = malloc(nl + nr + 2);
    if (!t || !m) {
        free(t);
        free(m);
        *oom = true;
        return false;
    }
    memcpy(t, S->text[l], nl);
    memcpy(t + nl, S->text[r], nr + 1);
    uint32_t *slot = set_slot(S, t);
    if (*slot) {
        free(t);
        free(m);
        return false;
    }
    memcpy(m, S->text[l], nl);
    m[nl] = ' ';
    memcpy(m + nl + 1, S->text[r], nr + 1);
    S->text[S->n] = t;
    S->len[S->n] = (uint8_t)(S->len[l] + S->len[r]);
    S->merge[S->n_merges++] = m;
    *slot = ++S->n;
    return true;
}

/* One round of seed learning: merge the most frequent adjacent pair of the
 * seed's pre-tokens (kept as id sequences in sym, words split by -1). */
static bool learn_one(synth *S, int32_t *sym, size_t n_sym, bool *oom) {
    enum { CAP = 8192 };
    static const uint32_t none = UINT32_MAX;
    uint32_t keys_l[CAP], keys_r[CAP], counts[CAP];
    for (int i = 0; i < CAP; i++) keys_l[i] = none;
    uint32_t best_l = none, best_r = none, best_c = 0;
    for (size_t i = 0; i + 1 < n_sym; i++) {
        if (sym[i] < 0 || sym[i + 1] < 0) continue;
        uint32_t l = (uint32_t)sym[i], r = (uint32_t)sym[i + 1];
        if (S->len[l] + S->len[r] > MAX_SYNTH_BYTES) continue;
        uint32_t b = tok_bucket(tok_pair_hash(l, r), CAP);
        while (keys_l[b] != none && (keys_l[b] != l || keys_r[b] != r)) b = (b + 1) % CAP;
        if (keys_l[b] == none) {
            keys_l[b] = l;
            keys_r[b] = r;
            counts[b] = 0;
        }
        uint32_t c = ++counts[b];
        if (c > best_c || (c == best_c && best_l != none && (l < best_l || (l == best_l && r < best_r)))) {
            best_c = c;
            best_l = l;
            best_r = r;
        }
    }
    if (best_l == none || !add_merge(S, best_l, best_r, oom)) return false;
    uint32_t id = S->n - 1;
    size_t o = 0;
    for (size_t i = 0; i < n_sym; i++) {
        if (i + 1 < n_sym && sym[i] == (int32_t)best_l && sym[i + 1] == (int32_t)best_r) {
            sym[o++] = (int32_t)id;
            i++;
        } else {
            sym[o++] = sym[i];
        }
    }
    /* keep the array length: pad with word breaks */
    while (o < n_sym) sym[o++] = -1;
    return true;
}

static tmem_status build(synth *S, uint32_t n_merges) {
    bool oom = false;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t cp = tok_byte_to_cp((uint8_t)b);
        char *t = malloc(3);
        if (!t) return TMEM_E_NO_MEMORY;
        if (cp < 0x80) {
            t[0] = (char)cp;
            t[1] = 0;
        } else {
            t[0] = (char)(0xC0 | cp >> 6);
            t[1] = (char)(0x80 | (cp & 0x3F));
            t[2] = 0;
        }
        S->text[b] = t;
        S->len[b] = 1;
        *set_slot(S, t) = ++S->n;
    }
    /* seed: one symbol per byte, -1 between pre-tokens */
    const uint8_t *s = (const uint8_t *)seed_text;
    size_t len = sizeof seed_text - 1, n_sym = 0;
    int32_t sym[2 * sizeof seed_text];
    for (size_t pos = 0; pos < len;) {
        size_t end = tmrt__pretok_next(TMRT_PRETOK_QWEN35, s, len, pos);
        for (; pos < end; pos++) sym[n_sym++] = s[pos];
        sym[n_sym++] = -1;
    }
    while (S->n_merges < n_merges && learn_one(S, sym, n_sym, &oom)) {}
    if (oom) return TMEM_E_NO_MEMORY;
    static const char alphabet[] = "etaoinshrdlucmfwypvbgkjqxz etaoinsh0123456789_";
    while (S->n_merges < n_merges) {
        uint64_t x = splitmix(&S->rng);
        uint32_t l = (uint32_t)(x % S->n);
        uint8_t c = (uint8_t)alphabet[(x >> 40) % (sizeof alphabet - 1)];
        uint32_t r = c; /* byte token id = byte */
        if (S->len[l] + 1 > MAX_SYNTH_BYTES) continue;
        if (!add_merge(S, (x >> 63) ? r : l, (x >> 63) ? l : r, &oom) && oom) return TMEM_E_NO_MEMORY;
    }
    return TMEM_OK;
}

static tmem_status write_keys(tmem_gguf_writer *w, synth *S, uint32_t n_vocab) {
    const char **tokens = malloc(sizeof *tokens * n_vocab);
    int32_t *types = malloc(sizeof *types * n_vocab);
    tmem_status st = TMEM_E_NO_MEMORY;
    if (!tokens || !types) goto out;
    for (uint32_t i = 0; i < S->n; i++) {
        tokens[i] = S->text[i];
        types[i] = TMRT_TOKEN_NORMAL;
    }
    for (uint32_t i = 0; i < N_SPECIALS; i++) {
        tokens[S->n + i] = specials[i].text;
        types[S->n + i] = specials[i].type;
    }
    uint32_t first_special = S->n;
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "gpt2";
    v.v.s.len = 4;
    if ((st = tmem_gguf_writer_set(w, "tokenizer.ggml.model", &v)) != TMEM_OK) goto out;
    v.v.s.data = "qwen35";
    v.v.s.len = 6;
    if ((st = tmem_gguf_writer_set(w, "tokenizer.ggml.pre", &v)) != TMEM_OK) goto out;
    if ((st = tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, tokens, n_vocab)) != TMEM_OK)
        goto out;
    if ((st = tmem_gguf_writer_set_array(w, "tokenizer.ggml.token_type", TMEM_GGUF_INT32, types, n_vocab)) != TMEM_OK)
        goto out;
    if ((st = tmem_gguf_writer_set_array(w, "tokenizer.ggml.merges", TMEM_GGUF_STRING, (const char **)S->merge,
                                         S->n_merges)) != TMEM_OK)
        goto out;
    tmem_gguf_value id = {.type = TMEM_GGUF_UINT32};
    id.v.u = first_special; /* <|endoftext|> */
    if ((st = tmem_gguf_writer_set(w, "tokenizer.ggml.bos_token_id", &id)) != TMEM_OK) goto out;
    if ((st = tmem_gguf_writer_set(w, "tokenizer.ggml.padding_token_id", &id)) != TMEM_OK) goto out;
    id.v.u = first_special + 2; /* <|im_end|> */
    if ((st = tmem_gguf_writer_set(w, "tokenizer.ggml.eos_token_id", &id)) != TMEM_OK) goto out;
    tmem_gguf_value b = {.type = TMEM_GGUF_BOOL};
    b.v.b = false;
    st = tmem_gguf_writer_set(w, "tokenizer.ggml.add_bos_token", &b);
out:
    free(tokens);
    free(types);
    return st;
}

tmem_status tmrt_tokenizer_synth_write(tmem_gguf_writer *w, uint32_t n_vocab) {
    if (!w || n_vocab < 256 + N_SPECIALS + 1 || n_vocab >= TOK_MAX_VOCAB) return TMEM_E_INVALID_ARG;
    synth S;
    memset(&S, 0, sizeof S);
    S.rng = 0x74797065646d656dull; /* "typedmem" */
    S.set_cap = n_vocab * 2;
    S.text = calloc(n_vocab, sizeof *S.text);
    S.len = calloc(n_vocab, 1);
    S.merge = calloc(n_vocab, sizeof *S.merge);
    S.set = calloc(S.set_cap, sizeof *S.set);
    tmem_status st = TMEM_E_NO_MEMORY;
    if (S.text && S.len && S.merge && S.set) {
        uint32_t n_merges = n_vocab - 256 - (uint32_t)N_SPECIALS;
        st = build(&S, n_merges);
        if (st == TMEM_OK) st = write_keys(w, &S, n_vocab);
    }
    for (uint32_t i = 0; S.text && i < S.n; i++) free(S.text[i]);
    for (uint32_t i = 0; S.merge && i < S.n_merges; i++) free(S.merge[i]);
    free(S.text);
    free(S.len);
    free(S.merge);
    free(S.set);
    return st;
}
