/*
 * Strict JSON reader (json.h). One pass builds a pre-order node array: a
 * container's first child is the node right after it, siblings are linked,
 * an object member is a key node immediately followed by its value node.
 * Strings and numbers are validated in place and decoded only when asked.
 * Each object's keys are sorted (by decoded bytes) into one shared index,
 * which gives O(log n) lookups and finds duplicate keys.
 */
#include "model_internal.h"
#include "base/text.h"
#include "typedmem/json.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_ESCAPED = 1, F_INTEGER = 2, F_KEY = 4 };

typedef struct jnode {
    uint64_t off;    /* first byte of the value (strings: after the quote) */
    uint32_t len;    /* strings, numbers: bytes; objects: start in j->sorted */
    uint32_t count;  /* containers: items */
    uint32_t next;   /* next sibling; 0 = none (the root is never a sibling) */
    uint8_t type, flags;
} jnode;

struct tmem_json {
    tmem_context *ctx;
    const uint8_t *text;
    uint64_t len;
    jnode *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *sorted;            /* object keys, sorted per object */
    uint32_t n_sorted, cap_sorted;
};

typedef struct parser {
    tmem_json *j;
    uint64_t pos;
    tmem_json_error *err;
} parser;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static tmem_status fail(parser *p, tmem_status st, uint64_t at, const char *fmt, ...) {
    if (p->err) {
        tmem_json_error *e = p->err;
        e->offset = at;
        e->line = 1;
        e->column = 1;
        for (uint64_t i = 0; i < at && i < p->j->len; i++) {
            if (p->j->text[i] == '\n') {
                e->line++;
                e->column = 1;
            } else {
                e->column++;
            }
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return tmem__err(st);
}

static tmem_status new_node(parser *p, uint8_t type, uint32_t *out) {
    tmem_json *j = p->j;
    if (j->n_nodes == j->cap_nodes) {
        uint32_t nc = j->cap_nodes ? j->cap_nodes * 2 : 64;
        if (nc <= j->cap_nodes || (uint64_t)nc * sizeof(jnode) > SIZE_MAX) return tmem__err(TMEM_E_OVERFLOW);
        jnode *n = tmem__model_alloc(j->ctx, (size_t)nc * sizeof(jnode));
        if (!n) return tmem__err(TMEM_E_NO_MEMORY);
        if (j->n_nodes) memcpy(n, j->nodes, (size_t)j->n_nodes * sizeof(jnode));
        tmem__model_free(j->ctx, j->nodes, (size_t)j->cap_nodes * sizeof(jnode));
        j->nodes = n;
        j->cap_nodes = nc;
    }
    *out = j->n_nodes++;
    jnode *n = &j->nodes[*out];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->off = p->pos;
    return TMEM_OK;
}

static void skip_ws(parser *p) {
    const uint8_t *t = p->j->text;
    while (p->pos < p->j->len && (t[p->pos] == ' ' || t[p->pos] == '\t' || t[p->pos] == '\n' || t[p->pos] == '\r'))
        p->pos++;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at off (bounds checked by the caller). */
static int hex4(const uint8_t *s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(s[i]);
        if (h < 0) return -1;
        v = v << 4 | h;
    }
    return v;
}

/* A string starting at the opening quote; leaves pos after the closing one. */
static tmem_status parse_string(parser *p, uint32_t *out, uint8_t extra_flags) {
    const uint8_t *t = p->j->text;
    uint64_t n = p->j->len, start = p->pos;
    p->pos++;
    uint32_t idx;
    tmem_status st = new_node(p, TMEM_JSON_STRING, &idx);
    if (st) return st;
    uint8_t flags = extra_flags;
    for (;;) {
        if (p->pos >= n) return fail(p, TMEM_E_PARSE, start, "unterminated string");
        uint8_t c = t[p->pos];
        if (c == '"') break;
        if (c < 0x20) return fail(p, TMEM_E_PARSE, p->pos, "control byte 0x%02x in a string (must be escaped)", c);
        if (c == '\\') {
            flags |= F_ESCAPED;
            if (p->pos + 1 >= n) return fail(p, TMEM_E_PARSE, p->pos, "unterminated escape");
            uint8_t e = t[p->pos + 1];
            if (e == 'u') {
                if (n - p->pos < 6) return fail(p, TMEM_E_PARSE, p->pos, "truncated \\u escape");
                int u = hex4(t + p->pos + 2);
                if (u < 0) return fail(p, TMEM_E_PARSE, p->pos, "bad hex digits in \\u escape");
                if (u >= 0xDC00 && u <= 0xDFFF)
                    return fail(p, TMEM_E_PARSE, p->pos, "lone low surrogate \\u%04x", (unsigned)u);
                if (u >= 0xD800 && u <= 0xDBFF) {
                    int lo = (n - p->pos >= 12 && t[p->pos + 6] == '\\' && t[p->pos + 7] == 'u') ? hex4(t + p->pos + 8) : -1;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return fail(p, TMEM_E_PARSE, p->pos, "high surrogate \\u%04x not followed by a low one", (unsigned)u);
                    p->pos += 12;
                } else {
                    p->pos += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0)
                return fail(p, TMEM_E_PARSE, p->pos, "unknown escape '\\%c'", e >= 0x20 && e < 0x7F ? e : '?');
            p->pos += 2;
            continue;
        }
        uint32_t l = (uint32_t)tmem__utf8_valid_len(t + p->pos, (size_t)(n - p->pos));
        if (!l) return fail(p, TMEM_E_PARSE, p->pos, "invalid UTF-8 in a string");
        p->pos += l;
    }
    uint64_t len = p->pos - start - 1;
    if (len > UINT32_MAX) return fail(p, TMEM_E_PARSE, start, "string longer than 4 GiB");
    jnode *node = &p->j->nodes[idx];
    node->off = start + 1;
    node->len = (uint32_t)len;
    node->flags = flags;
    p->pos++;
    *out = idx;
    return TMEM_OK;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static tmem_status parse_number(parser *p, uint32_t *out) {
    const uint8_t *t = p->j->text;
    uint64_t n = p->j->len, start = p->pos, i = p->pos;
    bool integer = true;
    if (i < n && t[i] == '-') i++;
    if (i >= n || !is_digit(t[i])) return fail(p, TMEM_E_PARSE, start, "bad number: a digit must follow");
    if (t[i] == '0') {
        i++;
        if (i < n && is_digit(t[i])) return fail(p, TMEM_E_PARSE, start, "bad number: leading zero");
    } else {
        while (i < n && is_digit(t[i])) i++;
    }
    if (i < n && t[i] == '.') {
        integer = false;
        i++;
        if (i >= n || !is_digit(t[i])) return fail(p, TMEM_E_PARSE, i, "bad number: a digit must follow '.'");
        while (i < n && is_digit(t[i])) i++;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        integer = false;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-')) i++;
        if (i >= n || !is_digit(t[i])) return fail(p, TMEM_E_PARSE, i, "bad number: exponent without digits");
        while (i < n && is_digit(t[i])) i++;
    }
    if (i - start > 511) return fail(p, TMEM_E_PARSE, start, "number longer than 511 characters");
    uint32_t idx;
    tmem_status st = new_node(p, TMEM_JSON_NUMBER, &idx);
    if (st) return st;
    p->j->nodes[idx].len = (uint32_t)(i - start);
    p->j->nodes[idx].flags = integer ? F_INTEGER : 0;
    p->pos = i;
    *out = idx;
    return TMEM_OK;
}

static tmem_status parse_literal(parser *p, const char *word, uint8_t type, uint32_t *out) {
    size_t wl = strlen(word);
    if (p->j->len - p->pos < wl || memcmp(p->j->text + p->pos, word, wl))
        return fail(p, TMEM_E_PARSE, p->pos, "unexpected character '%c'",
                    p->j->text[p->pos] >= 0x20 && p->j->text[p->pos] < 0x7F ? p->j->text[p->pos] : '?');
    uint32_t idx;
    tmem_status st = new_node(p, type, &idx);
    if (st) return st;
    p->j->nodes[idx].len = (uint32_t)wl;
    p->pos += wl;
    *out = idx;
    return TMEM_OK;
}

/* ---- decoded-string comparison (for key order and duplicates) ---- */

typedef struct siter {
    const uint8_t *p, *end;
    uint8_t buf[4];
    int bn, bi;
} siter;

static void siter_init(siter *it, const tmem_json *j, const jnode *n) {
    it->p = j->text + n->off;
    it->end = it->p + n->len;
    it->bn = it->bi = 0;
}

static int put_utf8(uint8_t *b, uint32_t cp) {
    if (cp < 0x80) { b[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { b[0] = (uint8_t)(0xC0 | cp >> 6); b[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12); b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (uint8_t)(0xF0 | cp >> 18); b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F)); b[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Next decoded byte, -1 at the end (the string was validated). */
static int siter_next(siter *it) {
    if (it->bi < it->bn) return it->buf[it->bi++];
    if (it->p >= it->end) return -1;
    uint8_t c = *it->p;
    if (c != '\\') {
        it->p++;
        return c;
    }
    uint8_t e = it->p[1];
    uint32_t cp;
    switch (e) {
    case 'b': cp = '\b'; it->p += 2; break;
    case 'f': cp = '\f'; it->p += 2; break;
    case 'n': cp = '\n'; it->p += 2; break;
    case 'r': cp = '\r'; it->p += 2; break;
    case 't': cp = '\t'; it->p += 2; break;
    case 'u': {
        cp = (uint32_t)hex4(it->p + 2);
        it->p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo = (uint32_t)hex4(it->p + 2);
            it->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        break;
    }
    default: cp = e; it->p += 2; break; /* \" \\ \/ */
    }
    it->bn = put_utf8(it->buf, cp);
    it->bi = 1;
    return it->buf[0];
}

static int node_str_cmp(const tmem_json *j, uint32_t a, uint32_t b) {
    const jnode *x = &j->nodes[a], *y = &j->nodes[b];
    if (!((x->flags | y->flags) & F_ESCAPED)) {
        int r = memcmp(j->text + x->off, j->text + y->off, x->len < y->len ? x->len : y->len);
        if (r) return r;
        return x->len < y->len ? -1 : x->len > y->len;
    }
    siter s, t;
    siter_init(&s, j, x);
    siter_init(&t, j, y);
    for (;;) {
        int c = siter_next(&s), d = siter_next(&t);
        if (c != d) return c < d ? -1 : 1;
        if (c < 0) return 0;
    }
}

static int node_cstr_cmp(const tmem_json *j, uint32_t a, const char *s) {
    siter it;
    siter_init(&it, j, &j->nodes[a]);
    const uint8_t *q = (const uint8_t *)s;
    for (;; q++) {
        int c = siter_next(&it), d = *q ? *q : -1;
        if (c != d) return c < d ? -1 : 1;
        if (c < 0) return 0;
    }
}

static int key_cmp(const void *ctx, uint32_t a, uint32_t b) { return node_str_cmp(ctx, a, b); }

/* Sorting a big object's keys: each comparison first looks at the keys'
 * first 8 decoded bytes, kept next to each other (big-endian, zero padded:
 * integer order = byte order; equal prefixes fall back to the full
 * comparison), instead of chasing two nodes and two places in the text. A
 * Qwen-sized vocabulary object sorts about 3x faster. */
typedef struct prefix_sort {
    const tmem_json *j;
    const uint32_t *refs;
    const uint64_t *pre;
} prefix_sort;

static int prefix_cmp(const void *ctx, uint32_t a, uint32_t b) {
    const prefix_sort *ps = ctx;
    if (ps->pre[a] != ps->pre[b]) return ps->pre[a] < ps->pre[b] ? -1 : 1;
    return node_str_cmp(ps->j, ps->refs[a], ps->refs[b]);
}

static uint64_t key_prefix(const tmem_json *j, uint32_t ref) {
    siter it;
    siter_init(&it, j, &j->nodes[ref]);
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) {
        int c = siter_next(&it);
        x = x << 8 | (uint64_t)(c < 0 ? 0 : c);
        if (c < 0) {
            x <<= 8 * (7 - i);
            break;
        }
    }
    return x;
}

/* Sort the refs a[0..n) by decoded key; the prefix form when memory allows. */
static void sort_keys(tmem_json *j, uint32_t *a, uint32_t n) {
    uint64_t *pre = n > 64 ? tmem__model_alloc(j->ctx, (size_t)n * sizeof *pre) : NULL;
    uint32_t *pos = pre ? tmem__model_alloc(j->ctx, (size_t)n * sizeof *pos) : NULL;
    uint32_t *refs = pos ? tmem__model_alloc(j->ctx, (size_t)n * sizeof *refs) : NULL;
    if (!refs) {
        tmem__index_sort(a, n, key_cmp, j); /* small, or no memory for the faster form */
    } else {
        for (uint32_t i = 0; i < n; i++) {
            pos[i] = i;
            refs[i] = a[i];
            pre[i] = key_prefix(j, a[i]);
        }
        prefix_sort ps = {j, refs, pre};
        tmem__index_sort(pos, n, prefix_cmp, &ps);
        for (uint32_t i = 0; i < n; i++) a[i] = refs[pos[i]];
    }
    tmem__model_free(j->ctx, refs, refs ? (size_t)n * sizeof *refs : 0);
    tmem__model_free(j->ctx, pos, pos ? (size_t)n * sizeof *pos : 0);
    tmem__model_free(j->ctx, pre, pre ? (size_t)n * sizeof *pre : 0);
}

/* Record an object's keys in the shared index, sorted; refuse duplicates. */
static tmem_status index_object(parser *p, uint32_t obj) {
    tmem_json *j = p->j;
    uint32_t count = j->nodes[obj].count;
    if (count == 0) { /* nothing to index (and no NULL + 0 below: fuzz/safetensors found it) */
        j->nodes[obj].len = j->n_sorted;
        return TMEM_OK;
    }
    if ((uint64_t)j->n_sorted + count > UINT32_MAX) return tmem__err(TMEM_E_OVERFLOW);
    if (j->n_sorted + count > j->cap_sorted) {
        uint64_t nc = j->cap_sorted ? j->cap_sorted : 64;
        while (nc < (uint64_t)j->n_sorted + count) nc *= 2;
        if (nc > UINT32_MAX || nc * sizeof(uint32_t) > SIZE_MAX) return tmem__err(TMEM_E_OVERFLOW);
        uint32_t *s = tmem__model_alloc(j->ctx, (size_t)nc * sizeof(uint32_t));
        if (!s) return tmem__err(TMEM_E_NO_MEMORY);
        if (j->n_sorted) memcpy(s, j->sorted, (size_t)j->n_sorted * sizeof(uint32_t));
        tmem__model_free(j->ctx, j->sorted, (size_t)j->cap_sorted * sizeof(uint32_t));
        j->sorted = s;
        j->cap_sorted = (uint32_t)nc;
    }
    uint32_t *a = j->sorted + j->n_sorted, k = obj + 1;
    for (uint32_t i = 0; i < count; i++, k = j->nodes[k].next) a[i] = k;
    sort_keys(j, a, count);
    for (uint32_t i = 0; i + 1 < count; i++)
        if (!node_str_cmp(j, a[i], a[i + 1])) {
            const jnode *dup = &j->nodes[a[i] > a[i + 1] ? a[i] : a[i + 1]];
            return fail(p, TMEM_E_CORRUPT, dup->off - 1, "duplicate key \"%.*s\"", (int)(dup->len > 60 ? 60 : dup->len),
                        (const char *)j->text + dup->off);
        }
    j->nodes[obj].len = j->n_sorted;
    j->n_sorted += count;
    return TMEM_OK;
}

static tmem_status parse_value(parser *p, uint32_t depth, uint32_t *out);

static tmem_status parse_container(parser *p, uint32_t depth, bool object, uint32_t *out) {
    uint64_t start = p->pos;
    if (depth >= TMEM_JSON_MAX_DEPTH)
        return fail(p, TMEM_E_PARSE, start, "nested deeper than %d levels", TMEM_JSON_MAX_DEPTH);
    uint32_t idx;
    tmem_status st = new_node(p, object ? TMEM_JSON_OBJECT : TMEM_JSON_ARRAY, &idx);
    if (st) return st;
    p->pos++;
    skip_ws(p);
    const uint8_t *t = p->j->text;
    char close = object ? '}' : ']';
    uint32_t prev = 0, count = 0;
    if (p->pos < p->j->len && t[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            uint32_t item;
            if (object) {
                if (p->pos >= p->j->len || t[p->pos] != '"')
                    return fail(p, TMEM_E_PARSE, p->pos, "expected a string key");
                if ((st = parse_string(p, &item, F_KEY))) return st;
                skip_ws(p);
                if (p->pos >= p->j->len || t[p->pos] != ':')
                    return fail(p, TMEM_E_PARSE, p->pos, "expected ':' after an object key");
                p->pos++;
                uint32_t value;
                if ((st = parse_value(p, depth + 1, &value))) return st;
            } else if ((st = parse_value(p, depth + 1, &item))) {
                return st;
            }
            if (count == UINT32_MAX) return fail(p, TMEM_E_PARSE, start, "too many items");
            if (count) p->j->nodes[prev].next = item;
            prev = item;
            count++;
            skip_ws(p);
            if (p->pos >= p->j->len)
                return fail(p, TMEM_E_PARSE, start, "unterminated %s", object ? "object" : "array");
            if (t[p->pos] == ',') {
                p->pos++;
                skip_ws(p);
                if (p->pos < p->j->len && t[p->pos] == close)
                    return fail(p, TMEM_E_PARSE, p->pos, "trailing comma before '%c'", close);
                continue;
            }
            if (t[p->pos] == close) {
                p->pos++;
                break;
            }
            return fail(p, TMEM_E_PARSE, p->pos, "expected ',' or '%c'", close);
        }
    }
    p->j->nodes[idx].count = count;
    if (object && (st = index_object(p, idx))) return st;
    *out = idx;
    return TMEM_OK;
}

static tmem_status parse_value(parser *p, uint32_t depth, uint32_t *out) {
    skip_ws(p);
    if (p->pos >= p->j->len) return fail(p, TMEM_E_PARSE, p->pos, "unexpected end of text, expected a value");
    uint8_t c = p->j->text[p->pos];
    switch (c) {
    case '{': return parse_container(p, depth, true, out);
    case '[': return parse_container(p, depth, false, out);
    case '"': return parse_string(p, out, 0);
    case 't': return parse_literal(p, "true", TMEM_JSON_BOOL, out);
    case 'f': return parse_literal(p, "false", TMEM_JSON_BOOL, out);
    case 'n': return parse_literal(p, "null", TMEM_JSON_NULL, out);
    default:
        if (c == '-' || is_digit(c)) return parse_number(p, out);
        return parse_literal(p, "\x01", TMEM_JSON_NULL, out); /* reports the character */
    }
}

void tmem_json_free(tmem_json *j) {
    if (!j) return;
    tmem__model_free(j->ctx, j->nodes, (size_t)j->cap_nodes * sizeof(jnode));
    tmem__model_free(j->ctx, j->sorted, (size_t)j->cap_sorted * sizeof(uint32_t));
    tmem__model_free(j->ctx, j, sizeof *j);
}

tmem_status tmem_json_parse(tmem_context *ctx, const char *text, size_t len, tmem_json **out, tmem_json_error *err) {
    if (out) *out = NULL;
    if (err) memset(err, 0, sizeof *err);
    if (!out || (!text && len)) return tmem__err(TMEM_E_INVALID_ARG);
    if ((uint64_t)len >= UINT32_MAX) return tmem__err(TMEM_E_OVERFLOW);
    tmem_json *j = tmem__model_alloc(ctx, sizeof *j);
    if (!j) return tmem__err(TMEM_E_NO_MEMORY);
    memset(j, 0, sizeof *j);
    j->ctx = ctx;
    j->text = (const uint8_t *)(text ? text : "");
    j->len = len;
    parser p = {j, 0, err};
    uint32_t root;
    tmem_status st = parse_value(&p, 0, &root);
    if (!st) {
        skip_ws(&p);
        if (p.pos != j->len) st = fail(&p, TMEM_E_PARSE, p.pos, "text after the JSON value");
    }
    if (st) {
        if ((st == TMEM_E_NO_MEMORY || st == TMEM_E_OVERFLOW) && err)
            snprintf(err->message, sizeof err->message, "out of memory for the JSON nodes");
        tmem_json_free(j);
        return st;
    }
    *out = j;
    return TMEM_OK;
}

/* ---- queries ---- */

static const jnode *node_at(const tmem_json *j, tmem_json_ref v) {
    return j && v < j->n_nodes ? &j->nodes[v] : NULL;
}

tmem_json_type tmem_json_type_of(const tmem_json *j, tmem_json_ref v) {
    const jnode *n = node_at(j, v);
    return n ? (tmem_json_type)n->type : TMEM_JSON_NULL;
}

uint32_t tmem_json_count(const tmem_json *j, tmem_json_ref v) {
    const jnode *n = node_at(j, v);
    return n && (n->type == TMEM_JSON_ARRAY || n->type == TMEM_JSON_OBJECT) ? n->count : 0;
}

uint64_t tmem_json_offset(const tmem_json *j, tmem_json_ref v) {
    const jnode *n = node_at(j, v);
    return n ? (n->type == TMEM_JSON_STRING ? n->off - 1 : n->off) : 0;
}

tmem_status tmem_json_first(const tmem_json *j, tmem_json_ref c, tmem_json_ref *item) {
    const jnode *n = node_at(j, c);
    if (!n || !item || (n->type != TMEM_JSON_ARRAY && n->type != TMEM_JSON_OBJECT)) return tmem__err(TMEM_E_INVALID_ARG);
    if (!n->count) return TMEM_E_NOT_FOUND;
    *item = c + 1;
    return TMEM_OK;
}

tmem_status tmem_json_next(const tmem_json *j, tmem_json_ref item, tmem_json_ref *next) {
    const jnode *n = node_at(j, item);
    if (!n || !next || item == TMEM_JSON_ROOT) return tmem__err(TMEM_E_INVALID_ARG);
    if (!n->next) return TMEM_E_NOT_FOUND;
    *next = n->next;
    return TMEM_OK;
}

tmem_status tmem_json_member_value(const tmem_json *j, tmem_json_ref key, tmem_json_ref *value) {
    const jnode *n = node_at(j, key);
    if (!n || !value || !(n->flags & F_KEY)) return tmem__err(TMEM_E_INVALID_ARG);
    *value = key + 1;
    return TMEM_OK;
}

tmem_status tmem_json_at(const tmem_json *j, tmem_json_ref a, uint32_t i, tmem_json_ref *out) {
    const jnode *n = node_at(j, a);
    if (!n || !out || n->type != TMEM_JSON_ARRAY) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= n->count) return TMEM_E_NOT_FOUND;
    uint32_t k = a + 1;
    while (i--) k = j->nodes[k].next;
    *out = k;
    return TMEM_OK;
}

tmem_status tmem_json_get(const tmem_json *j, tmem_json_ref obj, const char *key, tmem_json_ref *out) {
    const jnode *n = node_at(j, obj);
    if (!n || !key || !out || n->type != TMEM_JSON_OBJECT) return tmem__err(TMEM_E_INVALID_ARG);
    const uint32_t *a = j->sorted + n->len;
    uint32_t lo = 0, hi = n->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int r = node_cstr_cmp(j, a[mid], key);
        if (r == 0) {
            *out = a[mid] + 1;
            return TMEM_OK;
        }
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return TMEM_E_NOT_FOUND;
}

tmem_status tmem_json_number(const tmem_json *j, tmem_json_ref v, double *out) {
    if (out) *out = 0;
    const jnode *n = node_at(j, v);
    if (!n || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (n->type != TMEM_JSON_NUMBER) return tmem__err(TMEM_E_PARSE);
    char buf[512];
    memcpy(buf, j->text + n->off, n->len); /* <= 511, checked at parse */
    buf[n->len] = 0;
    errno = 0;
    double d = strtod(buf, NULL);
    if (errno == ERANGE && isinf(d)) return tmem__err(TMEM_E_OVERFLOW);
    *out = d;
    return TMEM_OK;
}

tmem_status tmem_json_int(const tmem_json *j, tmem_json_ref v, int64_t *out) {
    if (out) *out = 0;
    const jnode *n = node_at(j, v);
    if (!n || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (n->type != TMEM_JSON_NUMBER || !(n->flags & F_INTEGER)) return tmem__err(TMEM_E_PARSE);
    const uint8_t *s = j->text + n->off;
    bool neg = s[0] == '-';
    uint64_t mag = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (uint32_t i = neg; i < n->len; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (mag > (lim - d) / 10) return tmem__err(TMEM_E_OVERFLOW);
        mag = mag * 10 + d;
    }
    *out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return TMEM_OK;
}

tmem_status tmem_json_bool(const tmem_json *j, tmem_json_ref v, bool *out) {
    if (out) *out = false;
    const jnode *n = node_at(j, v);
    if (!n || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (n->type != TMEM_JSON_BOOL) return tmem__err(TMEM_E_PARSE);
    *out = j->text[n->off] == 't';
    return TMEM_OK;
}

tmem_status tmem_json_string(const tmem_json *j, tmem_json_ref v, char *buf, size_t cap, size_t *len) {
    if (len) *len = 0;
    const jnode *n = node_at(j, v);
    if (!n || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (n->type != TMEM_JSON_STRING) return tmem__err(TMEM_E_PARSE);
    size_t need = 0;
    if (!(n->flags & F_ESCAPED)) {
        need = n->len;
    } else {
        siter it;
        siter_init(&it, j, n);
        while (siter_next(&it) >= 0) need++;
    }
    if (len) *len = need;
    if (cap < need + 1) return TMEM_E_FULL; /* a sizing answer */
    if (!(n->flags & F_ESCAPED)) {
        memcpy(buf, j->text + n->off, need);
    } else {
        siter it;
        siter_init(&it, j, n);
        int c;
        size_t k = 0;
        while ((c = siter_next(&it)) >= 0) buf[k++] = (char)c;
    }
    buf[need] = 0;
    return TMEM_OK;
}

bool tmem_json_string_eq(const tmem_json *j, tmem_json_ref v, const char *s) {
    const jnode *n = node_at(j, v);
    if (!n || !s || n->type != TMEM_JSON_STRING) return false;
    return node_cstr_cmp(j, v, s) == 0;
}
