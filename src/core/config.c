/*
 * Config files: memory types, budgets and the role -> type policy declared at
 * start-up, in the spirit of QNX's reserved pools (docs/config.md).
 *
 *   # typedmem config
 *   budget = 3GiB
 *   [type /memory/kv]
 *   placement = host
 *   lifetime = growing
 *   flags = populate, locked
 *   reserve = 2GiB
 *   budget = 1536MiB
 *   reclaim_priority = 10
 *   [role kv_cache]
 *   type = /memory/kv
 *
 * Two phases, so a bad file changes nothing: parse() turns the text into a
 * `config` (syntax, units, ranges, duplicates), validate() checks it against
 * the context (names, existing types and roles, room for new types), and only
 * then apply() calls the public API. Every error names its 1-based line.
 *
 * Only the public API is used for the context (tmem_type_create & co.); the
 * file itself is read through the OS layer so fault injection covers it.
 */
#include "core/core.h"
#include "typedmem/parse.h"
#include "os/os.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CFG_MAX_TYPES = 64,        /* a context holds at most 64 types */
    CFG_MAX_ROLES = TMEM_ROLE_MAX,
    CFG_MAX_LINE = 1024,
    CFG_NAME_CAP = 64,         /* type names: "/memory/..." < 64 bytes */
    CFG_ROLE_CAP = 32,
};
#define CFG_MAX_FILE (1u << 20) /* a config is small; refuse anything larger */

/* Keys of a [type] section, in the order they are documented. */
typedef enum type_key { K_PLACEMENT, K_LIFETIME, K_FLAGS, K_RESERVE, K_BUDGET, K_PRIORITY, K_COUNT } type_key;
static const char *const k_type_keys[K_COUNT] = {"placement", "lifetime", "flags",
                                                 "reserve",   "budget",   "reclaim_priority"};

static const struct { const char *name; uint32_t bit; } k_flags[] = {
    {"populate", TMEM_TYPE_POPULATE},
    {"locked", TMEM_TYPE_LOCKED},
    {"huge_pages", TMEM_TYPE_HUGE_PAGES},
    {"contiguous", TMEM_TYPE_CONTIGUOUS},
    {"host_cached", TMEM_TYPE_HOST_CACHED},
};

typedef struct cfg_type {
    char name[CFG_NAME_CAP];
    uint32_t line;              /* of the [type] header */
    uint32_t key_line[K_COUNT]; /* 0 = key not given */
    tmem_placement placement;
    tmem_lifetime lifetime;
    uint32_t flags;
    uint64_t reserve, budget;
    int32_t priority;
    tmem_type *existing;        /* validate(): the context already has it */
    tmem_type *created;         /* apply() */
    uint64_t old_budget;        /* apply(): an existing type's budget before */
    bool budget_set;            /* apply(): changed, to put back on failure */
} cfg_type;

typedef struct cfg_role {
    char name[CFG_ROLE_CAP];
    uint32_t line, type_line, id_line;
    char type[CFG_NAME_CAP];
    uint32_t id;                /* given with `id = N` */
    tmem_role role;             /* validate(): resolved role */
    bool define;                /* validate(): a user role to define */
} cfg_role;

typedef struct config {
    uint32_t budget_line;
    uint64_t budget;
    cfg_type types[CFG_MAX_TYPES];
    uint32_t ntypes;
    cfg_role roles[CFG_MAX_ROLES];
    uint32_t nroles;
} config;

/* ---- errors ---- */

static tmem_status fail(tmem_config_error *err, uint32_t line, tmem_status st, const char *fmt, ...) {
    if (err) {
        int n = line ? snprintf(err->message, sizeof err->message, "line %u: ", (unsigned)line) : 0;
        if (n < 0) n = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
        va_end(ap);
        err->line = line;
    }
    return tmem__err(st);
}
#define PARSE_FAIL(line, ...) fail(err, line, TMEM_E_PARSE, __VA_ARGS__)

/* ---- text helpers: spans over the input, never NUL-terminated ---- */

typedef struct span { const char *p, *end; } span;

static size_t span_len(span s) { return (size_t)(s.end - s.p); }
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
static span trim(span s) {
    while (s.p < s.end && is_blank(*s.p)) s.p++;
    while (s.end > s.p && is_blank(s.end[-1])) s.end--;
    return s;
}
static bool span_is(span s, const char *w) { return span_len(s) == strlen(w) && memcmp(s.p, w, span_len(s)) == 0; }

