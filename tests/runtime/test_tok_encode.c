/* Tokenizer behaviour: BPE merges, specials, pre-tokenizer rules, decode
 * and the UTF-8 stream, the chat template, the synthetic vocabulary, and
 * the memory of a Qwen3.5-sized (248,320-token) vocabulary. */
#include "tok_test_util.h"
#include "tok/tok_internal.h"
#include "tok/unicode.h"

static tmem_context *ctx;

typedef struct loaded {
    void *img;
    tmem_gguf *g;
    tmrt_tokenizer *tok;
} loaded;

static bool load_mini(loaded *l, const char *pre) {
    mini m;
    mini_init(&m);
    m.pre = pre;
    tmrt_error err = {""};
    tmem_status st = mini_load(ctx, &m, &l->img, &l->g, &l->tok, &err);
    if (st != TMEM_OK) printf("load: %s\n", err.message);
    return st == TMEM_OK;
}

static void unload(loaded *l) {
    tmrt_tokenizer_destroy(l->tok);
    tmem_gguf_close(l->g);
    free(l->img);
}

static size_t enc(const tmrt_tokenizer *t, const char *s, uint32_t flags, int32_t *ids, size_t cap) {
    size_t n = 0;
    tmem_status st = tmrt_tokenizer_encode(t, s, strlen(s), flags, ids, cap, &n);
    CHECK_MSG(st == TMEM_OK, "encode '%s': %s", s, tmem_status_name(st));
    return n;
}

static void test_bpe_and_specials(void) {
    loaded l;
    REQUIRE(load_mini(&l, "qwen2"));
    int32_t ids[64];
    size_t n = enc(l.tok, "hello", 0, ids, 64);
    CHECK(n == 1 && ids[0] == MINI_HELLO);
    n = enc(l.tok, "hello world", 0, ids, 64);
    /* "hello" " world": Ġw + o -> Ġwo, then r l d bytes */
    CHECK(n == 5 && ids[0] == MINI_HELLO && ids[1] == MINI_GWO && ids[2] == 'r' && ids[3] == 'l' && ids[4] == 'd');
    n = enc(l.tok, "hellhe", 0, ids, 64);
    CHECK(n == 2 && ids[0] == MINI_HELL && ids[1] == MINI_HE);
    /* control tokens only with PARSE_SPECIAL; user-defined always */
    n = enc(l.tok, "<|im_start|>hello<think>", 0, ids, 64);
    CHECK(n > 3 && ids[n - 1] == MINI_THINK && ids[0] == '<');
    n = enc(l.tok, "<|im_start|>hello<think>", TMRT_TOKENIZE_PARSE_SPECIAL, ids, 64);
    CHECK(n == 3 && ids[0] == MINI_IM_START && ids[1] == MINI_HELLO && ids[2] == MINI_THINK);
    /* cap too small: the count needed, the first cap ids */
    int32_t few[2];
    CHECK_ST(tmrt_tokenizer_encode(l.tok, "hello world", 11, 0, few, 2, &n), TMEM_E_FULL);
    CHECK(n == 5 && few[0] == MINI_HELLO && few[1] == MINI_GWO);
    CHECK_ST(tmrt_tokenizer_encode(l.tok, "hello", 5, 0, NULL, 0, &n), TMEM_E_FULL);
    CHECK(n == 1);
    CHECK_OK(tmrt_tokenizer_encode(l.tok, NULL, 0, 0, NULL, 0, &n));
    CHECK(n == 0);
    CHECK_ST(tmrt_tokenizer_encode(l.tok, "x", 1, 0x100, ids, 64, &n), TMEM_E_INVALID_ARG);
    CHECK_ST(tmrt_tokenizer_encode(NULL, "x", 1, 0, ids, 64, &n), TMEM_E_INVALID_ARG);
    /* specials lookup, types, end of generation */
    int32_t id = -5;
    CHECK_OK(tmrt_tokenizer_special(l.tok, "<|im_end|>", &id));
    CHECK(id == MINI_IM_END);
    CHECK_ST(tmrt_tokenizer_special(l.tok, "<|vision_start|>", &id), TMEM_E_NOT_FOUND);
    CHECK(id == MINI_IM_END);
    CHECK(tmrt_tokenizer_token_type(l.tok, MINI_THINK) == TMRT_TOKEN_USER_DEFINED);
    CHECK(tmrt_tokenizer_token_type(l.tok, MINI_N) == TMRT_TOKEN_UNDEFINED);
    CHECK(tmrt_tokenizer_is_eog(l.tok, MINI_IM_END) && tmrt_tokenizer_is_eog(l.tok, MINI_EOT));
    CHECK(!tmrt_tokenizer_is_eog(l.tok, MINI_IM_START));
    int32_t eog[4];
    CHECK_OK(tmrt_tokenizer_eog_ids(l.tok, eog, 4, &n));
    CHECK(n == 2 && eog[0] == MINI_IM_END && eog[1] == MINI_EOT);
    tmrt_tokenizer_info in;
    CHECK_OK(tmrt_tokenizer_get_info(l.tok, &in));
    CHECK(in.n_vocab == MINI_N && in.n_merges == 6 && in.n_specials == 4 && in.eos == MINI_IM_END && in.bos == -1);
    CHECK(in.pretok == TMRT_PRETOK_QWEN2 && in.max_token_bytes == 13 && !in.add_bos);
    unload(&l);
}

