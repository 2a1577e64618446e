/*
 * Hugging Face tokenizer files -> tokenizer.ggml.* the way llama.cpp's
 * converter writes a GPT-2 style byte-level BPE (get_vocab_base +
 * gguf.SpecialVocab):
 *  - tokens: vocab_size entries; ids the vocabulary lacks become "[PAD<i>]"
 *    of type UNUSED (5); added tokens are CONTROL (3) when special or when
 *    they look special ("<|...|>", "<pad>", "<mask>", ...), else
 *    USER_DEFINED (4); the rest NORMAL (1);
 *  - merges: "a b" strings (pair form joined; a space inside a part is
 *    written as U+0120, as gguf-py does);
 *  - special ids from tokenizer_config.json's *_token strings (looked up
 *    among the added tokens), then config.json's *_token_id; add_bos/eos
 *    flags and the chat template from tokenizer_config.json (or
 *    chat_template.jinja);
 *  - model "gpt2", pre "qwen35" (llama.cpp identifies the pre-tokenizer by
 *    hashing a tokenisation it runs with transformers; a Qwen3.5 checkpoint's
 *    tokenizer hashes to "qwen35").
 * Sources: tokenizer.json, else vocab.json + merges.txt (+ the
 * added_tokens_decoder of tokenizer_config.json).
 */
#include "convert_internal.h"
#include <stdlib.h>
#include <string.h>

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

typedef struct doc {
    char *text;
    size_t len;
    tmem_json *j;
} doc;

static void doc_free(doc *d) {
    tmem_json_free(d->j);
    free(d->text);
    memset(d, 0, sizeof *d);
}

/* Read and parse dir/name; *found false when the file is absent. */
static tmem_status doc_load(tmem_context *ctx, const char *dir, const char *name, doc *d, bool *found,
                            tmrt_error *err) {
    memset(d, 0, sizeof *d);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *found = false;
    tmem_status st = tmrt__cv_read_file(path, &d->text, &d->len, err);
    if (st == TMEM_E_NOT_FOUND) return TMEM_OK;
    if (st) return st;
    *found = true;
    tmem_json_error je;
    if ((st = tmem_json_parse(ctx, d->text, d->len, &d->j, &je))) {
        free(d->text);
        d->text = NULL;
        return tmrt__fail(err, st, "%s:%u:%u: %s", path, je.line, je.column, je.message);
    }
    return TMEM_OK;
}

typedef struct vocab {
    uint32_t n;
    char **tok;
    int32_t *type;
    char **merges;
    uint64_t n_merges;
} vocab;

static void vocab_free(vocab *v) {
    for (uint32_t i = 0; v->tok && i < v->n; i++) free(v->tok[i]);
    for (uint64_t i = 0; v->merges && i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok);
    free(v->type);
    free(v->merges);
}

static char *json_strdup(const tmem_json *j, tmem_json_ref r) {
    size_t n = 0;
    if (tmem_json_string(j, r, NULL, 0, &n) != TMEM_E_FULL) return NULL;
    char *s = malloc(n + 1);
    if (s && tmem_json_string(j, r, s, n + 1, &n)) {
        free(s);
        s = NULL;
    }
    return s;
}

