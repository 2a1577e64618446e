/*
 * libFuzzer target: config text (src/core/config.c) loaded into a fresh
 * context without default types. Checks the contracts besides "no crash":
 * a TMEM_E_PARSE names a line inside the input (or 0) and carries a
 * terminated, printable message starting with "line N: "; a failed load
 * created no type; a successful one left at most 64 types.
 *
 * The process runs under a granted limit of 64 MiB (TMEM_LIMIT, what
 * `tmem watch` grants), like an app's entitlement: libFuzzer's -rss_limit_mb
 * is invisible to the library, and a config's top-level `budget` replaces the
 * context's, so the context budget alone bounds nothing. A config budget
 * above the limit is refused (TMEM_E_BUDGET); before that rule, `budget =
 * 4090MiB` with a 1.6 GiB pinned type went past the fuzzer's RSS limit
 * (corpus/regress-budget-above-limit-oom).
 */
#include "fuzz.h"
#include "typedmem/typedmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(bool ok) {
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool limit_granted;
    if (!limit_granted) check(setenv("TMEM_LIMIT", "67108864", 1) == 0);
    limit_granted = true;
    tmem_context_desc d = {0};
    d.budget = 64u << 20;
    d.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx = NULL;
    if (tmem_context_create(&d, &ctx) != TMEM_OK) return 0;
    tmem_config_error err;
    tmem_status st = tmem_config_load_string(ctx, (const char *)data, size, &err);
    check(memchr(err.message, '\0', sizeof err.message) != NULL);
    for (const char *p = err.message; *p; p++) check(*p >= ' ' && *p <= '~');
    if (st == TMEM_E_PARSE) {
        size_t lines = 1;
        for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
        check(err.line <= lines);
        check(err.message[0] != '\0');
        if (err.line) {
            char prefix[32];
            snprintf(prefix, sizeof prefix, "line %u: ", (unsigned)err.line);
            check(strncmp(err.message, prefix, strlen(prefix)) == 0);
        }
        check(tmem_type_count(ctx) == 0);
    } else if (st == TMEM_OK) {
        check(err.line == 0 && err.message[0] == '\0');
        check(tmem_type_count(ctx) <= 64);
    }
    tmem_context_destroy(ctx);
    return 0;
}