/* A printable rendering of untrusted text for messages: at most 40 bytes,
 * non-printable bytes as '?', "..." when cut. */
static const char *show(span s, char *buf, size_t cap) {
    size_t n = 0, max = cap > 4 ? cap - 4 : 0;
    const char *p = s.p;
    for (; p < s.end && n < max && n < 40; p++) buf[n++] = (*p >= ' ' && *p <= '~') ? *p : '?';
    if (p < s.end && n + 3 < cap) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n < cap ? n : cap - 1] = '\0';
    return buf;
}

/* ---- values ---- */

/* "3GiB", "1536 MiB", "4096", "64K", "2GB": the library's one size parser
 * (typedmem/parse.h), shared with the tmem command line. */
static bool parse_size(span v, uint64_t *out, const char **why) {
    return tmem_parse_size(v.p, span_len(v), out, why) == TMEM_OK;
}

static bool parse_int32(span v, int32_t *out) {
    const char *p = v.p;
    bool neg = p < v.end && (*p == '-' || *p == '+') && *p++ == '-';
    int64_t n = 0;
    if (p == v.end) return false;
    for (; p < v.end; p++) {
        if (*p < '0' || *p > '9') return false;
        n = n * 10 + (*p - '0');
        if (n > (int64_t)INT32_MAX + 1) return false;
    }
    if (neg) n = -n;
    if (n < INT32_MIN || n > INT32_MAX) return false;
    *out = (int32_t)n;
    return true;
}

static int lookup(span v, const char *const *names, int count) {
    for (int i = 0; i < count; i++)
        if (span_is(v, names[i])) return i;
    return -1;
}

/* A placement or lifetime by its one name (typedmem/placement.h). */
static int lookup_placement(span v) {
    for (int i = 0; i < TMEM_PLACEMENT_COUNT; i++)
        if (span_is(v, tmem_placement_name((tmem_placement)i))) return i;
    return -1;
}

static int lookup_lifetime(span v) {
    for (int i = 0; i < TMEM_LIFETIME_COUNT; i++)
        if (span_is(v, tmem_lifetime_name((tmem_lifetime)i))) return i;
    return -1;
}

/* "populate, locked" or "none". */
static bool parse_flags(span v, uint32_t *out, span *bad) {
    uint32_t flags = 0;
    if (span_is(v, "none")) {
        *out = 0;
        return true;
    }
    const char *p = v.p;
    for (;;) {
        const char *c = memchr(p, ',', (size_t)(v.end - p));
        span item = trim((span){p, c ? c : v.end});
        size_t i = 0;
        for (; i < sizeof k_flags / sizeof k_flags[0]; i++)
            if (span_is(item, k_flags[i].name)) break;
        if (i == sizeof k_flags / sizeof k_flags[0]) {
            *bad = item;
            return false;
        }
        flags |= k_flags[i].bit;
        if (!c) break;
        p = c + 1;
    }
    *out = flags;
    return true;
}

/* "/memory/<name>": letters, digits and "-_./", < 64 bytes (tmem_type_create's
 * rule, checked here so the error can name the line). */
static bool type_name_ok(span s) {
    static const char prefix[] = "/memory/";
    size_t n = span_len(s);
    if (n <= sizeof prefix - 1 || n >= CFG_NAME_CAP || memcmp(s.p, prefix, sizeof prefix - 1) != 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.' || c == '/'))
            return false;
    }
    return true;
}

