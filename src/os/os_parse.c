/*
 * Pure parsers for the text Linux exposes under /proc and cgroupfs.
 *
 * They take (text, len) — any bytes, not NUL-terminated — and never read past
 * len, never allocate, and never trust the content: numbers are checked for
 * overflow, a line is used only when it is fully understood, buffers are
 * bounded. The fuzz target and tests/unit/test_os_parse.c feed them strings.
 */
#include "os/os_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct span { const char *p, *end; } span;

/* Next line of *it (without the '\n'); false at the end. */
static bool next_line(span *it, span *line) {
    if (it->p >= it->end) return false;
    const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
    line->p = it->p;
    line->end = nl ? nl : it->end;
    it->p = nl ? nl + 1 : it->end;
    return true;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
static void skip_space(span *s) {
    while (s->p < s->end && is_space(*s->p)) s->p++;
}
static void trim_end(span *s) {
    while (s->end > s->p && (is_space(s->end[-1]) || s->end[-1] == '\0')) s->end--;
}

/* Decimal digits; false when none or on overflow. */
static bool take_u64(span *s, uint64_t *out) {
    uint64_t v = 0;
    const char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s->p - '0'), &v)) return false;
        s->p++;
    }
    *out = v;
    return s->p > start;
}

/* Does s start with the word w (len bytes)? Consumes it if so. */
static bool take_word(span *s, const char *w, size_t len) {
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, w, len) != 0) return false;
    s->p += len;
    return true;
}

static bool span_eq(span s, const char *w) {
    size_t n = strlen(w);
    return (size_t)(s.end - s.p) == n && memcmp(s.p, w, n) == 0;
}

/* "Key:   <n> kB" (or no unit) -> bytes. `key` includes the colon. */
static bool kv_line(span line, const char *key, uint64_t *out) {
    if (!take_word(&line, key, strlen(key))) return false;
    skip_space(&line);
    trim_end(&line);
    uint64_t v;
    if (!take_u64(&line, &v)) return false;
    skip_space(&line);
    if (line.p == line.end) {
        *out = v;
        return true;
    }
    if (!take_word(&line, "kB", 2) || line.p != line.end) return false;
    return !__builtin_mul_overflow(v, 1024, out);
}

typedef struct field { const char *key; size_t offset; } field;

/* Parse "Key: value" text into the uint64_t fields at the given offsets of
 * `base`; returns how many were set. */
static unsigned parse_fields(const char *text, size_t len, const field *fields, size_t nfields, void *base) {
    span it = {text, text + len}, line;
    unsigned found = 0;
    while (next_line(&it, &line)) {
        for (size_t i = 0; i < nfields; i++) {
            uint64_t v;
            if (kv_line(line, fields[i].key, &v)) {
                memcpy((char *)base + fields[i].offset, &v, sizeof v);
                found++;
                break;
            }
        }
    }
    return found;
}

tmem_status tmem__os_parse_smaps_rollup(const char *text, size_t len, tmem_footprint *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!text) return TMEM_E_INVALID_ARG;
    static const field k_fields[] = {
        {"Rss:", offsetof(tmem_footprint, rss)},
        {"Private_Dirty:", offsetof(tmem_footprint, private_dirty)},
        {"Private_Clean:", offsetof(tmem_footprint, private_clean)},
        {"Shared_Clean:", offsetof(tmem_footprint, shared_clean)},
        {"Shared_Dirty:", offsetof(tmem_footprint, shared_dirty)},
        {"Anonymous:", offsetof(tmem_footprint, anonymous)},
        {"Swap:", offsetof(tmem_footprint, swap)},
        {"Pss_Dirty:", offsetof(tmem_footprint, pss_dirty)},
        {"SwapPss:", offsetof(tmem_footprint, swap_pss)},
    };
    tmem_footprint tmp = {0};
    if (parse_fields(text, len, k_fields, sizeof k_fields / sizeof k_fields[0], &tmp) == 0) return TMEM_E_PARSE;
    /* Pss_Dirty counts a page mapped twice once; without it (Linux < 6.0),
     * the per-mapping sums are the honest upper bound. */
    bool has_pss_dirty = memmem(text, len, "Pss_Dirty:", 10) != NULL;
    tmp.footprint = has_pss_dirty ? tmp.pss_dirty + tmp.swap_pss
                                  : tmp.private_dirty + tmp.shared_dirty + tmp.swap;
    *out = tmp;
    return TMEM_OK;
}