static bool looks_special(const char *t) {
    size_t n = strlen(t);
    if (!strcmp(t, "<pad>") || !strcmp(t, "<mask>") || !strcmp(t, "<2mass>") || !strcmp(t, "[@BOS@]")) return true;
    if (n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>")) return true;
    /* "<｜" ... "｜>" (fullwidth vertical line, U+FF5C) */
    if (n >= 8 && !strncmp(t, "<\xef\xbd\x9c", 4) && !strcmp(t + n - 4, "\xef\xbd\x9c>")) return true;
    return n >= 8 && !strncmp(t, "<unused", 7) && t[n - 1] == '>';
}

/* The base vocabulary: an object token -> id. */
static tmem_status read_vocab(const tmem_json *j, tmem_json_ref obj, vocab *v, const char *what,
                              tmrt_error *err) {
    if (tmem_json_type_of(j, obj) != TMEM_JSON_OBJECT)
        return tmrt__fail(err, TMEM_E_PARSE, "%s: the vocabulary is not an object", what);
    tmem_json_ref k, val;
    for (tmem_status r = tmem_json_first(j, obj, &k); r == TMEM_OK; r = tmem_json_next(j, k, &k)) {
        int64_t id;
        if (tmem_json_member_value(j, k, &val) || tmem_json_int(j, val, &id) || id < 0)
            return tmrt__fail(err, TMEM_E_PARSE, "%s: vocabulary entry at byte %llu has no valid id", what,
                           (unsigned long long)tmem_json_offset(j, k));
        if (id >= v->n)
            return tmrt__fail(err, TMEM_E_CORRUPT, "%s: token id %lld is not below vocab_size %u", what,
                                 (long long)id, v->n);
        if (v->tok[id])
            return tmrt__fail(err, TMEM_E_CORRUPT, "%s: token id %lld appears twice", what, (long long)id);
        if (!(v->tok[id] = json_strdup(j, k))) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
        v->type[id] = TT_NORMAL;
    }
    return TMEM_OK;
}

static tmem_status add_token(vocab *v, int64_t id, const tmem_json *j, tmem_json_ref content, bool special,
                             const char *what, tmrt_error *err) {
    if (id < 0 || id >= v->n)
        return tmrt__fail(err, TMEM_E_CORRUPT, "%s: added token id %lld is not below vocab_size %u", what,
                             (long long)id, v->n);
    char *s = json_strdup(j, content);
    if (!s) return tmrt__fail(err, TMEM_E_PARSE, "%s: added token %lld has no string content", what, (long long)id);
    free(v->tok[id]);
    v->tok[id] = s;
    v->type[id] = special || looks_special(s) ? TT_CONTROL : TT_USER;
    return TMEM_OK;
}

/* tokenizer.json's added_tokens: [{id, content, special, ...}]. */
static tmem_status read_added(const tmem_json *j, tmem_json_ref arr, vocab *v, tmrt_error *err) {
    if (tmem_json_type_of(j, arr) != TMEM_JSON_ARRAY) return TMEM_OK;
    tmem_json_ref e, f, c;
    for (tmem_status r = tmem_json_first(j, arr, &e); r == TMEM_OK; r = tmem_json_next(j, e, &e)) {
        int64_t id;
        bool special = false;
        if (tmem_json_get(j, e, "id", &f) || tmem_json_int(j, f, &id) || tmem_json_get(j, e, "content", &c))
            return tmrt__fail(err, TMEM_E_PARSE, "tokenizer.json: added token at byte %llu lacks id or content",
                           (unsigned long long)tmem_json_offset(j, e));
        if (tmem_json_get(j, e, "special", &f) == TMEM_OK && tmem_json_bool(j, f, &special)) special = false;
        tmem_status st = add_token(v, id, j, c, special, "tokenizer.json", err);
        if (st) return st;
    }
    return TMEM_OK;
}

/* tokenizer_config.json's added_tokens_decoder: {"id": {content, special}}. */
static tmem_status read_added_decoder(const tmem_json *j, vocab *v, tmrt_error *err) {
    tmem_json_ref obj, k, val, c, f;
    if (tmem_json_get(j, TMEM_JSON_ROOT, "added_tokens_decoder", &obj) || tmem_json_type_of(j, obj) != TMEM_JSON_OBJECT)
        return TMEM_OK;
    for (tmem_status r = tmem_json_first(j, obj, &k); r == TMEM_OK; r = tmem_json_next(j, k, &k)) {
        char idbuf[24];
        size_t n;
        char *end = NULL;
        if (tmem_json_string(j, k, idbuf, sizeof idbuf, &n) || tmem_json_member_value(j, k, &val) ||
            tmem_json_get(j, val, "content", &c))
            return tmrt__fail(err, TMEM_E_PARSE, "tokenizer_config.json: bad added_tokens_decoder entry");
        long long id = strtoll(idbuf, &end, 10);
        if (!n || *end) return tmrt__fail(err, TMEM_E_PARSE, "tokenizer_config.json: added token id '%s'", idbuf);
        bool special = false;
        if (tmem_json_get(j, val, "special", &f) == TMEM_OK && tmem_json_bool(j, f, &special)) special = false;
        tmem_status st = add_token(v, id, j, c, special, "tokenizer_config.json", err);
        if (st) return st;
    }
    return TMEM_OK;
}

static tmem_status push_merge(vocab *v, uint64_t *cap, char *m) {
    if (!m) return TMEM_E_NO_MEMORY;
    if (v->n_merges == *cap) {
        uint64_t nc = *cap ? *cap * 2 : 1024;
        char **p = realloc(v->merges, (size_t)nc * sizeof *p);
        if (!p) {
            free(m);
            return TMEM_E_NO_MEMORY;
        }
        v->merges = p;
        *cap = nc;
    }
    v->merges[v->n_merges++] = m;
    return TMEM_OK;
}

/* A merge part with spaces written as U+0120 (gguf-py's pair encoding). */
static char *part_escaped(const char *s) {
    size_t n = strlen(s), sp = 0;
    for (size_t i = 0; i < n; i++) sp += s[i] == ' ';
    char *o = malloc(n + sp + 1), *q = o;
    if (!o) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            *q++ = (char)0xC4;
            *q++ = (char)0xA0;
        } else {
            *q++ = s[i];
        }
    }
    *q = 0;
    return o;
}