/* Role names: [a-z0-9_], 1..31 bytes. */
static bool role_name_ok(span s) {
    size_t n = span_len(s);
    if (n == 0 || n >= CFG_ROLE_CAP) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

static void copy_name(char *dst, span s) {
    memcpy(dst, s.p, span_len(s));
    dst[span_len(s)] = '\0';
}

/* ---- phase 1: parse ---- */

typedef enum section { SEC_TOP, SEC_TYPE, SEC_ROLE } section;

typedef struct parser {
    config *cfg;
    section sec;
    cfg_type *type;
    cfg_role *role;
    tmem_config_error *err;
} parser;

static tmem_status parse_header(parser *ps, span body, uint32_t line) {
    tmem_config_error *err = ps->err;
    char a[48], b[48];
    /* "[type /memory/kv]" / "[role kv_cache]" */
    const char *sp = body.p;
    while (sp < body.end && !is_blank(*sp)) sp++;
    span kind = {body.p, sp}, name = trim((span){sp, body.end});
    if (span_is(kind, "type")) {
        if (!name.p || name.p == name.end) return PARSE_FAIL(line, "[type] needs a name, e.g. [type /memory/kv]");
        if (!type_name_ok(name))
            return PARSE_FAIL(line, "bad type name '%s' (want /memory/<name>: letters, digits, -_./, < 64 bytes)",
                              show(name, a, sizeof a));
        config *cfg = ps->cfg;
        for (uint32_t i = 0; i < cfg->ntypes; i++)
            if (span_is(name, cfg->types[i].name))
                return PARSE_FAIL(line, "type %s declared twice (first on line %u)", cfg->types[i].name,
                                  (unsigned)cfg->types[i].line);
        if (cfg->ntypes == CFG_MAX_TYPES) return PARSE_FAIL(line, "more than %d types", CFG_MAX_TYPES);
        cfg_type *t = &cfg->types[cfg->ntypes++];
        memset(t, 0, sizeof *t);
        copy_name(t->name, name);
        t->line = line;
        ps->sec = SEC_TYPE;
        ps->type = t;
        return TMEM_OK;
    }
    if (span_is(kind, "role")) {
        if (name.p == name.end) return PARSE_FAIL(line, "[role] needs a name, e.g. [role kv_cache]");
        if (!role_name_ok(name))
            return PARSE_FAIL(line, "bad role name '%s' (want [a-z0-9_], 1..31 bytes)", show(name, a, sizeof a));
        config *cfg = ps->cfg;
        for (uint32_t i = 0; i < cfg->nroles; i++)
            if (span_is(name, cfg->roles[i].name))
                return PARSE_FAIL(line, "role %s declared twice (first on line %u)", cfg->roles[i].name,
                                  (unsigned)cfg->roles[i].line);
        if (cfg->nroles == CFG_MAX_ROLES) return PARSE_FAIL(line, "more than %d roles", CFG_MAX_ROLES);
        cfg_role *r = &cfg->roles[cfg->nroles++];
        memset(r, 0, sizeof *r);
        copy_name(r->name, name);
        r->line = line;
        ps->sec = SEC_ROLE;
        ps->role = r;
        return TMEM_OK;
    }
    return PARSE_FAIL(line, "unknown section '[%s]' (want [type /memory/<name>] or [role <name>])",
                      show(body, b, sizeof b));
}

static tmem_status parse_top_key(parser *ps, span key, span val, uint32_t line) {
    tmem_config_error *err = ps->err;
    char a[48];
    const char *why;
    if (!span_is(key, "budget"))
        return PARSE_FAIL(line,
                          "unknown key '%s' at top level (known: budget; types and roles go in "
                          "[type ...] / [role ...])",
                          show(key, a, sizeof a));
    if (ps->cfg->budget_line)
        return PARSE_FAIL(line, "duplicate key 'budget' (first set on line %u)",
                          (unsigned)ps->cfg->budget_line);
    if (!parse_size(val, &ps->cfg->budget, &why))
        return PARSE_FAIL(line, "budget '%s': %s", show(val, a, sizeof a), why);
    if (ps->cfg->budget == 0) return PARSE_FAIL(line, "the context budget must be above 0 (a context always has one)");
    ps->cfg->budget_line = line;
    return TMEM_OK;
}

static tmem_status parse_type_key(parser *ps, span key, span val, uint32_t line) {
    tmem_config_error *err = ps->err;
    cfg_type *t = ps->type;
    char a[48], b[48];
    const char *why;
    int k = lookup(key, k_type_keys, K_COUNT);
    if (k < 0)
        return PARSE_FAIL(line, "unknown key '%s' in [type %s]", show(key, a, sizeof a), t->name);
    if (t->key_line[k])
        return PARSE_FAIL(line, "duplicate key '%s' in [type %s] (first set on line %u)", k_type_keys[k], t->name,
                          (unsigned)t->key_line[k]);
    int i;
    span bad;
    switch ((type_key)k) {
    case K_PLACEMENT:
        if ((i = lookup_placement(val)) < 0)
            return PARSE_FAIL(line,
                              "unknown placement '%s' (host, host_shared, file, pinned, device, "
                              "device_host_visible)",
                              show(val, a, sizeof a));
        t->placement = (tmem_placement)i;
        break;
    case K_LIFETIME:
        if ((i = lookup_lifetime(val)) < 0)
            return PARSE_FAIL(line,
                              "unknown lifetime '%s' (persistent, growing, transient, shared)",
                              show(val, a, sizeof a));
        t->lifetime = (tmem_lifetime)i;
        break;
    case K_FLAGS:
        if (!parse_flags(val, &t->flags, &bad))
            return PARSE_FAIL(line, "unknown flag '%s' in '%s' (populate, locked, huge_pages, contiguous or none)",
                              show(bad, a, sizeof a), show(val, b, sizeof b));
        break;
    case K_RESERVE:
        if (!parse_size(val, &t->reserve, &why))
            return PARSE_FAIL(line, "reserve '%s': %s", show(val, a, sizeof a), why);
        break;
    case K_BUDGET:
        if (!parse_size(val, &t->budget, &why)) return PARSE_FAIL(line, "budget '%s': %s", show(val, a, sizeof a), why);
        break;
    case K_PRIORITY:
        if (!parse_int32(val, &t->priority))
            return PARSE_FAIL(line, "reclaim_priority '%s' is not a 32-bit integer", show(val, a, sizeof a));
        break;
    case K_COUNT: break;
    }
    t->key_line[k] = line;
    return TMEM_OK;
}

static tmem_status parse_role_key(parser *ps, span key, span val, uint32_t line) {
    tmem_config_error *err = ps->err;
    cfg_role *r = ps->role;
    char a[48];
    if (span_is(key, "type")) {
        if (r->type_line)
            return PARSE_FAIL(line, "duplicate key 'type' in [role %s] (first set on line %u)",
                              r->name, (unsigned)r->type_line);
        if (!type_name_ok(val))
            return PARSE_FAIL(line, "bad type name '%s' in [role %s]", show(val, a, sizeof a),
                              r->name);
        copy_name(r->type, val);
        r->type_line = line;
        return TMEM_OK;
    }
    if (span_is(key, "id")) {
        if (r->id_line)
            return PARSE_FAIL(line, "duplicate key 'id' in [role %s] (first set on line %u)",
                              r->name, (unsigned)r->id_line);
        int32_t id;
        if (!parse_int32(val, &id) || id < TMEM_ROLE_USER_FIRST || id >= TMEM_ROLE_MAX)
            return PARSE_FAIL(line, "role id '%s' out of range (user roles are %d..%d)", show(val, a, sizeof a),
                              TMEM_ROLE_USER_FIRST, TMEM_ROLE_MAX - 1);
        r->id = (uint32_t)id;
        r->id_line = line;
        return TMEM_OK;
    }
    return PARSE_FAIL(line, "unknown key '%s' in [role %s] (known: type, id)", show(key, a, sizeof a), r->name);
}

static tmem_status parse_line(parser *ps, span s, uint32_t line) {
    tmem_config_error *err = ps->err;
    char a[48];
    const char *hash = memchr(s.p, '#', span_len(s));
    if (hash) s.end = hash; /* comments run to the end of the line */
    s = trim(s);
    if (s.p == s.end) return TMEM_OK;
    if (*s.p == '[') {
        if (s.end[-1] != ']') {
            const char *close = memchr(s.p, ']', span_len(s));
            if (close) return PARSE_FAIL(line, "text after ']' in section header '%s'", show(s, a, sizeof a));
            return PARSE_FAIL(line, "section header '%s' lacks its closing ']'", show(s, a, sizeof a));
        }
        return parse_header(ps, trim((span){s.p + 1, s.end - 1}), line);
    }
    const char *eq = memchr(s.p, '=', span_len(s));
    if (!eq) return PARSE_FAIL(line, "expected 'key = value' or '[section]', got '%s'", show(s, a, sizeof a));
    span key = trim((span){s.p, eq}), val = trim((span){eq + 1, s.end});
    if (key.p == key.end) return PARSE_FAIL(line, "missing key before '='");
    if (val.p == val.end) return PARSE_FAIL(line, "missing value for '%s'", show(key, a, sizeof a));
    switch (ps->sec) {
    case SEC_TOP: return parse_top_key(ps, key, val, line);
    case SEC_TYPE: return parse_type_key(ps, key, val, line);
    case SEC_ROLE: return parse_role_key(ps, key, val, line);
    }
    return TMEM_OK;
}

static tmem_status parse(config *cfg, const char *text, size_t len, tmem_config_error *err) {
    parser ps = {cfg, SEC_TOP, NULL, NULL, err};
    const char *p = text, *end = text + len;
    uint32_t line = 0;
    while (p < end) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        span s = {p, nl ? nl : end};
        p = nl ? nl + 1 : end;
        if (span_len(s) > CFG_MAX_LINE) return PARSE_FAIL(line, "line longer than %d bytes", CFG_MAX_LINE);
        if (memchr(s.p, '\0', span_len(s))) return PARSE_FAIL(line, "NUL byte in text");
        tmem_status st = parse_line(&ps, s, line);
        if (st != TMEM_OK) return st;
    }
    /* Section-level rules that need the whole section. */
    for (uint32_t i = 0; i < cfg->nroles; i++)
        if (!cfg->roles[i].type_line)
            return PARSE_FAIL(cfg->roles[i].line, "[role %s] needs 'type = /memory/<name>'", cfg->roles[i].name);
    return TMEM_OK;
}