tmem_status tmem__os_parse_meminfo(const char *text, size_t len, tmem__os_meminfo *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!text) return TMEM_E_INVALID_ARG;
    static const uint64_t k_absent = UINT64_MAX;
    struct { uint64_t total, avail, hsize, htotal, hfree; } v = {k_absent, k_absent, 0, 0, 0};
    static const field k_fields[] = {
        {"MemTotal:", 0 * sizeof(uint64_t)},       {"MemAvailable:", 1 * sizeof(uint64_t)},
        {"Hugepagesize:", 2 * sizeof(uint64_t)},   {"HugePages_Total:", 3 * sizeof(uint64_t)},
        {"HugePages_Free:", 4 * sizeof(uint64_t)},
    };
    (void)parse_fields(text, len, k_fields, sizeof k_fields / sizeof k_fields[0], &v);
    if (v.total == k_absent && v.avail == k_absent) return TMEM_E_PARSE;
    out->mem_total = v.total == k_absent ? 0 : v.total;
    out->has_available = v.avail != k_absent;
    out->mem_available = out->has_available ? v.avail : 0;
    out->huge_page_size = v.hsize;
    out->huge_pages_total = v.htotal;
    out->huge_pages_free = v.hfree;
    return TMEM_OK;
}

/* Copy s into buf as a C string; false (buf = "") when it does not fit. */
static bool copy_span(span s, char *buf, size_t cap) {
    if (!buf || cap == 0) return false;
    size_t n = (size_t)(s.end - s.p);
    if (n >= cap || memchr(s.p, '\0', n)) {
        buf[0] = '\0';
        return false;
    }
    memcpy(buf, s.p, n);
    buf[n] = '\0';
    return true;
}

/* Is `word` one item of the comma-separated list s? */
static bool list_has(span s, const char *word) {
    size_t wl = strlen(word);
    while (s.p <= s.end) {
        const char *c = memchr(s.p, ',', (size_t)(s.end - s.p));
        const char *e = c ? c : s.end;
        if ((size_t)(e - s.p) == wl && memcmp(s.p, word, wl) == 0) return true;
        if (!c) break;
        s.p = c + 1;
    }
    return false;
}

tmem_status tmem__os_parse_proc_cgroup(const char *text, size_t len, char *v2_path, size_t v2_cap, char *v1_path,
                                       size_t v1_cap) {
    if (v2_path && v2_cap) v2_path[0] = '\0';
    if (v1_path && v1_cap) v1_path[0] = '\0';
    if (!text || !v2_path || !v1_path || !v2_cap || !v1_cap) return TMEM_E_INVALID_ARG;
    span it = {text, text + len}, line;
    bool v2 = false, v1 = false;
    while (next_line(&it, &line)) {
        trim_end(&line);
        /* hierarchy-ID ":" controller-list ":" path (the path may hold ':') */
        const char *c1 = memchr(line.p, ':', (size_t)(line.end - line.p));
        if (!c1) continue;
        const char *c2 = memchr(c1 + 1, ':', (size_t)(line.end - c1 - 1));
        if (!c2) continue;
        span id = {line.p, c1}, ctl = {c1 + 1, c2}, path = {c2 + 1, line.end};
        if (path.p == path.end || *path.p != '/') continue;
        if (!v2 && span_eq(id, "0") && ctl.p == ctl.end) v2 = copy_span(path, v2_path, v2_cap);
        else if (!v1 && ctl.p != ctl.end && list_has(ctl, "memory")) v1 = copy_span(path, v1_path, v1_cap);
    }
    return v2 || v1 ? TMEM_OK : TMEM_E_PARSE;
}