static void test_decode_and_stream(void) {
    loaded l;
    REQUIRE(load_mini(&l, "qwen2"));
    char buf[64];
    size_t n;
    CHECK_OK(tmrt_tokenizer_decode(l.tok, MINI_GWO, buf, sizeof buf, &n));
    CHECK(n == 3 && !memcmp(buf, " wo", 3));
    CHECK_OK(tmrt_tokenizer_decode(l.tok, MINI_IM_END, buf, sizeof buf, &n));
    CHECK(n == 10 && !memcmp(buf, "<|im_end|>", 10));
    CHECK_OK(tmrt_tokenizer_decode(l.tok, 0x0A, buf, sizeof buf, &n));
    CHECK(n == 1 && buf[0] == '\n');
    CHECK_ST(tmrt_tokenizer_decode(l.tok, MINI_HELLO, buf, 2, &n), TMEM_E_FULL);
    CHECK(n == 5 && !memcmp(buf, "he", 2));
    CHECK_ST(tmrt_tokenizer_decode(l.tok, -1, buf, sizeof buf, &n), TMEM_E_NOT_FOUND);
    CHECK_ST(tmrt_tokenizer_decode(l.tok, MINI_N, buf, sizeof buf, &n), TMEM_E_NOT_FOUND);
    /* "中" is three byte tokens: the stream holds them until the character is whole */
    const char *text = "a\xe4\xb8\xad\xff!";
    int32_t ids[16];
    size_t k = enc(l.tok, text, 0, ids, 16);
    CHECK(k == 6);
    tmrt_utf8_stream s = {0};
    char out[64];
    size_t o = 0;
    size_t emitted[6];
    for (size_t i = 0; i < k; i++) {
        CHECK_OK(tmrt_tokenizer_decode_stream(l.tok, &s, ids[i], out + o, sizeof out - o, &n));
        emitted[i] = n;
        o += n;
    }
    CHECK(emitted[0] == 1 && emitted[1] == 0 && emitted[2] == 0 && emitted[3] == 3);
    CHECK(emitted[4] == 1 && emitted[5] == 1); /* 0xFF can never complete: passes through */
    CHECK_OK(tmrt_utf8_stream_flush(&s, out + o, sizeof out - o, &n));
    o += n;
    CHECK(o == strlen(text) && !memcmp(out, text, o));
    /* an unfinished sequence at the end is flushed as raw bytes */
    CHECK_OK(tmrt_tokenizer_decode_stream(l.tok, &s, 0xE4, out, sizeof out, &n));
    CHECK(n == 0 && s.n_held == 1);
    CHECK_ST(tmrt_utf8_stream_flush(&s, out, 0, &n), TMEM_E_FULL);
    CHECK_OK(tmrt_utf8_stream_flush(&s, out, sizeof out, &n));
    CHECK(n == 1 && (uint8_t)out[0] == 0xE4 && s.n_held == 0);
    unload(&l);
}