/* ---- phase 2: validate against the context ---- */

static const cfg_type *cfg_find_type(const config *cfg, const char *name) {
    for (uint32_t i = 0; i < cfg->ntypes; i++)
        if (!strcmp(cfg->types[i].name, name)) return &cfg->types[i];
    return NULL;
}

/* An existing type (a default one, or from an earlier config) can have its
 * budget changed; any other key must restate its current value. */
static tmem_status validate_existing(const cfg_type *t, tmem_type *ty, tmem_config_error *err) {
    tmem_type_info info;
    tmem_status st = tmem_type_get_info(ty, &info);
    if (st != TMEM_OK) return fail(err, t->line, st, "cannot read type %s", t->name);
    static const char hint[] = "only 'budget' can change for an existing type (create the context with "
                               "TMEM_CONTEXT_NO_DEFAULT_TYPES to define it)";
    if (t->key_line[K_PLACEMENT] && t->placement != info.placement)
        return PARSE_FAIL(t->key_line[K_PLACEMENT], "type %s exists with placement %s; %s", t->name,
                          tmem_placement_name(info.placement), hint);
    if (t->key_line[K_LIFETIME] && t->lifetime != info.lifetime)
        return PARSE_FAIL(t->key_line[K_LIFETIME], "type %s exists with lifetime %s; %s", t->name,
                          tmem_lifetime_name(info.lifetime), hint);
    if (t->key_line[K_FLAGS] && t->flags != info.flags)
        return PARSE_FAIL(t->key_line[K_FLAGS], "type %s exists with other flags (0x%x); %s",
                          t->name, (unsigned)info.flags, hint);
    if (t->key_line[K_RESERVE] && t->reserve != info.reserve)
        return PARSE_FAIL(t->key_line[K_RESERVE], "type %s exists with reserve %llu bytes; %s", t->name,
                          (unsigned long long)info.reserve, hint);
    if (t->key_line[K_PRIORITY] && t->priority != info.reclaim_priority)
        return PARSE_FAIL(t->key_line[K_PRIORITY], "type %s exists with reclaim_priority %d; %s", t->name,
                          (int)info.reclaim_priority, hint);
    return TMEM_OK;
}