/* Next space-separated token of s. */
static bool next_token(span *s, span *tok) {
    skip_space(s);
    if (s->p >= s->end) return false;
    tok->p = s->p;
    while (s->p < s->end && !is_space(*s->p)) s->p++;
    tok->end = s->p;
    return true;
}

/* Copy a mountinfo path, decoding \ooo octal escapes; false if it does not fit
 * or an escape is malformed. */
static bool copy_unescaped(span s, char *buf, size_t cap) {
    size_t n = 0;
    for (const char *p = s.p; p < s.end; p++) {
        char c = *p;
        if (c == '\\') {
            if (s.end - p < 4) return false;
            unsigned v = 0;
            for (int i = 1; i <= 3; i++) {
                if (p[i] < '0' || p[i] > '7') return false;
                v = v * 8 + (unsigned)(p[i] - '0');
            }
            if (v == 0 || v > 255) return false;
            c = (char)v;
            p += 3;
        }
        if (c == '\0' || n + 1 >= cap) return false;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return n > 0;
}

tmem_status tmem__os_parse_mountinfo(const char *text, size_t len, tmem__os_cgroup_mounts *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!text) return TMEM_E_INVALID_ARG;
    span it = {text, text + len}, line;
    bool v2 = false, v1 = false;
    while (next_line(&it, &line)) {
        /* id parent major:minor root mount-point options [optional...] - fstype source super-options */
        span tok, root = {0, 0}, mount = {0, 0}, fstype = {0, 0}, super = {0, 0};
        int i = 0;
        bool sep = false;
        while (next_token(&line, &tok)) {
            if (!sep) {
                if (i == 3) root = tok;
                else if (i == 4) mount = tok;
                else if (i >= 6 && span_eq(tok, "-")) {
                    sep = true;
                    i = 0;
                    continue;
                }
            } else {
                if (i == 0) fstype = tok;
                else if (i == 2) super = tok;
            }
            i++;
        }
        if (!sep || !mount.p || !fstype.p) continue;
        if (!v2 && span_eq(fstype, "cgroup2")) {
            char m[256], r[256];
            if (copy_unescaped(mount, m, sizeof m) && copy_unescaped(root, r, sizeof r)) {
                memcpy(out->v2_mount, m, sizeof m);
                memcpy(out->v2_root, r, sizeof r);
                v2 = true;
            }
        } else if (!v1 && span_eq(fstype, "cgroup") && super.p && list_has(super, "memory")) {
            char m[256], r[256];
            if (copy_unescaped(mount, m, sizeof m) && copy_unescaped(root, r, sizeof r)) {
                memcpy(out->v1_mount, m, sizeof m);
                memcpy(out->v1_root, r, sizeof r);
                v1 = true;
            }
        }
    }
    return v2 || v1 ? TMEM_OK : TMEM_E_PARSE;
}

tmem_status tmem__os_parse_cgroup_value(const char *text, size_t len, uint64_t *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    *out = 0;
    if (!text) return TMEM_E_INVALID_ARG;
    span s = {text, text + len};
    skip_space(&s);
    trim_end(&s);
    if (span_eq(s, "max")) return TMEM_OK;
    uint64_t v;
    if (!take_u64(&s, &v) || s.p != s.end) return TMEM_E_PARSE;
    /* cgroup v1 writes "no limit" as PAGE_COUNTER_MAX * page size, just under
     * 2^63; nothing real is that large. */
    *out = v >= (1ull << 62) ? 0 : v;
    return TMEM_OK;
}

