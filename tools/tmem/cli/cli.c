/* The shared argument machinery of the tmem commands (see cli.h). */
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "typedmem/parse.h"

bool tmem_cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char **why) {
    return tmem_parse_u64(s, strlen(s), min, max, out, why) == 0;
}

bool tmem_cli_parse_size(const char *s, uint64_t *out, const char **why) {
    return tmem_parse_size(s, strlen(s), out, why) == 0;
}

/* "2", "0.25": digits, optionally '.' and digits; integer parts via the
 * library parser, so no sign, exponent, hex, NaN or infinity gets in. */
bool tmem_cli_parse_seconds(const char *s, double *out, const char **why) {
    const char *dot = strchr(s, '.');
    size_t ilen = dot ? (size_t)(dot - s) : strlen(s);
    uint64_t whole, frac = 0;
    *why = "not a number of seconds (digits, optionally '.' and digits)";
    if (tmem_parse_u64(s, ilen, 0, 1000000000ull, &whole, NULL) != 0) return false;
    double scale = 1;
    if (dot) {
        size_t flen = strlen(dot + 1);
        if (!flen || flen > 9 || tmem_parse_u64(dot + 1, flen, 0, UINT64_MAX, &frac, NULL) != 0) return false;
        for (size_t i = 0; i < flen; i++) scale *= 10;
    }
    *out = (double)whole + (double)frac / scale;
    return true;
}

bool tmem_cli_parse_dims(const char *s, uint32_t min, uint32_t max, uint32_t *w, uint32_t *h, const char **why) {
    const char *x = strpbrk(s, "xX");
    uint64_t a, b;
    *why = "want WIDTHxHEIGHT in pixels, e.g. 1024x768";
    if (!x || tmem_parse_u64(s, (size_t)(x - s), 0, UINT64_MAX, &a, NULL) != 0 ||
        tmem_parse_u64(x + 1, strlen(x + 1), 0, UINT64_MAX, &b, NULL) != 0)
        return false;
    if (a < min || a > max || b < min || b > max) {
        *why = "width or height out of range";
        return false;
    }
    *w = (uint32_t)a;
    *h = (uint32_t)b;
    return true;
}

static bool value_fail(const char *command, const char *opt, const char *v, const char *why, uint64_t min,
                       uint64_t max) {
    if (!v) fprintf(stderr, "%s: %s needs a value\n", command, opt);
    else if (max == UINT64_MAX) fprintf(stderr, "%s: %s: bad value '%s': %s (>= %llu)\n", command, opt, v, why,
                                        (unsigned long long)min);
    else fprintf(stderr, "%s: %s: bad value '%s': %s (%llu..%llu)\n", command, opt, v, why, (unsigned long long)min,
                 (unsigned long long)max);
    return false;
}

bool tmem_cli_value_u64(const char *command, const char *opt, const char *v, uint64_t min, uint64_t max,
                        uint64_t *out) {
    const char *why = "";
    uint64_t n = 0;
    if (!v || !tmem_cli_parse_u64(v, min, max, &n, &why)) return value_fail(command, opt, v, why, min, max);
    *out = n;
    return true;
}

bool tmem_cli_value_u32(const char *command, const char *opt, const char *v, uint32_t min, uint32_t max,
                        uint32_t *out) {
    uint64_t n = 0;
    if (!tmem_cli_value_u64(command, opt, v, min, max, &n)) return false;
    *out = (uint32_t)n;
    return true;
}

bool tmem_cli_value_seconds(const char *command, const char *opt, const char *v, double max, double *out) {
    const char *why = "out of range";
    double d;
    if (!v || !tmem_cli_parse_seconds(v, &d, &why) || d > max)
        return value_fail(command, opt, v, why, 0, (uint64_t)max);
    *out = d;
    return true;
}

static void print_range(FILE *f, const tmem_cli_opt *o) {
    if (o->kind != TMEM_CLI_KIND_U64 && o->kind != TMEM_CLI_KIND_U32 && o->kind != TMEM_CLI_KIND_SECONDS) return;
    if (o->max) fprintf(f, " (%llu..%llu)", (unsigned long long)o->min, (unsigned long long)o->max);
    else if (o->min) fprintf(f, " (>= %llu)", (unsigned long long)o->min);
}

void tmem_cli_help(const tmem_cli *cli, FILE *f) {
    fprintf(f, "usage: %s %s\n", cli->command, cli->synopsis ? cli->synopsis : "[options]");
    if (cli->about) fprintf(f, "\n%s\n", cli->about);
    fprintf(f, "\noptions:\n");
    for (size_t i = 0; i < cli->nopts; i++) {
        const tmem_cli_opt *o = &cli->opts[i];
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        fprintf(f, "  %-22s %s", head, o->help ? o->help : "");
        print_range(f, o);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-22s %s\n", "-h, --help", "print this help and exit");
    if (cli->epilog) fprintf(f, "\n%s\n", cli->epilog);
}

int tmem_cli_usage_error(const tmem_cli *cli, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", cli->command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s %s   (%s --help for more)\n", cli->command,
            cli->synopsis ? cli->synopsis : "[options]", cli->command);
    return TMEM_CLI_USAGE;
}