static tmem_status validate_types(tmem_context *ctx, config *cfg, tmem_config_error *err) {
    uint32_t fresh = 0;
    for (uint32_t i = 0; i < cfg->ntypes; i++) {
        cfg_type *t = &cfg->types[i];
        tmem_type *ty = NULL;
        tmem_status st = tmem_type_find(ctx, t->name, &ty);
        if (st == TMEM_OK) {
            t->existing = ty;
            if ((st = validate_existing(t, ty, err)) != TMEM_OK) return st;
            continue;
        }
        if (st != TMEM_E_NOT_FOUND) return fail(err, t->line, st, "cannot look up type %s", t->name);
        fresh++;
        bool populates = (t->flags & (TMEM_TYPE_POPULATE | TMEM_TYPE_CONTIGUOUS)) ||
                         t->placement == TMEM_PLACEMENT_PINNED;
        if (populates && !t->reserve && !t->budget)
            return PARSE_FAIL(t->line,
                              "[type %s] is populated at creation (populate, contiguous or "
                              "pinned): give it a 'reserve' or 'budget'",
                              t->name);
    }
    uint32_t have = tmem_type_count(ctx);
    if (have + fresh > CFG_MAX_TYPES)
        return PARSE_FAIL(0, "the context has %u types; %u more would pass the limit of %d", (unsigned)have,
                          (unsigned)fresh, CFG_MAX_TYPES);
    return TMEM_OK;
}