static tmem_status read_merges_json(const tmem_json *j, tmem_json_ref arr, vocab *v, tmrt_error *err) {
    if (tmem_json_type_of(j, arr) != TMEM_JSON_ARRAY) return TMEM_OK;
    uint64_t cap = 0;
    tmem_json_ref e, a, b;
    for (tmem_status r = tmem_json_first(j, arr, &e); r == TMEM_OK; r = tmem_json_next(j, e, &e)) {
        char *m = NULL;
        if (tmem_json_type_of(j, e) == TMEM_JSON_STRING) {
            m = json_strdup(j, e);
        } else if (tmem_json_count(j, e) == 2 && !tmem_json_first(j, e, &a) && !tmem_json_next(j, a, &b) &&
                   tmem_json_type_of(j, a) == TMEM_JSON_STRING && tmem_json_type_of(j, b) == TMEM_JSON_STRING) {
            char *x = json_strdup(j, a), *y = json_strdup(j, b);
            char *xe = x ? part_escaped(x) : NULL, *ye = y ? part_escaped(y) : NULL;
            if (xe && ye && (m = malloc(strlen(xe) + strlen(ye) + 2))) sprintf(m, "%s %s", xe, ye);
            free(x), free(y), free(xe), free(ye);
        } else {
            return tmrt__fail(err, TMEM_E_PARSE, "tokenizer.json: merge at byte %llu is neither \"a b\" nor [a, b]",
                           (unsigned long long)tmem_json_offset(j, e));
        }
        if (push_merge(v, &cap, m)) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory for the merges");
    }
    return TMEM_OK;
}

/* merges.txt: optional "#version" line, then "a b" per line. */
static tmem_status read_merges_txt(const char *dir, vocab *v, tmrt_error *err) {
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    tmem_status st = tmrt__cv_read_file(path, &text, &len, err);
    if (st == TMEM_E_NOT_FOUND) return TMEM_OK;
    if (st) return st;
    uint64_t cap = 0;
    size_t i = 0;
    bool first = true;
    while (i < len && !st) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        size_t a = i, b = e;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        bool skip = a == b || (first && text[a] == '#');
        first = false;
        if (!skip) {
            size_t sp = a;
            while (sp < b && text[sp] != ' ') sp++;
            size_t c = sp;
            while (c < b && text[c] == ' ') c++;
            bool two = sp < b && c < b && !memchr(text + c, ' ', b - c);
            if (two) {
                char *m = malloc((sp - a) + (b - c) + 2);
                if (m) {
                    memcpy(m, text + a, sp - a);
                    m[sp - a] = ' ';
                    memcpy(m + (sp - a) + 1, text + c, b - c);
                    m[(sp - a) + 1 + (b - c)] = 0;
                }
                if (push_merge(v, &cap, m)) st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory for the merges");
            }
        }
        i = e + 1;
    }
    free(text);
    return st;
}

