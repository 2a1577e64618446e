/* tmem stats [--json]: run a small demo session and print its accounting
 * (the human table, or the JSON of docs/stats.schema.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "commands.h"
#include "demo/demo.h"

int tmem_cmd_stats(int argc, char **argv) {
    bool json = false;
    const tmem_cli_opt opts[] = {TMEM_CLI_FLAG("--json", "print the JSON of docs/stats.schema.json", &json)};
    tmem_cli cli = {"tmem stats", "[--json]",
                    "Run a small demo session (TMEM_CONFIG applies) and print its accounting by type and role.",
                    opts, TMEM_CLI_COUNT(opts), NULL, 0, 0, NULL};
    int rc = tmem_cli_parse(&cli, argc, argv);
    if (rc != TMEM_CLI_CONTINUE) return rc;
    /* Small on purpose: a few seconds on a busy two-core machine. */
    tmem_demo_options o = {0};
    o.budget = 512ull << 20;
    o.prompt_tokens = 128;
    o.decode_tokens = 8;
    o.image_side = 224;
    o.weights_bytes = 32ull << 20;
    o.quiet = true;
    o.command = "tmem stats";
    tmem_context *ctx;
    tmem_status st = tmem_demo_run(&o, &ctx);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem stats: demo session failed: %s\n", tmem_strerror(st));
        return 1;
    }
    size_t need = 0;
    st = json ? tmem_stats_json(ctx, NULL, 0, &need) : tmem_stats_table(ctx, NULL, 0, &need);
    char *buf = st == TMEM_OK ? malloc(need) : NULL;
    if (buf) st = json ? tmem_stats_json(ctx, buf, need, NULL) : tmem_stats_table(ctx, buf, need, NULL);
    if (buf && st == TMEM_OK) fputs(buf, stdout);
    else fprintf(stderr, "tmem stats: %s\n", tmem_strerror(buf ? st : TMEM_E_NO_MEMORY));
    free(buf);
    tmem_context_destroy(ctx);
    return st == TMEM_OK ? 0 : 1;
}