/* The role named `name` in ctx, or -1. */
static int find_role(tmem_context *ctx, const char *name) {
    for (int r = 0; r < TMEM_ROLE_MAX; r++) {
        const char *n = tmem_role_name(ctx, (tmem_role)r);
        if (n && !strcmp(n, name)) return r;
    }
    return -1;
}

static tmem_status validate_roles(tmem_context *ctx, config *cfg, tmem_config_error *err) {
    for (uint32_t i = 0; i < cfg->nroles; i++) {
        cfg_role *r = &cfg->roles[i];
        tmem_type *ty = NULL;
        if (!cfg_find_type(cfg, r->type) && tmem_type_find(ctx, r->type, &ty) != TMEM_OK)
            return PARSE_FAIL(r->type_line,
                              "[role %s] maps to unknown type %s (declare it with [type %s])",
                              r->name, r->type, r->type);
        int known = find_role(ctx, r->name);
        if (known >= 0) {
            if (r->id_line && (uint32_t)known != r->id)
                return PARSE_FAIL(r->id_line, "role %s already has id %d", r->name, known);
            r->role = (tmem_role)known;
            continue;
        }
        if (!r->id_line)
            return PARSE_FAIL(r->line,
                              "unknown role '%s' (builtin: weights, kv_cache, recurrent_state, "
                              "activation, scratch, image, vision_intermediate, output_tokens; "
                              "a user role needs 'id = %d..%d')",
                              r->name, TMEM_ROLE_USER_FIRST, TMEM_ROLE_MAX - 1);
        const char *holder = tmem_role_name(ctx, (tmem_role)r->id);
        if (holder) return PARSE_FAIL(r->id_line, "role id %u is already role '%s'", (unsigned)r->id, holder);
        for (uint32_t j = 0; j < i; j++)
            if (cfg->roles[j].define && cfg->roles[j].id == r->id)
                return PARSE_FAIL(r->id_line, "role id %u already used by [role %s] on line %u", (unsigned)r->id,
                                  cfg->roles[j].name, (unsigned)cfg->roles[j].line);
        r->role = (tmem_role)r->id;
        r->define = true;
    }
    return TMEM_OK;
}

/* ---- phase 3: apply ---- */

static tmem_type *resolve_type(tmem_context *ctx, const config *cfg, const char *name) {
    const cfg_type *t = cfg_find_type(cfg, name);
    if (t) return t->existing ? t->existing : t->created;
    tmem_type *ty = NULL;
    return tmem_type_find(ctx, name, &ty) == TMEM_OK ? ty : NULL;
}

/* Types whose creation the OS or a backend may refuse: they commit (and maybe
 * lock) their pool at once, or need a device backend. Everything else only
 * reserves address space. */
static bool risky(const cfg_type *t) {
    return (t->flags & (TMEM_TYPE_POPULATE | TMEM_TYPE_LOCKED | TMEM_TYPE_CONTIGUOUS)) ||
           t->placement == TMEM_PLACEMENT_PINNED || t->placement == TMEM_PLACEMENT_DEVICE ||
           t->placement == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE;
}

static tmem_status create_type(tmem_context *ctx, cfg_type *t) {
    tmem_type_desc d = {0};
    d.name = t->name;
    d.placement = t->placement;
    d.lifetime = t->lifetime;
    d.flags = t->flags;
    d.reserve = t->reserve;
    d.budget = t->budget;
    d.reclaim_priority = t->priority;
    return tmem_type_create(ctx, &d, &t->created);
}

