/* tok_check: the test side of the tokenizer comparison (tests/tokenizer.cmake,
 * docs/tokenizer.md).
 *   tok_check gguf DUMP.txt OUT.gguf      dump_qwen3.js's vocabulary -> a GGUF
 *                                         (tmem_gguf writer, llama.cpp's keys)
 *   tok_check jsview CORPUS OUT           CORPUS with every byte our strict
 *                                         UTF-8 decoder calls invalid replaced by
 *                                         U+FFFD: what a JS string can hold
 *   tok_check compare GGUF CORPUS IDS     ours on the jsview of each line (and of
 *                                         the whole file) == the package's ids
 *                                         (encode_qwen3.js); decode(encode(raw))
 *                                         == raw for every raw line
 *   tok_check bench GGUF CORPUS [copy]    load memory (library accounting) and
 *                                         encode speed
 *   tok_check synth N_VOCAB OUT.gguf      tmrt_tokenizer_synth_write's vocabulary
 *   tok_check split qwen2|qwen35 CORPUS OUT  our pre-tokenizer's pieces per line
 *                                         (split_js.js writes JavaScript's)
 *   tok_check llamacpp GGUF INP OUT       llama.cpp's own tokenizer test files
 *                                         (models/ggml-vocab-*.gguf{,.inp,.out})
 * Exit 0 on agreement, 1 on a mismatch or error (the first mismatches are
 * printed with both id lists). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tmemrt/tokenizer.h"
#include "tok/tok_internal.h"
#include "tok/unicode.h"

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

static char *unhex(const char *h, size_t n) {
    char *s = malloc(n / 2 + 1);
    for (size_t i = 0; i + 1 < n; i += 2) s[i / 2] = (char)(hexval(h[i]) << 4 | hexval(h[i + 1]));
    s[n / 2] = 0;
    return s;
}

static int cmd_gguf(const char *dump, const char *out) {
    size_t len;
    char *text = read_file(dump, &len);
    if (!text) return fprintf(stderr, "tok_check: cannot read %s\n", dump), 1;
    size_t cap = 1 << 20, nt = 0, nm = 0;
    char **tokens = malloc(cap * sizeof *tokens), **merges = malloc(cap * sizeof *merges);
    int32_t *types = malloc(cap * sizeof *types);
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return 1;
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "gpt2";
    v.v.s.len = 4;
    if (tmem_gguf_writer_set(w, "tokenizer.ggml.model", &v) != TMEM_OK) return 1;
    v.v.s.data = "qwen2";
    v.v.s.len = 5;
    if (tmem_gguf_writer_set(w, "tokenizer.ggml.pre", &v) != TMEM_OK) return 1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == 'T') {
            char *sp = strchr(line + 2, ' ');
            types[nt] = atoi(line + 2);
            tokens[nt++] = unhex(sp + 1, strlen(sp + 1));
        } else if (line[0] == 'M') {
            merges[nm++] = unhex(line + 2, strlen(line + 2));
        } else if (line[0] == 'K') {
            char *sp = strchr(line + 2, ' ');
            *sp = 0;
            tmem_gguf_value id = {.type = TMEM_GGUF_UINT32};
            id.v.u = strtoull(sp + 1, NULL, 10);
            if (tmem_gguf_writer_set(w, line + 2, &id) != TMEM_OK) return 1;
        }
    }
    tmem_gguf_value b = {.type = TMEM_GGUF_BOOL};
    if (tmem_gguf_writer_set(w, "tokenizer.ggml.add_bos_token", &b) != TMEM_OK ||
        tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, tokens, nt) != TMEM_OK ||
        tmem_gguf_writer_set_array(w, "tokenizer.ggml.token_type", TMEM_GGUF_INT32, types, nt) != TMEM_OK ||
        tmem_gguf_writer_set_array(w, "tokenizer.ggml.merges", TMEM_GGUF_STRING, merges, nm) != TMEM_OK)
        return fprintf(stderr, "tok_check: writer failed\n"), 1;
    size_t need;
    if (tmem_gguf_writer_write(w, NULL, 0, &need) != TMEM_E_FULL && need == 0) return 1;
    void *img = malloc(need);
    if (tmem_gguf_writer_write(w, img, need, &need) != TMEM_OK || write_file(out, img, need))
        return fprintf(stderr, "tok_check: cannot write %s\n", out), 1;
    fprintf(stderr, "tok_check: %s: %zu tokens, %zu merges, %zu bytes\n", out, nt, nm, need);
    for (size_t i = 0; i < nt; i++) free(tokens[i]);
    for (size_t i = 0; i < nm; i++) free(merges[i]);
    free(tokens);
    free(merges);
    free(types);
    free(img);
    free(text);
    tmem_gguf_writer_destroy(w);
    return 0;
}

/* Our decoder's view of the bytes, with U+FFFD for each invalid byte. */
static size_t jsview(const uint8_t *s, size_t len, uint8_t *out) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n;
        uint32_t cp = tmrt__utf8_decode(s + i, len - i, &n);
        if (cp == 0xFFFD && n == 1 && s[i] >= 0x80) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else {
            memcpy(out + o, s + i, n);
            o += n;
        }
        i += n;
    }
    return o;
}