/* "12.34" -> 1234; at most two decimals are kept (more are truncated). */
static bool take_fixed2(span *s, uint32_t *out) {
    uint64_t whole, frac = 0;
    if (!take_u64(s, &whole)) return false;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        int digits = 0;
        const char *start = s->p;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
            if (digits < 2) frac = frac * 10 + (uint64_t)(*s->p - '0');
            digits++;
            s->p++;
        }
        if (s->p == start) return false;
        if (digits == 1) frac *= 10;
    }
    uint64_t v;
    if (__builtin_mul_overflow(whole, 100, &v) || __builtin_add_overflow(v, frac, &v) || v > UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

/* avg10 of one PSI line ("some avg10=..." ); false if malformed. */
static bool psi_line(span line, const char *kind, uint32_t *avg10) {
    span tok;
    if (!next_token(&line, &tok) || !span_eq(tok, kind)) return false;
    bool found = false;
    while (next_token(&line, &tok)) {
        if (take_word(&tok, "avg10=", 6)) {
            if (found || !take_fixed2(&tok, avg10) || tok.p != tok.end) return false;
            found = true;
        }
    }
    return found;
}

tmem_status tmem__os_parse_psi(const char *text, size_t len, uint32_t *some_avg10_x100, uint32_t *full_avg10_x100,
                               bool *has_full) {
    if (!some_avg10_x100 || !full_avg10_x100 || !has_full) return TMEM_E_INVALID_ARG;
    *some_avg10_x100 = *full_avg10_x100 = 0;
    *has_full = false;
    if (!text) return TMEM_E_INVALID_ARG;
    span it = {text, text + len}, line;
    bool some = false;
    uint32_t s = 0, f = 0;
    while (next_line(&it, &line)) {
        if (!some && psi_line(line, "some", &s)) some = true;
        else if (!*has_full && psi_line(line, "full", &f)) *has_full = true;
    }
    if (!some) {
        *has_full = false;
        return TMEM_E_PARSE;
    }
    *some_avg10_x100 = s;
    *full_avg10_x100 = *has_full ? f : 0;
    return TMEM_OK;
}

tmem_status tmem__os_parse_memory_events(const char *text, size_t len, tmem__os_pressure_info *out) {
    if (!out || !text) return TMEM_E_INVALID_ARG;
    static const struct { const char *key; size_t off; } k_keys[] = {
        {"high", offsetof(tmem__os_pressure_info, events_high)},
        {"max", offsetof(tmem__os_pressure_info, events_max)},
        {"oom", offsetof(tmem__os_pressure_info, events_oom)},
        {"oom_kill", offsetof(tmem__os_pressure_info, events_oom_kill)},
    };
    uint64_t vals[4] = {0};
    bool seen[4] = {false};
    unsigned found = 0;
    span it = {text, text + len}, line;
    while (next_line(&it, &line)) {
        span key, val, extra;
        if (!next_token(&line, &key) || !next_token(&line, &val) || next_token(&line, &extra)) continue;
        for (size_t i = 0; i < 4; i++) {
            uint64_t v;
            if (!seen[i] && span_eq(key, k_keys[i].key) && take_u64(&val, &v) && val.p == val.end) {
                vals[i] = v;
                seen[i] = true;
                found++;
                break;
            }
        }
    }
    if (!found) return TMEM_E_PARSE;
    for (size_t i = 0; i < 4; i++) memcpy((char *)out + k_keys[i].off, &vals[i], sizeof vals[i]);
    return TMEM_OK;
}

bool tmem__os_cgroup_join(const char *mount, const char *root, const char *path, char *buf, size_t cap) {
    if (!buf || cap == 0) return false;
    buf[0] = '\0';
    if (!mount || !root || !path || path[0] != '/') return false;
    /* A cgroup namespace or bind mount shows the hierarchy from `root` down:
     * /proc/self/cgroup's path then starts with root, which the mount point
     * already stands for. */
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0 && (path[rl] == '/' || path[rl] == '\0')) path += rl;
    /* Never climb out of the mount: no ".." component anywhere. */
    for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0')) return false;
    int n = snprintf(buf, cap, "%s%s", mount, (path[0] == '/' && path[1] == '\0') || path[0] == '\0' ? "" : path);
    if (n <= 0 || (size_t)n >= cap) {
        buf[0] = '\0';
        return false;
    }
    return true;
}