/* Token id of tokenizer_config's <typ>_token among the added tokens. */
static int64_t special_id(const tmem_json *cfg, const tmem_json *tok, const char *typ) {
    if (!cfg || !tok) return -1;
    char key[32];
    snprintf(key, sizeof key, "%s_token", typ);
    tmem_json_ref e, c, arr, a, f;
    if (tmem_json_get(cfg, TMEM_JSON_ROOT, key, &e)) return -1;
    if (tmem_json_type_of(cfg, e) == TMEM_JSON_OBJECT && tmem_json_get(cfg, e, "content", &c) == TMEM_OK) e = c;
    if (tmem_json_type_of(cfg, e) != TMEM_JSON_STRING) return -1;
    char *want = json_strdup(cfg, e);
    int64_t id = -1;
    if (want && tmem_json_get(tok, TMEM_JSON_ROOT, "added_tokens", &arr) == TMEM_OK)
        for (tmem_status r = tmem_json_first(tok, arr, &a); r == TMEM_OK && id < 0; r = tmem_json_next(tok, a, &a))
            if (tmem_json_get(tok, a, "content", &c) == TMEM_OK && tmem_json_string_eq(tok, c, want) &&
                tmem_json_get(tok, a, "id", &f) == TMEM_OK && tmem_json_int(tok, f, &id))
                id = -1;
    free(want);
    return id;
}

static tmem_status set_u32(tmem_gguf_writer *w, const char *key, uint64_t v) {
    tmem_gguf_value x = {.type = TMEM_GGUF_UINT32};
    x.v.u = v;
    return tmem_gguf_writer_set(w, key, &x);
}

static tmem_status set_str(tmem_gguf_writer *w, const char *key, const char *s, size_t n) {
    tmem_gguf_value x = {.type = TMEM_GGUF_STRING};
    x.v.s.data = s;
    x.v.s.len = n;
    return tmem_gguf_writer_set(w, key, &x);
}

