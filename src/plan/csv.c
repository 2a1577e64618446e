/*
 * CSV reader for MiniMalloc's problem format (see plan.h): one header line
 * naming the columns, then one buffer per line. Every rejection names the
 * line and the column. No quoting (MiniMalloc's files have none): a field is
 * everything between commas, with surrounding blanks trimmed.
 */
#include "plan_internal.h"
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { COL_ID, COL_LO, COL_HI, COL_SIZE, COL_ALIGN, COL_OFF, COL_N };

typedef struct csv_state {
    tmem_plan_error *err;
    uint64_t line;
    const char *names[COL_N];    /* header spelling of each column, for errors */
} csv_state;

static tmem_status fail(csv_state *c, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tmem_status fail(csv_state *c, int col, const char *fmt, ...) {
    if (c->err) {
        c->err->line = c->line;
        snprintf(c->err->field, sizeof c->err->field, "%s", col >= 0 && c->names[col] ? c->names[col] : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
        va_end(ap);
    }
    return tmem__err(TMEM_E_PARSE);
}

typedef struct field { const char *p; size_t n; } field;

static field trim(const char *p, size_t n) {
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) n--;
    return (field){p, n};
}

static bool field_is(field f, const char *name) {
    size_t k = strlen(name);
    if (f.n != k) return false;
    for (size_t i = 0; i < k; i++) {
        char ch = f.p[i];
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
        if (ch != name[i]) return false;
    }
    return true;
}

static int header_column(field f) {
    static const struct { const char *name; int col; } map[] = {
        {"id", COL_ID},       {"buffer", COL_ID},   {"buffer_id", COL_ID}, {"lower", COL_LO},
        {"start", COL_LO},    {"begin", COL_LO},    {"upper", COL_HI},     {"end", COL_HI},
        {"size", COL_SIZE},   {"alignment", COL_ALIGN}, {"offset", COL_OFF},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (field_is(f, map[i].name)) return map[i].col;
    return -1;
}

/* Decimal integer, optional sign when `sign`; false on junk or overflow. */
static bool parse_u64(field f, uint64_t *out) {
    if (f.n == 0 || f.n > 40) return false;
    uint64_t v = 0;
    size_t i = 0;
    if (f.p[0] == '+') i++;
    if (i == f.n) return false;
    for (; i < f.n; i++) {
        unsigned d = (unsigned)(f.p[i] - '0');
        if (d > 9) return false;
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_i64(field f, int64_t *out) {
    bool neg = f.n && f.p[0] == '-';
    uint64_t v;
    if (!parse_u64(neg ? (field){f.p + 1, f.n - 1} : f, &v)) return false;
    if (neg && f.n > 1 && f.p[1] == '+') return false;
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static const char *show(field f, char *buf, size_t cap) {
    size_t k = f.n < cap - 4 ? f.n : cap - 4;
    size_t j = 0;
    for (size_t i = 0; i < k; i++) buf[j++] = (f.p[i] >= 32 && f.p[i] < 127) ? f.p[i] : '?';
    if (k < f.n) buf[j++] = '.', buf[j++] = '.', buf[j++] = '.';
    buf[j] = 0;
    return buf;
}

static tmem_status parse_row(csv_state *c, const int *cols, int ncols, const char *p, size_t n,
                             tmem_plan_problem *prob) {
    field fv[COL_N];
    bool have[COL_N] = {false};
    int k = 0;
    size_t a = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != ',') continue;
        if (k >= ncols) return fail(c, -1, "more fields than the header's %d columns", ncols);
        if (cols[k] >= 0) {
            fv[cols[k]] = trim(p + a, i - a);
            have[cols[k]] = true;
        }
        k++;
        a = i + 1;
    }
    if (k < ncols) return fail(c, -1, "%d fields, the header has %d columns", k, ncols);
    char shown[40];
    tmem_plan_buffer b = {0};
    char id[256];
    if (fv[COL_ID].n == 0) return fail(c, COL_ID, "empty id");
    if (fv[COL_ID].n > 255) return fail(c, COL_ID, "id longer than 255 bytes");
    memcpy(id, fv[COL_ID].p, fv[COL_ID].n);
    id[fv[COL_ID].n] = 0;
    if (memchr(id, 0, fv[COL_ID].n)) return fail(c, COL_ID, "id contains a NUL byte");
    b.id = id;
    if (!parse_i64(fv[COL_LO], &b.start))
        return fail(c, COL_LO, "'%s' is not a 64-bit integer",
                    show(fv[COL_LO], shown, sizeof shown));
    if (!parse_i64(fv[COL_HI], &b.end))
        return fail(c, COL_HI, "'%s' is not a 64-bit integer",
                    show(fv[COL_HI], shown, sizeof shown));
    if (fv[COL_SIZE].n && fv[COL_SIZE].p[0] == '-')
        return fail(c, COL_SIZE, "negative size '%s'", show(fv[COL_SIZE], shown, sizeof shown));
    if (!parse_u64(fv[COL_SIZE], &b.size))
        return fail(c, COL_SIZE, "'%s' is not an unsigned 64-bit integer",
                    show(fv[COL_SIZE], shown, sizeof shown));
    if (b.size == 0) return fail(c, COL_SIZE, "size must be > 0");
    if (b.end <= b.start)
        return fail(c, COL_HI, "end %lld <= start %lld (the end is exclusive)", (long long)b.end,
                    (long long)b.start);
    if (have[COL_ALIGN] && fv[COL_ALIGN].n) {
        if (!parse_u64(fv[COL_ALIGN], &b.alignment))
            return fail(c, COL_ALIGN, "'%s' is not an unsigned integer",
                        show(fv[COL_ALIGN], shown, sizeof shown));
        if (b.alignment && !tmem__is_pow2(b.alignment))
            return fail(c, COL_ALIGN, "%llu is not a power of two",
                        (unsigned long long)b.alignment);
    }
    if (have[COL_OFF] && fv[COL_OFF].n) {
        if (!parse_u64(fv[COL_OFF], &b.offset))
            return fail(c, COL_OFF, "'%s' is not an unsigned 64-bit integer",
                        show(fv[COL_OFF], shown, sizeof shown));
        b.flags |= TMEM_PLAN_BUFFER_FIXED;
        if (b.offset % (b.alignment ? b.alignment : 1))
            return fail(c, COL_OFF, "offset %llu is not a multiple of the alignment",
                        (unsigned long long)b.offset);
    }
    tmem_status st = tmem_plan_problem_add(prob, &b, NULL);
    switch (st) {
    case TMEM_OK: return TMEM_OK;
    case TMEM_E_EXISTS: return fail(c, COL_ID, "duplicate id '%s'", show(fv[COL_ID], shown, sizeof shown));
    case TMEM_E_OVERFLOW:
        return fail(c, b.flags & TMEM_PLAN_BUFFER_FIXED ? COL_OFF : COL_SIZE,
                    "sizes overflow 64 bits (offset + size, or the sum of all sizes)");
    case TMEM_E_NO_MEMORY: return st;
    default: return fail(c, -1, "buffer refused: %s", tmem_strerror(st));
    }
}

tmem_status tmem_plan_problem_parse_csv(const char *text, size_t len, tmem_plan_problem **out, tmem_plan_error *err) {
    if (out) *out = NULL;
    if (err) memset(err, 0, sizeof *err);
    if (!out || (!text && len)) return tmem__err(TMEM_E_INVALID_ARG);
    csv_state c = {err, 0, {NULL}};
    tmem_plan_problem *prob;
    tmem_status st = tmem_plan_problem_create(&prob);
    if (st) return st;
    static const char *const canonical[COL_N] = {"id", "lower", "upper", "size", "alignment", "offset"};
    int cols[64];
    int ncols = 0;
    bool header = false;
    size_t pos = 0;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        pos = 3;
    while (pos < len && st == TMEM_OK) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        const char *p = text + pos;
        size_t n = end - pos;
        pos = end + 1;
        c.line++;
        field all = trim(p, n);
        if (all.n == 0 || all.p[0] == '#') continue;
        if (c.line >= 0x7fffffffu) {
            st = fail(&c, -1, "too many lines");
            break;
        }
        if (!header) {
            size_t a = 0;
            for (size_t i = 0; i <= n; i++) {
                if (i < n && p[i] != ',') continue;
                if (ncols == 64) {
                    st = fail(&c, -1, "more than 64 columns in the header");
                    break;
                }
                field f = trim(p + a, i - a);
                int col = header_column(f);
                if (col >= 0) {
                    if (c.names[col]) {
                        st = fail(&c, col, "column given twice");
                        break;
                    }
                    c.names[col] = canonical[col];
                    /* remember the spelling used, for error messages */
                    static const char *const spell[] = {"id",    "buffer",    "buffer_id", "lower",
                                                        "start", "begin",     "upper",     "end",
                                                        "size",  "alignment", "offset"};
                    for (size_t s = 0; s < sizeof spell / sizeof spell[0]; s++)
                        if (field_is(f, spell[s])) c.names[col] = spell[s];
                }
                cols[ncols++] = col;
                a = i + 1;
            }
            if (st) break;
            for (int col = COL_ID; col <= COL_SIZE; col++)
                if (!c.names[col]) {
                    st = fail(&c, -1,
                              "header lacks the '%s' column (want id,lower,upper,size or "
                              "buffer,start,end,size)",
                              canonical[col]);
                    break;
                }
            header = true;
            continue;
        }
        st = parse_row(&c, cols, ncols, p, n, prob);
    }
    if (st == TMEM_OK && !header) {
        c.line = 0;
        st = fail(&c, -1, "empty input: no header line");
    }
    if (st == TMEM_OK && prob->n == 0) {
        c.line = 0;
        st = fail(&c, -1, "no buffers after the header");
    }
    if (st) {
        tmem_plan_problem_destroy(prob);
        return st;
    }
    *out = prob;
    return TMEM_OK;
}