/* The most this process can ever hold: the tightest hard limit set
 * (TMEM_LIMIT, cgroup memory.max or memory.high), else the machine's RAM.
 * Not MemAvailable, so a config's validity does not depend on what other
 * processes use right now. 0 when the system tells nothing. */
static uint64_t process_limit(void) {
    tmem_system_limits lim;
    tmem__os_benign_begin();
    tmem_status st = tmem_system_limits_read(&lim);
    tmem__os_benign_end();
    if (st != TMEM_OK) return 0;
    uint64_t hard[] = {lim.env_limit, lim.cgroup_max, lim.cgroup_high}, best = 0;
    for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++)
        if (hard[i] && (!best || hard[i] < best)) best = hard[i];
    return best ? best : lim.mem_total;
}

/* What apply() changes, to put back if a later step fails: the context
 * budget, each existing type's budget (in cfg), the role table. Types it
 * created are removed (tmem_type_destroy; nothing can use them yet). */
typedef struct undo {
    tmem_budget_info budget;
    tmem_type *role_type[TMEM_ROLE_MAX];
    char role_names[TMEM_ROLE_MAX][TMEM__ROLE_NAME_MAX];
    bool role_defined[TMEM_ROLE_MAX];
} undo;

static void save_roles(tmem_context *ctx, undo *u) {
    tmem__context_lock(ctx);
    memcpy(u->role_type, ctx->role_type, sizeof u->role_type);
    memcpy(u->role_names, ctx->role_names, sizeof u->role_names);
    memcpy(u->role_defined, ctx->role_defined, sizeof u->role_defined);
    tmem__context_unlock(ctx);
}

static void roll_back(tmem_context *ctx, config *cfg, const undo *u) {
    tmem__context_lock(ctx);
    memcpy(ctx->role_type, u->role_type, sizeof u->role_type);
    memcpy(ctx->role_names, u->role_names, sizeof u->role_names);
    memcpy(ctx->role_defined, u->role_defined, sizeof u->role_defined);
    tmem__context_unlock(ctx);
    for (uint32_t i = cfg->ntypes; i-- > 0;) {
        cfg_type *t = &cfg->types[i];
        if (t->budget_set) (void)!tmem_type_set_budget(t->existing, t->old_budget);
        if (t->created && tmem_type_destroy(t->created) == TMEM_OK) t->created = NULL;
        tmem__assert(!t->created); /* nothing could use it yet */
    }
    if (cfg->budget_line) (void)!tmem_context_set_budget(ctx, u->budget.budget);
}

/* Creating types is the step the OS can refuse (no memory, mlock over its
 * limit, a populate over budget, no device backend), so it comes first, the
 * risky types before the others. The context budget is set before them,
 * because populated types are charged against it. Any failure rolls every
 * step back (roll_back), so a load is all or nothing. */
static tmem_status apply_steps(tmem_context *ctx, config *cfg, tmem_config_error *err) {
    tmem_status st;
    /* A budget the process can never hold is a promise it cannot keep: the
     * populated types charged against it would get the process killed. */
    uint64_t limit = cfg->budget_line ? process_limit() : 0;
    if (limit && cfg->budget > limit)
        return fail(err, cfg->budget_line, TMEM_E_BUDGET,
                    "budget %llu bytes is above this process's memory limit of %llu bytes "
                    "(TMEM_LIMIT, cgroup memory.max/high, else RAM)",
                    (unsigned long long)cfg->budget, (unsigned long long)limit);
    if (cfg->budget_line && (st = tmem_context_set_budget(ctx, cfg->budget)) != TMEM_OK)
        return fail(err, cfg->budget_line, st, "setting the context budget failed: %s", tmem_strerror(st));
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < cfg->ntypes; i++) {
            cfg_type *t = &cfg->types[i];
            if (t->existing || risky(t) != (pass == 0)) continue;
            if ((st = create_type(ctx, t)) != TMEM_OK)
                return fail(err, t->line, st, "creating type %s failed: %s (nothing was changed)",
                            t->name, tmem_strerror(st));
        }
    }
    for (uint32_t i = 0; i < cfg->ntypes; i++) {
        cfg_type *t = &cfg->types[i];
        if (!t->existing || !t->key_line[K_BUDGET]) continue;
        tmem_type_info ti;
        if ((st = tmem_type_get_info(t->existing, &ti)) == TMEM_OK) {
            t->old_budget = ti.budget;
            st = tmem_type_set_budget(t->existing, t->budget);
            t->budget_set = st == TMEM_OK;
        }
        if (st != TMEM_OK)
            return fail(err, t->key_line[K_BUDGET], st, "setting the budget of %s failed: %s",
                        t->name, tmem_strerror(st));
    }
    for (uint32_t i = 0; i < cfg->nroles; i++) {
        cfg_role *r = &cfg->roles[i];
        tmem_type *ty = resolve_type(ctx, cfg, r->type);
        st = r->define ? tmem_role_define(ctx, r->role, r->name, ty) : tmem_role_set_type(ctx, r->role, ty);
        if (st != TMEM_OK) return fail(err, r->type_line, st, "mapping role %s failed: %s", r->name, tmem_strerror(st));
    }
    return TMEM_OK;
}