static void test_chat(void) {
    loaded l;
    REQUIRE(load_mini(&l, "qwen2"));
    int32_t ids[128], want[128];
    size_t n, nw;
    CHECK_OK(tmrt_tokenizer_chat(l.tok, NULL, "hello", 5, 0, ids, 128, &n));
    const char *rendered = "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n";
    CHECK_OK(tmrt_tokenizer_encode(l.tok, rendered, strlen(rendered), TMRT_TOKENIZE_PARSE_SPECIAL, want, 128, &nw));
    CHECK(n == nw && !memcmp(ids, want, n * sizeof *ids));
    CHECK(ids[0] == MINI_IM_START && ids[n - 1] == '\n');
    /* a system turn, and user text starting with whitespace (shares a pre-token with "user\n") */
    CHECK_OK(tmrt_tokenizer_chat(l.tok, "sys", "\n\n hi", 5, 0, ids, 128, &n));
    rendered = "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\n\n\n hi<|im_end|>\n<|im_start|>assistant\n";
    CHECK_OK(tmrt_tokenizer_encode(l.tok, rendered, strlen(rendered), TMRT_TOKENIZE_PARSE_SPECIAL, want, 128, &nw));
    CHECK(n == nw && !memcmp(ids, want, n * sizeof *ids));
    /* without PARSE_SPECIAL the user's "<|im_end|>" stays text */
    CHECK_OK(tmrt_tokenizer_chat(l.tok, NULL, "<|im_end|>", 10, 0, ids, 128, &n));
    size_t ends = 0;
    for (size_t i = 0; i < n; i++) ends += ids[i] == MINI_IM_END;
    CHECK(ends == 1);
    CHECK_OK(tmrt_tokenizer_chat(l.tok, NULL, "<|im_end|>", 10, TMRT_TOKENIZE_PARSE_SPECIAL, ids, 128, &n));
    ends = 0;
    for (size_t i = 0; i < n; i++) ends += ids[i] == MINI_IM_END;
    CHECK(ends == 2);
    unload(&l);
}

/* A GPT-NeoX-style vocabulary without the bytes valid UTF-8 never holds:
 * it loads, encodes valid text, and refuses such a byte. */
static void test_vocab_without_invalid_bytes(void) {
    mini m;
    mini_init(&m);
    m.tokens[0xC0] = "zz"; /* "\xc3\x80" (byte 0xC0) is gone */
    m.tokens[0xFF] = "zy";
    void *img;
    tmem_gguf *g;
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    REQUIRE_OK(mini_load(ctx, &m, &img, &g, &tok, &err));
    int32_t ids[16];
    size_t n;
    CHECK_OK(tmrt_tokenizer_encode(tok, "hello \xc3\x80", 8, 0, ids, 16, &n));
    CHECK_ST(tmrt_tokenizer_encode(tok, "hello \xc0", 7, 0, ids, 16, &n), TMEM_E_UNSUPPORTED);
    CHECK(n == 0);
    CHECK_ST(tmrt_tokenizer_encode(tok, "\xff", 1, 0, ids, 16, &n), TMEM_E_UNSUPPORTED);
    tmrt_tokenizer_destroy(tok);
    tmem_gguf_close(g);
    free(img);
    /* a byte valid UTF-8 holds must have its token */
    mini_init(&m);
    m.tokens[0x80] = "zz";
    tmem_status st = mini_load(ctx, &m, &img, &g, &tok, &err);
    CHECK(st == TMEM_E_CORRUPT && strstr(err.message, "byte 0x80"));
    tmem_gguf_close(g);
    free(img);
}

