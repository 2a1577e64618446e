/* A tiny strict JSON parser and a JSON-Schema subset validator for tests
 * (type, required, properties, additionalProperties:false, items, enum,
 * minimum, const). Header-only so any test can include it. */
#ifndef TMEM_TEST_JSON_MINI_H
#define TMEM_TEST_JSON_MINI_H

/* Paths in messages may be cut short; that is fine. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_kind;
typedef struct jv {
    jv_kind kind;
    double num;
    bool is_int;
    char *str;
    struct jv **items; /* array items or object values */
    char **keys;       /* object keys */
    size_t n;
} jv;

typedef struct jparser {
    const char *p, *end;
    int depth;
    bool err;
} jparser;

static inline void jv_free(jv *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        jv_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static inline void jp_ws(jparser *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')) j->p++;
}

/* Four hex digits at j->p (advanced past them); -1 if malformed. */
static inline long jp_hex4(jparser *j) {
    if (j->end - j->p < 4) return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        char h = j->p[k];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    j->p += 4;
    return v;
}

/* A \uXXXX escape (j->p after the 'u'), a surrogate pair joined, as UTF-8
 * into out (up to 4 bytes); returns the byte count, 0 if malformed. A
 * "\u0000" ends the C string early: fine for tests, which compare texts. */
static inline int jp_unicode(jparser *j, char *out) {
    long cp = jp_hex4(j);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') return 0;
        j->p += 2;
        long lo = jp_hex4(j);
        if (lo < 0xDC00 || lo > 0xDFFF) return 0;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) {
        return 0;
    }
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 63));
        out[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 63));
    out[2] = (char)(0x80 | ((cp >> 6) & 63)); out[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static inline char *jp_string(jparser *j) {
    if (j->p >= j->end || *j->p != '"') { j->err = true; return NULL; }
    j->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (j->p < j->end && *j->p != '"') {
        char buf[4];
        int len = 1;
        buf[0] = *j->p++;
        if ((unsigned char)buf[0] < 0x20) { j->err = true; break; }
        if (buf[0] == '\\') {
            if (j->p >= j->end) { j->err = true; break; }
            char e = *j->p++;
            if (e == 'u') {
                len = jp_unicode(j, buf);
                if (len == 0) { j->err = true; break; }
            } else if (e && strchr("\"\\/bfnrt", e)) {
                buf[0] = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r'
                       : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            } else { j->err = true; break; }
        }
        while (n + (size_t)len + 1 > cap) s = realloc(s, cap *= 2);
        memcpy(s + n, buf, (size_t)len);
        n += (size_t)len;
    }
    if (j->p >= j->end) j->err = true;
    else j->p++;
    s[n] = '\0';
    return s;
}

static inline jv *jp_value(jparser *j);

static inline jv *jv_new(jv_kind k) {
    jv *v = calloc(1, sizeof *v);
    v->kind = k;
    return v;
}

static inline void jv_push(jv *v, char *key, jv *item) {
    v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
    if (v->kind == JV_OBJ) v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys), v->keys[v->n] = key;
    v->items[v->n++] = item;
}

static inline jv *jp_value(jparser *j) {
    jp_ws(j);
    if (j->p >= j->end || ++j->depth > 64) { j->err = true; return NULL; }
    jv *v = NULL;
    char c = *j->p;
    if (c == '{' || c == '[') {
        bool obj = c == '{';
        v = jv_new(obj ? JV_OBJ : JV_ARR);
        j->p++;
        jp_ws(j);
        if (j->p < j->end && *j->p == (obj ? '}' : ']')) { j->p++; j->depth--; return v; }
        for (;;) {
            char *key = NULL;
            if (obj) {
                jp_ws(j);
                key = jp_string(j);
                jp_ws(j);
                if (j->err || j->p >= j->end || *j->p != ':') { free(key); j->err = true; break; }
                j->p++;
            }
            jv *item = jp_value(j);
            if (j->err) { free(key); jv_free(item); break; }
            jv_push(v, key, item);
            jp_ws(j);
            if (j->p < j->end && *j->p == ',') { j->p++; continue; }
            if (j->p < j->end && *j->p == (obj ? '}' : ']')) { j->p++; break; }
            j->err = true;
            break;
        }
    } else if (c == '"') {
        v = jv_new(JV_STR);
        v->str = jp_string(j);
    } else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
        v = jv_new(JV_BOOL);
        v->num = *j->p == 't';
        j->p += *j->p == 't' ? 4 : 5;
    } else if (!strncmp(j->p, "null", 4)) {
        v = jv_new(JV_NULL);
        j->p += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        const char *s = j->p;
        if (*j->p == '-') j->p++;
        if (j->p >= j->end || !(*j->p >= '0' && *j->p <= '9')) j->err = true;
        if (j->p < j->end && *j->p == '0' && j->p + 1 < j->end && j->p[1] >= '0' && j->p[1] <= '9') j->err = true;
        bool integer = true;
        while (j->p < j->end && strchr("0123456789.eE+-", *j->p)) {
            if (strchr(".eE", *j->p)) integer = false;
            j->p++;
        }
        v = jv_new(JV_NUM);
        char tmp[64];
        size_t n = (size_t)(j->p - s) < sizeof tmp - 1 ? (size_t)(j->p - s) : sizeof tmp - 1;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        char *e;
        v->num = strtod(tmp, &e);
        if (*e) j->err = true;
        v->is_int = integer;
    } else {
        j->err = true;
    }
    j->depth--;
    return v;
}