/* One option's value into its destination; false with *why on a bad value. */
static bool take_value(const tmem_cli_opt *o, const char *v, const char **why) {
    uint64_t n = 0;
    double d = 0;
    uint64_t max = o->max ? o->max : UINT64_MAX;
    switch (o->kind) {
    case TMEM_CLI_KIND_STRING:
        if (!*v) {
            *why = "empty value";
            return false;
        }
        *(const char **)o->out = v;
        return true;
    case TMEM_CLI_KIND_U64:
    case TMEM_CLI_KIND_U32:
        if (o->kind == TMEM_CLI_KIND_U32 && max > UINT32_MAX) max = UINT32_MAX;
        if (!tmem_cli_parse_u64(v, o->min, max, &n, why)) return false;
        if (o->kind == TMEM_CLI_KIND_U64) *(uint64_t *)o->out = n;
        else *(uint32_t *)o->out = (uint32_t)n;
        return true;
    case TMEM_CLI_KIND_SIZE:
        if (!tmem_cli_parse_size(v, &n, why)) return false;
        if (n < o->min || n > max) {
            *why = n < o->min && n == 0 ? "a size of 0 is not allowed here" : "size out of range";
            return false;
        }
        *(uint64_t *)o->out = n;
        return true;
    case TMEM_CLI_KIND_SECONDS:
        if (!tmem_cli_parse_seconds(v, &d, why)) return false;
        if (d < (double)o->min || (o->max && d > (double)o->max)) {
            *why = "out of range";
            return false;
        }
        *(double *)o->out = d;
        return true;
    case TMEM_CLI_KIND_CUSTOM: return o->parse(v, o->out, why);
    case TMEM_CLI_KIND_FLAG: break;
    }
    *why = "internal: bad option kind";
    return false;
}

static const tmem_cli_opt *find(const tmem_cli *cli, const char *a, size_t n) {
    for (size_t i = 0; i < cli->nopts; i++)
        if (strlen(cli->opts[i].name) == n && !strncmp(cli->opts[i].name, a, n)) return &cli->opts[i];
    return NULL;
}

int tmem_cli_parse(const tmem_cli *cli, int argc, char **argv) {
    unsigned npos = 0;
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool is_opt = !options_done && a[0] == '-' && a[1] != '\0';
        if (is_opt && !strcmp(a, "--")) {
            options_done = true;
            continue;
        }
        if (is_opt && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
            tmem_cli_help(cli, stdout);
            return 0;
        }
        if (!is_opt) {
            if (npos >= cli->max_positional)
                return tmem_cli_usage_error(cli, "unexpected argument '%s'", a);
            *cli->positional[npos++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        const tmem_cli_opt *o = find(cli, a, n);
        if (!o) return tmem_cli_usage_error(cli, "unknown option '%.*s'", (int)n, a);
        if (o->seen) *o->seen = true;
        if (o->kind == TMEM_CLI_KIND_FLAG) {
            if (eq) return tmem_cli_usage_error(cli, "%s takes no value", o->name);
            *(bool *)o->out = true;
            continue;
        }
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v) return tmem_cli_usage_error(cli, "%s needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
        const char *why = "bad value";
        if (!take_value(o, v, &why)) {
            fprintf(stderr, "%s: %s: bad value '%s': %s", cli->command, o->name, v, why);
            print_range(stderr, o);
            fprintf(stderr, "\n");
            return TMEM_CLI_USAGE;
        }
    }
    if (npos < cli->min_positional)
        return tmem_cli_usage_error(cli, "missing argument%s", cli->min_positional - npos > 1 ? "s" : "");
    return TMEM_CLI_CONTINUE;
}

const char *tmem_cli_path_problem(const char *path) {
    struct stat sb;
    if (!strcmp(path, "-")) return NULL;
    if (stat(path, &sb) != 0) return errno == ENOENT || errno == ENOTDIR ? "no such file" : strerror(errno);
    if (S_ISDIR(sb.st_mode)) return "is a directory";
    return NULL;
}

FILE *tmem_cli_open_in(const char *path, const char *mode) {
    if (!strcmp(path, "-")) return stdin;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        errno = EISDIR;
        return NULL;
    }
    return fopen(path, mode);
}

void tmem_cli_close(FILE *f) {
    if (f && f != stdin) fclose(f);
}

char *tmem_cli_slurp(const char *path, size_t *len) {
    FILE *f = tmem_cli_open_in(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int err = 0;
    for (;;) {
        if (n + 1 >= cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *p = realloc(buf, ncap);
            if (!p) {
                err = ENOMEM;
                break;
            }
            buf = p, cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (!got) {
            if (ferror(f)) err = errno ? errno : EIO;
            break;
        }
    }
    tmem_cli_close(f);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static tmem_status load_config(const char *command, tmem_context *ctx, const char *path) {
    tmem_config_error err;
    memset(&err, 0, sizeof err);
    tmem_status st = tmem_config_load(ctx, path, &err);
    if (st != TMEM_OK)
        fprintf(stderr, "%s: config %s: %s\n", command, path, err.message[0] ? err.message : tmem_strerror(st));
    return st;
}

tmem_status tmem_cli_context_create(const char *command, const tmem_context_desc *desc, tmem_context **out) {
    tmem_context_desc d = *desc;
    *out = NULL;
    const char *env = (d.flags & TMEM_CONTEXT_READ_ENV) ? getenv("TMEM_CONFIG") : NULL;
    const char *path = d.config_path;
    d.flags &= ~(uint32_t)TMEM_CONTEXT_READ_ENV;
    d.config_path = NULL;
    tmem_context *ctx;
    tmem_status st = tmem_context_create(&d, &ctx);
    if (st != TMEM_OK) {
        fprintf(stderr, "%s: cannot create a context: %s (%s)\n", command, tmem_strerror(st), tmem_status_name(st));
        return st;
    }
    if (path) st = load_config(command, ctx, path);
    if (st == TMEM_OK && env && *env) st = load_config(command, ctx, env);
    if (st != TMEM_OK) {
        tmem_context_destroy(ctx);
        return st;
    }
    *out = ctx;
    return TMEM_OK;
}