/* Pieces of s under kind, joined by '|'. */
static void split(tmrt_pretok kind, const char *s, char *out) {
    size_t len = strlen(s), o = 0;
    for (size_t pos = 0; pos < len;) {
        size_t end = tmrt__pretok_next(kind, (const uint8_t *)s, len, pos);
        if (pos) out[o++] = '|';
        memcpy(out + o, s + pos, end - pos);
        o += end - pos;
        pos = end;
    }
    out[o] = 0;
}

static void test_pretokenizer_rules(void) {
    static const struct { tmrt_pretok k; const char *in, *want; } cases[] = {
        {TMRT_PRETOK_QWEN2, "Hello world", "Hello| world"},
        {TMRT_PRETOK_QWEN2, "I'm WE'LL 'sam", "I|'m| WE|'LL| '|sam"},
        {TMRT_PRETOK_QWEN2, "(hello) 12345", "(hello|)| |1|2|3|4|5"},
        {TMRT_PRETOK_LLAMA3, "12345 x", "123|45| x"},
        {TMRT_PRETOK_QWEN2, "a  b   ", "a| | b|   "},
        {TMRT_PRETOK_QWEN2, "x \n\n  y", "x| \n\n| | y"},
        {TMRT_PRETOK_QWEN2, "!!\n\nz", "!!\n\n|z"},
        {TMRT_PRETOK_QWEN2, " (x", " (|x"},
        {TMRT_PRETOK_QWEN2, "\thi", "\thi"},
        {TMRT_PRETOK_QWEN2, "\xe4\xb8\xad\xe6\x96\x87\xef\xbc\x8c", "\xe4\xb8\xad\xe6\x96\x87|\xef\xbc\x8c"},
        /* a combining mark: punctuation for Qwen2, part of the word for Qwen3.5 */
        {TMRT_PRETOK_QWEN2, "a\xcc\x81" "b", "a|\xcc\x81" "b"},
        {TMRT_PRETOK_QWEN35, "a\xcc\x81" "b", "a\xcc\x81" "b"},
        /* invalid bytes are one OTHER character each */
        {TMRT_PRETOK_QWEN2, "a\xff" "b\xc3", "a|\xff" "b|\xc3"},
        /* GPT-2: case-sensitive contractions, digit runs, no [\r\n]* tail */
        {TMRT_PRETOK_GPT2, "I'M it's 12345 !!\n\nx  y", "I|'|M| it|'s| 12345| !!|\n|\n|x| | y"},
    };
    char out[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        split(cases[i].k, cases[i].in, out);
        CHECK_MSG(!strcmp(out, cases[i].want), "case %zu: got '%s' want '%s'", i, out, cases[i].want);
    }
    /* the classes at the places JS's \s and Unicode White_Space disagree */
    CHECK(tmrt__ucat_of(0x85) == TMRT_UCAT_SPACE);
    CHECK(tmrt__ucat_of(0xFEFF) == TMRT_UCAT_OTHER);
    CHECK(tmrt__ucat_of(0x3000) == TMRT_UCAT_SPACE && tmrt__ucat_of(0x4E2D) == TMRT_UCAT_LETTER);
    CHECK(tmrt__ucat_of(0x0663) == TMRT_UCAT_NUMBER && tmrt__ucat_of(0x0301) == TMRT_UCAT_MARK);
    CHECK(tmrt__ucat_of(0x10FFFF) == TMRT_UCAT_OTHER && tmrt__ucat_of(0x110000) == TMRT_UCAT_OTHER);
}

static bool synth_image(uint32_t n_vocab, void **img, size_t *len) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return false;
    size_t need = 0;
    bool ok = tmrt_tokenizer_synth_write(w, n_vocab) == TMEM_OK && tmem_gguf_writer_write(w, NULL, 0, &need) == TMEM_E_FULL;
    *img = ok ? malloc(need) : NULL;
    ok = ok && *img && tmem_gguf_writer_write(w, *img, need, len) == TMEM_OK;
    tmem_gguf_writer_destroy(w);
    return ok;
}

