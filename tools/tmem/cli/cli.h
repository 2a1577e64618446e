/* The argument machinery every tmem command shares: one table of options,
 * strict values (the library's tmem_parse_size / tmem_parse_u64), --help on
 * stdout with exit 0, unknown or extra arguments rejected with exit 2 and a
 * message naming the option.
 *
 * Adopting it in a new command (cmd_<name>.c):
 *
 *   int tmem_cmd_gen(int argc, char **argv) {
 *       bool json = false;
 *       uint64_t budget = 0;
 *       uint32_t threads = 2;
 *       const char *out = NULL;
 *       const tmem_cli_opt opts[] = {
 *           TMEM_CLI_FLAG("--json", "print JSON", &json),
 *           TMEM_CLI_SIZE("--budget", "memory budget (512MiB, 2GB, ...)", &budget, 1, 0),
 *           TMEM_CLI_U32("--threads", "N", "worker threads (1..64)", &threads, 1, 64),
 *           TMEM_CLI_STR("--out", "FILE", "where to write ('-' = stdout)", &out),
 *       };
 *       const char *model = NULL;       // positional arguments, in order
 *       const char **pos[] = {&model};
 *       tmem_cli cli = {"tmem gen", "MODEL [options]", "generate text", opts, TMEM_CLI_COUNT(opts),
 *                       pos, 1, 1, NULL};
 *       int rc = tmem_cli_parse(&cli, argc, argv);
 *       if (rc != TMEM_CLI_CONTINUE) return rc;     // 0 after --help, 2 on a usage error
 *       ...
 *   }
 *
 * `--opt value` and `--opt=value` both work; `-` alone is a positional (stdin
 * or stdout by convention, see tmem_cli_open_in); `--` ends the options.
 * Exit codes: 0 ok, 1 error, 2 usage error (TMEM_CLI_USAGE), others per command. */
#ifndef TMEM_TOOL_CLI_H
#define TMEM_TOOL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "typedmem/typedmem.h"

#define TMEM_CLI_CONTINUE (-1)
#define TMEM_CLI_USAGE 2
#define TMEM_CLI_COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef enum tmem_cli_kind {
    TMEM_CLI_KIND_FLAG,    /* bool *, set true */
    TMEM_CLI_KIND_STRING,  /* const char **; any text (including "-") */
    TMEM_CLI_KIND_U64,     /* uint64_t *, whole number in [min, max] */
    TMEM_CLI_KIND_U32,     /* uint32_t *, whole number in [min, max] */
    TMEM_CLI_KIND_SIZE,    /* uint64_t *, size with unit, >= min (max 0 = none) */
    TMEM_CLI_KIND_SECONDS, /* double *, decimal seconds "2", "0.5" (no sign/exponent/NaN), [min, max] */
    TMEM_CLI_KIND_CUSTOM,  /* parse(value, out, why) decides */
} tmem_cli_kind;

typedef struct tmem_cli_opt {
    const char *name;      /* "--budget" */
    const char *metavar;   /* "SIZE"; NULL for a flag */
    const char *help;      /* one line for --help */
    tmem_cli_kind kind;
    void *out;
    uint64_t min, max;     /* integers/sizes/seconds: accepted range; max 0 = no upper limit */
    bool (*parse)(const char *value, void *out, const char **why); /* TMEM_CLI_KIND_CUSTOM */
    bool *seen;            /* optional: set when the option was given */
} tmem_cli_opt;

#define TMEM_CLI_FLAG(n, h, p) {(n), NULL, (h), TMEM_CLI_KIND_FLAG, (p), 0, 0, NULL, NULL}
#define TMEM_CLI_STR(n, m, h, p) {(n), (m), (h), TMEM_CLI_KIND_STRING, (void *)(p), 0, 0, NULL, NULL}
#define TMEM_CLI_U64(n, m, h, p, lo, hi) {(n), (m), (h), TMEM_CLI_KIND_U64, (p), (lo), (hi), NULL, NULL}
#define TMEM_CLI_U32(n, m, h, p, lo, hi) {(n), (m), (h), TMEM_CLI_KIND_U32, (p), (lo), (hi), NULL, NULL}
#define TMEM_CLI_SIZE(n, h, p, lo, hi) {(n), "SIZE", (h), TMEM_CLI_KIND_SIZE, (p), (lo), (hi), NULL, NULL}
#define TMEM_CLI_SECONDS(n, h, p, lo, hi) {(n), "S", (h), TMEM_CLI_KIND_SECONDS, (p), (lo), (hi), NULL, NULL}
#define TMEM_CLI_CUSTOM(n, m, h, p, fn) {(n), (m), (h), TMEM_CLI_KIND_CUSTOM, (p), 0, 0, (fn), NULL}