/* Parse exactly one value (trailing whitespace allowed); NULL if malformed. */
static inline jv *json_parse(const char *text, size_t len) {
    jparser j = {text, text + len, 0, false};
    jv *v = jp_value(&j);
    jp_ws(&j);
    if (j.err || j.p != j.end) { jv_free(v); return NULL; }
    return v;
}

static inline jv *jv_get(const jv *v, const char *key) {
    if (!v || v->kind != JV_OBJ) return NULL;
    for (size_t i = 0; i < v->n; i++) if (!strcmp(v->keys[i], key)) return v->items[i];
    return NULL;
}

static inline double jv_num(const jv *v) { return v && v->kind == JV_NUM ? v->num : NAN; }

/* ---- schema subset ---- */
static inline bool js_type_ok(const jv *v, const char *t) {
    if (!strcmp(t, "object")) return v->kind == JV_OBJ;
    if (!strcmp(t, "array")) return v->kind == JV_ARR;
    if (!strcmp(t, "string")) return v->kind == JV_STR;
    if (!strcmp(t, "integer")) return v->kind == JV_NUM && v->is_int;
    if (!strcmp(t, "number")) return v->kind == JV_NUM;
    if (!strcmp(t, "boolean")) return v->kind == JV_BOOL;
    if (!strcmp(t, "null")) return v->kind == JV_NULL;
    return false;
}

static inline bool jv_equal(const jv *a, const jv *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == JV_STR) return !strcmp(a->str, b->str);
    if (a->kind == JV_NUM || a->kind == JV_BOOL) return a->num == b->num;
    return a->kind == JV_NULL;
}

/* Validate v against schema s (root for $ref "#/$defs/x"); writes the first
 * problem into why. */
static inline bool json_validate(const jv *v, const jv *s, const jv *root, const char *path, char *why, size_t cap) {
    const jv *ref = jv_get(s, "$ref");
    if (ref && ref->kind == JV_STR && !strncmp(ref->str, "#/$defs/", 8)) {
        const jv *target = jv_get(jv_get(root, "$defs"), ref->str + 8);
        if (!target) { snprintf(why, cap, "%s: unresolved %s", path, ref->str); return false; }
        return json_validate(v, target, root, path, why, cap);
    }
    const jv *t = jv_get(s, "type");
    if (t) {
        bool ok = false;
        if (t->kind == JV_STR) ok = js_type_ok(v, t->str);
        else if (t->kind == JV_ARR) for (size_t i = 0; i < t->n; i++) ok |= js_type_ok(v, t->items[i]->str);
        if (!ok) { snprintf(why, cap, "%s: wrong type", path); return false; }
    }
    const jv *en = jv_get(s, "enum");
    if (en) {
        bool ok = false;
        for (size_t i = 0; i < en->n; i++) ok |= jv_equal(v, en->items[i]);
        if (!ok) { snprintf(why, cap, "%s: not in enum", path); return false; }
    }
    const jv *cn = jv_get(s, "const");
    if (cn && !jv_equal(v, cn)) { snprintf(why, cap, "%s: not the const", path); return false; }
    const jv *mn = jv_get(s, "minimum");
    if (mn && v->kind == JV_NUM && v->num < mn->num) { snprintf(why, cap, "%s: below minimum", path); return false; }
    const jv *mx = jv_get(s, "maximum");
    if (mx && v->kind == JV_NUM && v->num > mx->num) { snprintf(why, cap, "%s: above maximum", path); return false; }
    char sub[256];
    if (v->kind == JV_OBJ) {
        const jv *req = jv_get(s, "required");
        for (size_t i = 0; req && i < req->n; i++)
            if (!jv_get(v, req->items[i]->str)) { snprintf(why, cap, "%s: missing %s", path, req->items[i]->str); return false; }
        const jv *props = jv_get(s, "properties");
        const jv *addl = jv_get(s, "additionalProperties");
        for (size_t i = 0; i < v->n; i++) {
            const jv *ps = jv_get(props, v->keys[i]);
            snprintf(sub, sizeof sub, "%s.%s", path, v->keys[i]);
            if (!ps) {
                if (addl && addl->kind == JV_BOOL && !addl->num) { snprintf(why, cap, "%s: not allowed", sub); return false; }
                continue;
            }
            if (!json_validate(v->items[i], ps, root, sub, why, cap)) return false;
        }
    }
    if (v->kind == JV_ARR) {
        const jv *items = jv_get(s, "items");
        for (size_t i = 0; items && i < v->n; i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!json_validate(v->items[i], items, root, sub, why, cap)) return false;
        }
    }
    return true;
}

/* Read a whole file (caller frees); NULL if absent. */
static inline char *read_file_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = '\0';
    *len = got;
    return b;
}

#endif