static void test_synth(void) {
    void *a, *b;
    size_t la, lb;
    REQUIRE(synth_image(4096, &a, &la) && synth_image(4096, &b, &lb));
    CHECK(la == lb && !memcmp(a, b, la)); /* deterministic */
    tmem_gguf *g;
    tmem_gguf_error ge;
    REQUIRE_OK(tmem_gguf_open_memory(ctx, a, la, &g, &ge));
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    REQUIRE_OK(tmrt_tokenizer_load(ctx, g, &tok, &err));
    tmrt_tokenizer_info in;
    CHECK_OK(tmrt_tokenizer_get_info(tok, &in));
    CHECK(in.n_vocab == 4096 && in.n_merges == 4096 - 256 - 26 && in.n_specials == 26);
    CHECK(in.pretok == TMRT_PRETOK_QWEN35);
    static const char *const names[] = {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_start|>",
                                        "<|vision_end|>", "<|image_pad|>"};
    for (int i = 0; i < 6; i++) {
        int32_t id;
        CHECK_OK(tmrt_tokenizer_special(tok, names[i], &id));
    }
    int32_t im_end;
    CHECK_OK(tmrt_tokenizer_special(tok, "<|im_end|>", &im_end));
    CHECK(in.eos == im_end && tmrt_tokenizer_is_eog(tok, im_end));
    /* common words take fewer tokens than bytes (the seed merges work) */
    int32_t ids[256];
    size_t n = enc(tok, "The quick brown fox jumps over the lazy dog.", 0, ids, 256);
    CHECK_MSG(n < 20, "%zu tokens", n);
    /* random bytes round-trip */
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(7));
    for (int iter = 0; iter < 300; iter++) {
        uint8_t s[200];
        size_t len = (size_t)tmem_rng_range(&r, 1, sizeof s);
        for (size_t i = 0; i < len; i++) {
            uint64_t x = tmem_rng_next(&r);
            s[i] = (x & 3) ? (uint8_t)"abcdefghij klmnop\n\t.,0123<|>"[x % 29] : (uint8_t)(x >> 8);
        }
        size_t k;
        int32_t out[256];
        CHECK_OK(tmrt_tokenizer_encode(tok, (const char *)s, len, TMRT_TOKENIZE_PARSE_SPECIAL, out, 256, &k));
        uint8_t back[400];
        size_t o = 0;
        for (size_t i = 0; i < k; i++) {
            size_t m;
            CHECK_OK(tmrt_tokenizer_decode(tok, out[i], (char *)back + o, sizeof back - o, &m));
            o += m;
        }
        CHECK(o == len && !memcmp(back, s, len));
    }
    CHECK_ST(tmrt_tokenizer_synth_write(NULL, 4096), TMEM_E_INVALID_ARG);
    tmrt_tokenizer_destroy(tok);
    tmem_gguf_close(g);
    free(a);
    free(b);
}

/* A long piece (no pre-token boundary) goes through the scratch heap. */
static void test_long_piece(void) {
    loaded l;
    REQUIRE(load_mini(&l, "qwen2"));
    size_t len = 100000;
    char *s = malloc(len);
    REQUIRE(s);
    for (size_t i = 0; i < len; i++) s[i] = "hel"[i % 3 == 2 ? 2 : i % 3];
    int32_t *ids = malloc(len * sizeof *ids);
    size_t n;
    CHECK_OK(tmrt_tokenizer_encode(l.tok, s, len, 0, ids, len, &n));
    size_t o = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        char piece[16];
        size_t m;
        ok &= tmrt_tokenizer_decode(l.tok, ids[i], piece, sizeof piece, &m) == TMEM_OK && !memcmp(piece, s + o, m);
        o += m;
    }
    CHECK(ok && o == len);
    CHECK(n < len); /* "he" merges happened */
    free(ids);
    free(s);
    /* past the scratch heap (16 MiB: 36 bytes per byte) a piece is refused, not crashed on */
    size_t big = 1u << 20;
    char *word = malloc(big);
    int32_t *many = malloc(big * sizeof *many);
    REQUIRE(word && many);
    memset(word, 'h', big);
    tmem_status st = tmrt_tokenizer_encode(l.tok, word, big, 0, many, big, &n);
    CHECK_MSG(st == TMEM_E_FULL || st == TMEM_E_NO_MEMORY || st == TMEM_E_BUDGET, "%s", tmem_status_name(st));
    CHECK(n == 0);
    unload(&l);
    /* a larger scratch heap takes it */
    mini m;
    mini_init(&m);
    size_t img_len;
    REQUIRE(mini_image(&m, &l.img, &img_len));
    tmem_gguf_error ge;
    REQUIRE_OK(tmem_gguf_open_memory(ctx, l.img, img_len, &l.g, &ge));
    tmrt_tokenizer_desc d = {.scratch_bytes = 64ull << 20};
    tmrt_error err = {""};
    REQUIRE_OK(tmrt_tokenizer_load_ex(ctx, l.g, &d, &l.tok, &err));
    CHECK_OK(tmrt_tokenizer_encode(l.tok, word, big, 0, many, big, &n));
    CHECK(n == big); /* no "h h" merge: one token per byte */
    free(word);
    free(many);
    unload(&l);
}