static tmem_status write_specials(tmem_gguf_writer *w, const char *dir, const doc *cfg, const doc *tok,
                                  const cv_hparams *h, tmrt_error *err) {
    static const char *const typ[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
    static const char *const key[] = {"bos_token_id", "eos_token_id", "unknown_token_id", "seperator_token_id",
                                      "padding_token_id", "cls_token_id", "mask_token_id"};
    const int64_t from_config[] = {h->bos_id, h->eos_id, -1, -1, h->pad_id, -1, -1};
    tmem_status st = TMEM_OK;
    char k[64];
    for (int i = 0; i < 7 && !st; i++) {
        int64_t id = special_id(cfg->j, tok->j, typ[i]);
        if (id < 0) id = from_config[i];
        snprintf(k, sizeof k, "tokenizer.ggml.%s", key[i]);
        if (id >= 0) st = set_u32(w, k, (uint64_t)id);
        tmem_json_ref f;
        bool b;
        snprintf(k, sizeof k, "add_%s_token", typ[i]);
        if (!st && cfg->j && tmem_json_get(cfg->j, TMEM_JSON_ROOT, k, &f) == TMEM_OK &&
            !tmem_json_bool(cfg->j, f, &b)) {
            tmem_gguf_value x = {.type = TMEM_GGUF_BOOL};
            x.v.b = b;
            snprintf(k, sizeof k, "tokenizer.ggml.add_%s_token", typ[i]);
            st = tmem_gguf_writer_set(w, k, &x);
        }
    }
    /* chat template: tokenizer_config.json, else chat_template.jinja */
    tmem_json_ref t;
    if (!st && cfg->j && tmem_json_get(cfg->j, TMEM_JSON_ROOT, "chat_template", &t) == TMEM_OK &&
        tmem_json_type_of(cfg->j, t) == TMEM_JSON_STRING) {
        char *s = json_strdup(cfg->j, t);
        st = s ? set_str(w, "tokenizer.chat_template", s, strlen(s)) : TMEM_E_NO_MEMORY;
        free(s);
    } else if (!st) {
        char path[4096], *text;
        size_t len;
        snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
        if (tmrt__cv_read_file(path, &text, &len, err) == TMEM_OK) {
            st = set_str(w, "tokenizer.chat_template", text, len);
            free(text);
        }
        if (err) err->message[0] = 0;
    }
    return st;
}

tmem_status tmrt__cv_tokenizer_convert(tmem_context *ctx, tmem_gguf_writer *w, const char *hf_dir, const cv_hparams *h,
                                 bool *written, tmrt_error *err) {
    *written = false;
    doc tok = {0}, cfg = {0}, vj = {0};
    bool have_tok, have_cfg, have_vj = false;
    vocab v = {0};
    tmem_status st = doc_load(ctx, hf_dir, "tokenizer.json", &tok, &have_tok, err);
    if (!st) st = doc_load(ctx, hf_dir, "tokenizer_config.json", &cfg, &have_cfg, err);
    if (!st && !have_tok) st = doc_load(ctx, hf_dir, "vocab.json", &vj, &have_vj, err);
    if (st || (!have_tok && !have_vj)) goto done; /* no tokenizer: the GGUF runs from token ids */
    v.n = h->n_vocab;
    v.tok = calloc(v.n, sizeof *v.tok);
    v.type = calloc(v.n, sizeof *v.type);
    if (!v.tok || !v.type) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory for the vocabulary");
        goto done;
    }
    tmem_json_ref model, r;
    if (have_tok) {
        if (tmem_json_get(tok.j, TMEM_JSON_ROOT, "model", &model) || tmem_json_get(tok.j, model, "vocab", &r)) {
            st = tmrt__fail(err, TMEM_E_PARSE, "tokenizer.json: no model.vocab");
            goto done;
        }
        if (tmem_json_get(tok.j, model, "type", &r) == TMEM_OK && !tmem_json_string_eq(tok.j, r, "BPE")) {
            st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "tokenizer.json: model.type is not BPE");
            goto done;
        }
        if (tmem_json_get(tok.j, model, "vocab", &r)) r = TMEM_JSON_ROOT; /* found above */
        if ((st = read_vocab(tok.j, r, &v, "tokenizer.json", err))) goto done;
        if (tmem_json_get(tok.j, TMEM_JSON_ROOT, "added_tokens", &r) == TMEM_OK &&
            (st = read_added(tok.j, r, &v, err)))
            goto done;
        if (tmem_json_get(tok.j, model, "merges", &r) == TMEM_OK && (st = read_merges_json(tok.j, r, &v, err)))
            goto done;
    } else {
        if ((st = read_vocab(vj.j, TMEM_JSON_ROOT, &v, "vocab.json", err))) goto done;
        if (have_cfg && (st = read_added_decoder(cfg.j, &v, err))) goto done;
    }
    if (!v.n_merges && (st = read_merges_txt(hf_dir, &v, err))) goto done;
    for (uint32_t i = 0; i < v.n; i++) {
        if (v.tok[i]) continue;
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%u]", i);
        if (!(v.tok[i] = malloc(strlen(pad) + 1))) {
            st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
            goto done;
        }
        strcpy(v.tok[i], pad);
        v.type[i] = TT_UNUSED;
    }
    st = set_str(w, "tokenizer.ggml.model", "gpt2", 4);
    if (!st) st = set_str(w, "tokenizer.ggml.pre", "qwen35", 6);
    if (!st) st = tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, v.tok, v.n);
    if (!st) st = tmem_gguf_writer_set_array(w, "tokenizer.ggml.token_type", TMEM_GGUF_INT32, v.type, v.n);
    if (!st && v.n_merges)
        st = tmem_gguf_writer_set_array(w, "tokenizer.ggml.merges", TMEM_GGUF_STRING, v.merges, v.n_merges);
    if (st) {
        st = tmrt__fail(err, st, "writing the tokenizer failed: %s", tmem_strerror(st));
        goto done;
    }
    if ((st = write_specials(w, hf_dir, &cfg, &tok, h, err))) goto done;
    *written = true;
done:
    vocab_free(&v);
    doc_free(&tok);
    doc_free(&cfg);
    doc_free(&vj);
    return st;
}