static int cmd_jsview(const char *in, const char *out) {
    size_t len;
    uint8_t *s = (uint8_t *)read_file(in, &len);
    if (!s) return 1;
    uint8_t *o = malloc(3 * len + 1);
    size_t n = jsview(s, len, o);
    int rc = write_file(out, o, n) ? 1 : 0;
    free(s);
    free(o);
    return rc;
}

static tmem_context *ctx;
static tmem_gguf *gguf;

static tmrt_tokenizer *open_tok(const char *path, uint32_t flags) {
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    tmem_gguf_desc gd = {.path = path};
    tmem_gguf_error ge;
    if (tmem_gguf_open(ctx, &gd, &gguf, &ge) != TMEM_OK) {
        fprintf(stderr, "tok_check: %s: %s\n", path, ge.message);
        return NULL;
    }
    tmrt_tokenizer_desc td = {.flags = flags};
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    tmem_status st = tmrt_tokenizer_load_ex(ctx, gguf, &td, &tok, &err);
    if (st != TMEM_OK) {
        fprintf(stderr, "tok_check: %s: %s (%s)\n", path, err.message, tmem_strerror(st));
        return NULL;
    }
    return tok;
}

static int32_t *encode(const tmrt_tokenizer *tok, const char *s, size_t len, size_t *n) {
    size_t cap = len + 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (tmrt_tokenizer_encode(tok, s, len, TMRT_TOKENIZE_PARSE_SPECIAL, ids, cap, n) != TMEM_OK) {
        free(ids);
        return NULL;
    }
    return ids;
}

static bool round_trips(const tmrt_tokenizer *tok, const char *s, size_t len) {
    size_t n;
    int32_t *ids = encode(tok, s, len, &n);
    if (!ids) return false;
    char *buf = malloc(len + 1);
    size_t o = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        char piece[512];
        size_t m;
        ok = tmrt_tokenizer_decode(tok, ids[i], piece, sizeof piece, &m) == TMEM_OK && o + m <= len;
        if (ok) memcpy(buf + o, piece, m);
        o += m;
    }
    ok = ok && o == len && !memcmp(buf, s, len);
    free(buf);
    free(ids);
    return ok;
}

static void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, n > 40 ? " ...\n" : "\n");
}

static size_t parse_ids(char *line, int32_t *ids) {
    size_t n = 0;
    for (char *p = line; *p;) {
        while (*p == ' ') p++;
        if (!*p) break;
        ids[n++] = (int32_t)strtol(p, &p, 10);
    }
    return n;
}