static tmem_status apply(tmem_context *ctx, config *cfg, tmem_config_error *err) {
    undo u;
    tmem_status st = tmem_context_budget(ctx, &u.budget);
    if (st != TMEM_OK)
        return fail(err, 0, st, "cannot read the context budget: %s", tmem_strerror(st));
    save_roles(ctx, &u);
    st = apply_steps(ctx, cfg, err);
    if (st != TMEM_OK) roll_back(ctx, cfg, &u);
    return st;
}

/* ---- entry points ---- */

tmem_status tmem_config_load_string(tmem_context *ctx, const char *text, size_t len, tmem_config_error *err) {
    if (err) {
        err->line = 0;
        err->message[0] = '\0';
    }
    if (!ctx || (!text && len)) return fail(err, 0, TMEM_E_INVALID_ARG, "NULL context or text");
    if (len > CFG_MAX_FILE) return PARSE_FAIL(0, "config larger than %u bytes", CFG_MAX_FILE);
    config *cfg = tmem__calloc(ctx, 1, sizeof *cfg);
    if (!cfg) return fail(err, 0, TMEM_E_NO_MEMORY, "out of memory");
    tmem_status st = parse(cfg, text ? text : "", len, err);
    if (st == TMEM_OK) st = validate_types(ctx, cfg, err);
    if (st == TMEM_OK) st = validate_roles(ctx, cfg, err);
    if (st == TMEM_OK) st = apply(ctx, cfg, err);
    tmem__free(ctx, cfg, sizeof *cfg);
    return st;
}

tmem_status tmem_config_load(tmem_context *ctx, const char *path, tmem_config_error *err) {
    if (err) {
        err->line = 0;
        err->message[0] = '\0';
    }
    if (!ctx || !path || !*path) return fail(err, 0, TMEM_E_INVALID_ARG, "NULL context or empty path");
    int fd = -1;
    uint64_t size = 0;
    tmem_status st = tmem__os_file_open(path, &fd, &size);
    if (st != TMEM_OK)
        return fail(err, 0, st == TMEM_E_NO_MEMORY ? st : TMEM_E_IO,
                    "cannot open config '%.100s': %s", path, tmem_strerror(st));
    if (size > CFG_MAX_FILE) {
        (void)tmem__os_close(fd);
        return PARSE_FAIL(0, "config '%.100s' is larger than %u bytes", path, CFG_MAX_FILE);
    }
    void *map = NULL;
    if (size) {
        st = tmem__os_map_fd(fd, 0, (size_t)size, false, false, &map);
        if (st != TMEM_OK) {
            (void)tmem__os_close(fd);
            return fail(err, 0, st == TMEM_E_NO_MEMORY ? st : TMEM_E_IO,
                        "cannot map config '%.100s': %s", path, tmem_strerror(st));
        }
    }
    (void)tmem__os_close(fd); /* the mapping keeps the file */
    st = tmem_config_load_string(ctx, map, (size_t)size, err);
    if (map) {
        size_t page = tmem__os_page_size();
        (void)tmem__os_unmap(map, ((size_t)size + page - 1) / page * page);
    }
    return st;
}

tmem_status tmem__config_load_env(tmem_context *ctx) {
    const char *path = tmem__os_getenv("TMEM_CONFIG");
    if (!path || !*path) return TMEM_OK;
    return tmem_config_load(ctx, path, NULL);
}