typedef struct tmem_cli {
    const char *command;   /* "tmem fit" */
    const char *synopsis;  /* after the command: "--model NAME --ctx N [options]" */
    const char *about;     /* a sentence or two for --help; may be NULL */
    const tmem_cli_opt *opts;
    size_t nopts;
    const char **const *positional; /* where positional arguments go, in order */
    unsigned min_positional, max_positional;
    const char *epilog;    /* printed after the options by --help (exit codes...); may be NULL */
} tmem_cli;

/* Parse argv[1..argc) (argv[0] is the command's name). Returns
 * TMEM_CLI_CONTINUE when the command should run, 0 after printing --help
 * (stdout), or TMEM_CLI_USAGE after printing a message naming the bad
 * argument and the synopsis (stderr). */
int tmem_cli_parse(const tmem_cli *cli, int argc, char **argv);

/* The full help text (synopsis, about, options, epilog) to f. */
void tmem_cli_help(const tmem_cli *cli, FILE *f);

/* "tmem fit: --ctx: bad value '-1': no sign allowed ...; see tmem fit --help"
 * on stderr; returns TMEM_CLI_USAGE. For checks the table cannot express. */
int tmem_cli_usage_error(const tmem_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict value parsers, for commands that read numbers themselves (the
 * library's parser for integers and sizes). true on success; *why says what
 * is wrong otherwise. */
bool tmem_cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char **why);
bool tmem_cli_parse_size(const char *s, uint64_t *out, const char **why);
bool tmem_cli_parse_seconds(const char *s, double *out, const char **why);
/* "WxH" with both in [min, max]. */
bool tmem_cli_parse_dims(const char *s, uint32_t min, uint32_t max, uint32_t *w, uint32_t *h, const char **why);

/* For commands (the benches) that walk argv themselves: parse option `opt`'s
 * value `v` (NULL = missing) strictly into [min, max]; on failure print
 * "COMMAND: OPT: bad value 'V': why (min..max)" and return false (exit 2). */
bool tmem_cli_value_u64(const char *command, const char *opt, const char *v, uint64_t min, uint64_t max,
                        uint64_t *out);
bool tmem_cli_value_u32(const char *command, const char *opt, const char *v, uint32_t min, uint32_t max,
                        uint32_t *out);
bool tmem_cli_value_seconds(const char *command, const char *opt, const char *v, double max, double *out);

/* A file to read: "-" is stdin (not closed by tmem_cli_close). NULL with
 * errno set on failure. */
FILE *tmem_cli_open_in(const char *path, const char *mode);
void tmem_cli_close(FILE *f);
/* A whole input ("-" = stdin) as a NUL-terminated string; *len optional.
 * NULL with errno set (EISDIR for a directory). */
char *tmem_cli_slurp(const char *path, size_t *len);

/* Why an input path cannot be read, in words ("no such file", "is a
 * directory", "permission denied"), or NULL when it looks readable ("-" is). */
const char *tmem_cli_path_problem(const char *path);

/* tmem_context_create for a command: desc->config_path and, with
 * TMEM_CONTEXT_READ_ENV, $TMEM_CONFIG are loaded with tmem_config_load so
 * that a bad file is reported with its name and line ("tmem info: config
 * bad.conf: line 1: unknown key 'budjet' ..."), not just "malformed input".
 * Any other failure is printed too. *out is NULL on failure. */
tmem_status tmem_cli_context_create(const char *command, const tmem_context_desc *desc, tmem_context **out);

#endif