/* Qwen3.5's vocabulary size with the synthetic tokenizer: the tables stay
 * under the 8 MiB target (a size, measured by the library's accounting). */
static void test_qwen35_sized_memory(void) {
    void *img;
    size_t len;
    REQUIRE(synth_image(248320, &img, &len));
    tmem_gguf *g;
    tmem_gguf_error ge;
    REQUIRE_OK(tmem_gguf_open_memory(ctx, img, len, &g, &ge));
    uint64_t d0, c0, d1, c1;
    CHECK_OK(tmem_context_accounted(ctx, &d0, &c0));
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    REQUIRE_OK(tmrt_tokenizer_load(ctx, g, &tok, &err));
    CHECK_OK(tmem_context_accounted(ctx, &d1, &c1));
    tmrt_tokenizer_info in;
    CHECK_OK(tmrt_tokenizer_get_info(tok, &in));
    printf("   248,320 tokens: %llu dirty bytes accounted, tables %llu, load peak %llu, strings in place %llu\n",
           (unsigned long long)(d1 - d0), (unsigned long long)in.table_bytes, (unsigned long long)in.load_peak_bytes,
           (unsigned long long)in.string_bytes);
    CHECK(d1 - d0 <= 8ull << 20 && in.load_peak_bytes <= 8ull << 20);
    /* the prediction a memory plan can use before loading */
    uint64_t predicted = tmrt_tokenizer_table_bytes(in.n_vocab, in.n_merges, in.n_specials);
    CHECK_MSG(predicted == in.table_bytes, "predicted %llu, loaded %llu", (unsigned long long)predicted,
              (unsigned long long)in.table_bytes);
    CHECK(d1 - d0 >= predicted && d1 - d0 <= predicted + (64u << 10) + 4096);
    CHECK(tmrt_tokenizer_table_bytes(0, 1, 1) == 0 && tmrt_tokenizer_table_bytes(1u << 21, 1, 1) == 0);
    CHECK(in.string_bytes > 3ull << 20); /* the strings were not copied */
    tmem_role_stats rs;
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_OUTPUT_TOKENS, &rs));
    CHECK(rs.in_use.current >= in.table_bytes);
    tmrt_tokenizer_destroy(tok);
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_OUTPUT_TOKENS, &rs));
    CHECK(rs.in_use.current == 0);
    tmem_gguf_close(g);
    free(img);
}

/* Issue 21: the scratch sized for the text (TMRT_TOKENIZER_SCRATCH_EXACT,
 * tmrt_tokenizer_scratch_bytes) takes the worst text of that length, a
 * single piece, plain and in a chat turn; none at all takes short pieces and
 * refuses a long one with TMEM_E_FULL; tmrt_tokenizer_memory_bytes is what
 * the loaded tokenizer commits: the tables exactly, the scratch at most. */