static int cmd_compare(const char *path, const char *corpus, const char *expected) {
    tmrt_tokenizer *tok = open_tok(path, 0);
    if (!tok) return 1;
    size_t len, elen;
    char *raw = read_file(corpus, &len), *exp = read_file(expected, &elen);
    if (!raw || !exp) return fprintf(stderr, "tok_check: cannot read inputs\n"), 1;
    uint8_t *view = malloc(3 * len + 1);
    int32_t *want = malloc((elen / 2 + 2) * sizeof *want);
    size_t lines = 0, bad = 0, rt_bad = 0, tokens = 0, invalid_lines = 0;
    char *ep = exp, *rp = raw, *rend = raw + len;
    if (len && rend[-1] == '\n') rend--;
    while (rp <= rend) {
        char *nl = memchr(rp, '\n', (size_t)(rend - rp));
        size_t ll = nl ? (size_t)(nl - rp) : (size_t)(rend - rp);
        char *enl = strchr(ep, '\n');
        if (!enl) return fprintf(stderr, "tok_check: %s ends early at line %zu\n", expected, lines + 1), 1;
        *enl = 0;
        size_t nw = parse_ids(ep, want), vn = jsview((const uint8_t *)rp, ll, view), n;
        if (vn != ll) invalid_lines++;
        int32_t *got = encode(tok, (const char *)view, vn, &n);
        tokens += n;
        if (!got || n != nw || memcmp(got, want, n * sizeof *got)) {
            if (bad++ < 8) {
                fprintf(stderr, "line %zu: '%.*s'\n", lines + 1, (int)(ll < 120 ? ll : 120), rp);
                print_ids("ours   ", got, got ? n : 0);
                print_ids("package", want, nw);
            }
        }
        free(got);
        if (!round_trips(tok, rp, ll) && rt_bad++ < 8) fprintf(stderr, "line %zu: decode(encode(x)) != x\n", lines + 1);
        lines++;
        ep = enl + 1;
        if (!nl) break;
        rp = nl + 1;
    }
    /* the whole file as one text: newlines and runs across lines */
    bool all_ok = false;
    if (!strncmp(ep, "ALL ", 4)) {
        char *enl = strchr(ep, '\n');
        if (enl) *enl = 0;
        size_t nw = parse_ids(ep + 4, want), vn = jsview((const uint8_t *)raw, len, view), n;
        int32_t *got = encode(tok, (const char *)view, vn, &n);
        all_ok = got && n == nw && !memcmp(got, want, n * sizeof *got);
        if (!all_ok) fprintf(stderr, "whole file: %zu ids vs the package's %zu\n", n, nw);
        free(got);
    }
    bool whole_rt = round_trips(tok, raw, len);
    printf("tok_check compare: %zu lines (%zu with invalid UTF-8), %zu tokens: %zu mismatching lines, "
           "%zu round-trip failures; whole file: %s, round trip %s\n",
           lines, invalid_lines, tokens, bad, rt_bad, all_ok ? "identical" : "DIFFERENT", whole_rt ? "ok" : "FAILED");
    tmrt_tokenizer_destroy(tok);
    tmem_context_destroy(ctx);
    free(raw);
    free(exp);
    free(view);
    free(want);
    return bad || rt_bad || !all_ok || !whole_rt ? 1 : 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmd_bench(const char *path, const char *corpus, bool copy) {
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_gguf_desc gd = {.path = path};
    tmem_gguf_error ge;
    if (tmem_gguf_open(ctx, &gd, &gguf, &ge) != TMEM_OK) return 1;
    uint64_t d0, c0, d1, c1;
    if (tmem_context_accounted(ctx, &d0, &c0) != TMEM_OK) return 1;
    double t0 = now_s();
    tmrt_tokenizer_desc td = {.flags = copy ? TMRT_TOKENIZER_COPY_STRINGS : 0};
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    if (tmrt_tokenizer_load_ex(ctx, gguf, &td, &tok, &err) != TMEM_OK) return fprintf(stderr, "%s\n", err.message), 1;
    double t_load = now_s() - t0;
    if (tmem_context_accounted(ctx, &d1, &c1) != TMEM_OK) return 1;
    tmrt_tokenizer_info in;
    if (tmrt_tokenizer_get_info(tok, &in) != TMEM_OK) return 1;
    size_t len;
    char *text = read_file(corpus, &len);
    size_t cap = len + 16, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double a = now_s();
        if (tmrt_tokenizer_encode(tok, text, len, 0, ids, cap, &n) != TMEM_OK) return 1;
        double dt = now_s() - a;
        if (dt < best) best = dt;
    }
    printf("{\"strings\":\"%s\",\"n_vocab\":%u,\"n_merges\":%u,\"dirty_accounted\":%llu,\"table_bytes\":%llu,"
           "\"load_peak_bytes\":%llu,\"string_bytes_in_place\":%llu,\"load_s\":%.4f,\"bytes\":%zu,\"tokens\":%zu,"
           "\"encode_s\":%.4f,\"mb_per_s\":%.2f,\"tokens_per_s\":%.0f}\n",
           copy ? "copied" : "in_place", in.n_vocab, in.n_merges, (unsigned long long)(d1 - d0),
           (unsigned long long)in.table_bytes, (unsigned long long)in.load_peak_bytes,
           (unsigned long long)in.string_bytes, t_load, len, n, best, (double)len / best / 1e6, (double)n / best);
    free(ids);
    free(text);
    tmrt_tokenizer_destroy(tok);
    tmem_context_destroy(ctx);
    return 0;
}

static int cmd_synth(const char *count, const char *out) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return 1;
    tmem_status st = tmrt_tokenizer_synth_write(w, (uint32_t)strtoul(count, NULL, 10));
    if (st != TMEM_OK) return fprintf(stderr, "tok_check: synth: %s\n", tmem_strerror(st)), 1;
    size_t need = 0;
    if (tmem_gguf_writer_write(w, NULL, 0, &need) != TMEM_E_FULL) return 1;
    void *img = malloc(need);
    if (tmem_gguf_writer_write(w, img, need, &need) != TMEM_OK || write_file(out, img, need)) return 1;
    tmem_gguf_writer_destroy(w);
    free(img);
    return 0;
}

/* Our pre-tokenizer's pieces of each line, in split_js.js's format. */
static int cmd_split(const char *kind, const char *corpus, const char *out) {
    tmrt_pretok k = !strcmp(kind, "qwen35") ? TMRT_PRETOK_QWEN35 : TMRT_PRETOK_QWEN2;
    size_t len;
    char *text = read_file(corpus, &len);
    FILE *f = fopen(out, "wb");
    if (!text || !f) return 1;
    if (len && text[len - 1] == '\n') len--;
    for (size_t a = 0; a <= len;) {
        char *nl = memchr(text + a, '\n', len - a);
        size_t end = nl ? (size_t)(nl - text) : len;
        for (size_t pos = a; pos < end;) {
            size_t next = tmrt__pretok_next(k, (const uint8_t *)text, end, pos);
            if (pos > a) fputc(' ', f);
            for (size_t i = pos; i < next; i++) fprintf(f, "%02x", (uint8_t)text[i]);
            pos = next;
        }
        fputc('\n', f);
        if (!nl) break;
        a = end + 1;
    }
    free(text);
    return fclose(f) ? 1 : 0;
}

/* llama.cpp's tokenizer test files (tests/test-tokenizer-0.cpp's format):
 * INP holds the texts separated by "\n__ggml_vocab_test__\n", OUT one line
 * of ids per text; no specials parsed or added. */
static int cmd_llamacpp(const char *path, const char *inp, const char *outp) {
    tmrt_tokenizer *tok = open_tok(path, 0);
    if (!tok) return 1;
    size_t il, ol;
    char *in = read_file(inp, &il), *out = read_file(outp, &ol);
    if (!in || !out) return fprintf(stderr, "tok_check: cannot read %s / %s\n", inp, outp), 1;
    static const char sep[] = "\n__ggml_vocab_test__\n";
    int32_t *want = malloc((ol / 2 + 2) * sizeof *want);
    size_t tests = 0, bad = 0, pos = 0;
    char *oline = out;
    while (pos < il) {
        char *next = strstr(in + pos, sep);
        size_t end = next ? (size_t)(next - in) : il;
        char *onl = strchr(oline, '\n');
        if (!onl) return fprintf(stderr, "tok_check: %s has fewer lines than tests\n", outp), 1;
        *onl = 0;
        size_t nw = parse_ids(oline, want), n;
        int32_t *got = NULL;
        size_t cap = end - pos + 16;
        got = malloc(cap * sizeof *got);
        if (tmrt_tokenizer_encode(tok, in + pos, end - pos, 0, got, cap, &n) != TMEM_OK || n != nw ||
            memcmp(got, want, n * sizeof *got)) {
            if (bad++ < 8) {
                fprintf(stderr, "test %zu: '%.*s'\n", tests + 1, (int)(end - pos < 80 ? end - pos : 80), in + pos);
                print_ids("ours    ", got, n);
                print_ids("llama.cpp", want, nw);
            }
        }
        if (!round_trips(tok, in + pos, end - pos)) bad++;
        free(got);
        tests++;
        oline = onl + 1;
        if (!next) break;
        pos = end + sizeof sep - 1;
    }
    printf("tok_check llamacpp: %zu tests, %zu mismatches\n", tests, bad);
    free(in);
    free(out);
    free(want);
    tmrt_tokenizer_destroy(tok);
    tmem_context_destroy(ctx);
    return bad || !tests ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "llamacpp")) return cmd_llamacpp(argv[2], argv[3], argv[4]);
    if (argc >= 5 && !strcmp(argv[1], "split")) return cmd_split(argv[2], argv[3], argv[4]);
    if (argc >= 4 && !strcmp(argv[1], "synth")) return cmd_synth(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "gguf")) return cmd_gguf(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "jsview")) return cmd_jsview(argv[2], argv[3]);
    if (argc >= 5 && !strcmp(argv[1], "compare")) return cmd_compare(argv[2], argv[3], argv[4]);
    if (argc >= 4 && !strcmp(argv[1], "bench")) return cmd_bench(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "copy"));
    fprintf(stderr, "usage: tok_check gguf DUMP OUT | jsview CORPUS OUT | compare GGUF CORPUS IDS | "
                    "bench GGUF CORPUS [copy] | synth N_VOCAB OUT | split KIND CORPUS OUT | llamacpp GGUF INP OUT\n");
    return 2;
}