static void test_sized_scratch(void) {
    CHECK(tmrt_tokenizer_scratch_bytes(0, false) == 0 && tmrt_tokenizer_scratch_bytes(256, false) == 0);
    CHECK(tmrt_tokenizer_scratch_bytes(257, false) > 0 && tmrt_tokenizer_scratch_bytes(0, true) > 0);
    CHECK(tmrt_tokenizer_scratch_bytes(UINT64_MAX / 2, false) == UINT64_MAX);
    static const size_t lens[] = {1, 200, 256, 257, 1000, 4097, 65536};
    static char word[65536];
    static int32_t ids[65536 + 16];
    for (size_t i = 0; i < sizeof word; i++) word[i] = "hel"[i % 3 == 2 ? 2 : i % 3];
    for (int chat = 0; chat < 2; chat++)
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            mini m;
            mini_init(&m);
            void *img;
            size_t img_len;
            REQUIRE(mini_image(&m, &img, &img_len));
            tmem_context *c;
            tmem_context_desc cd = {0};
            REQUIRE_OK(tmem_context_create(&cd, &c));
            tmem_gguf *g;
            tmem_gguf_error ge;
            REQUIRE_OK(tmem_gguf_open_memory(c, img, img_len, &g, &ge));
            tmrt_tokenizer_desc d = {0};
            d.flags = TMRT_TOKENIZER_SCRATCH_EXACT;
            d.scratch_bytes = tmrt_tokenizer_scratch_bytes(lens[k], chat);
            uint64_t predicted, d0, c0, d1, c1, d2, c2;
            tmrt_error err = {""};
            CHECK_OK(tmrt_tokenizer_memory_bytes(c, g, &d, &predicted, &err));
            CHECK_OK(tmem_context_accounted(c, &d0, &c0));
            tmrt_tokenizer *tok = NULL;
            CHECK_OK(tmrt_tokenizer_load_ex(c, g, &d, &tok, &err));
            CHECK_OK(tmem_context_accounted(c, &d1, &c1));
            /* after the load: the tables, committed whole */
            CHECK_MSG(d1 - d0 + d.scratch_bytes == predicted, "loaded %llu + scratch %llu, predicted %llu",
                      (unsigned long long)(d1 - d0), (unsigned long long)d.scratch_bytes,
                      (unsigned long long)predicted);
            size_t n = 0;
            tmem_status st = chat ? tmrt_tokenizer_chat(tok, NULL, word, lens[k], 0, ids, sizeof ids / 4, &n)
                                  : tmrt_tokenizer_encode(tok, word, lens[k], 0, ids, sizeof ids / 4, &n);
            CHECK_MSG(st == TMEM_OK && n > 0, "%s %zu bytes: %s", chat ? "chat" : "encode", lens[k],
                      tmem_status_name(st));
            CHECK_OK(tmem_context_accounted(c, &d2, &c2));
            CHECK(d2 - d0 <= predicted);
            tmrt_tokenizer_destroy(tok);
            if (k == sizeof lens / sizeof lens[0] - 1 && !chat) {
                /* no scratch at all: short pieces only */
                d.scratch_bytes = 0;
                CHECK_OK(tmrt_tokenizer_load_ex(c, g, &d, &tok, &err));
                CHECK_OK(tmrt_tokenizer_encode(tok, word, 256, 0, ids, 300, &n));
                CHECK_ST(tmrt_tokenizer_encode(tok, word, 257, 0, ids, 300, &n), TMEM_E_FULL);
                CHECK_ST(tmrt_tokenizer_chat(tok, NULL, "hi", 2, 0, ids, 300, &n), TMEM_E_FULL);
                tmrt_tokenizer_destroy(tok);
            }
            tmem_gguf_close(g);
            tmem_context_destroy(c);
            free(img);
        }
}

int main(void) {
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    RUN(test_bpe_and_specials);
    RUN(test_decode_and_stream);
    RUN(test_chat);
    RUN(test_vocab_without_invalid_bytes);
    RUN(test_pretokenizer_rules);
    RUN(test_synth);
    RUN(test_long_piece);
    RUN(test_qwen35_sized_memory);
    RUN(test_sized_scratch);
    tmem_context_destroy(ctx);
    return tmem_test_finish();
}
