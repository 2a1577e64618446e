/* tmem: the typedmem command line. Dispatches to cmd_<name>.c. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "commands.h"
#include "typedmem/typedmem.h"

static int cmd_version(int argc, char **argv) {
    tmem_cli cli = {"tmem version", "", "Print the library version.", NULL, 0, NULL, 0, 0, NULL};
    int rc = tmem_cli_parse(&cli, argc, argv);
    if (rc != TMEM_CLI_CONTINUE) return rc;
    printf("typedmem %d.%d.%d\n", TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    return 0;
}

/* One line per subcommand; keep sorted by how often people use them. */
static const tmem_cmd commands[] = {
    {"version", "tmem version                       print the library version", cmd_version},
    {"run", "tmem run MODEL.gguf -p TEXT [...]   generate with the reference runtime on typed memory", tmem_cmd_run},
    {"serve", "tmem serve MODEL.gguf [--port N] [...]  OpenAI-compatible HTTP server, many sessions, one budget",
     tmem_cmd_serve},
    {"plan",
     "tmem plan FILE.csv [--capacity N] [--time-limit S] [--out F] [--json] [--svg F]  "
     "plan buffer offsets",
     tmem_cmd_plan},
    {"bench", "tmem bench <name> [--json]         benchmarks: ours vs baselines, same run", tmem_cmd_bench},
    {"info", "tmem info [--json]                 limits, OS features and the default memory types", tmem_cmd_info},
    {"stats", "tmem stats [--json]                accounting of a small demo session", tmem_cmd_stats},
    {"demo", "tmem demo                          a VLM session in typed memory, accounted vs measured", tmem_cmd_demo},
    {"fit", "tmem fit --model M --ctx N [...]   will a model + request fit a memory budget?", tmem_cmd_fit},
    {"report",
     "tmem report TRACE [--html out.html] [--json]  what was alive at the peak; HTML/Chrome/SVG",
     tmem_cmd_report},
    {"watch",
     "tmem watch --limit SIZE [--cgroup] -- CMD...  run CMD under a jetsam-style footprint limit",
     tmem_cmd_watch},
    {"convert",
     "tmem convert HF_DIR OUT.gguf [--dtype f16]  Hugging Face Qwen3.5 checkpoint -> qwen35 GGUF",
     tmem_cmd_convert},
    {"gen",
     "tmem gen [--preset P] [--dtype f16] OUT.gguf  random-weight qwen35 GGUF of a preset's shape",
     tmem_cmd_gen},
};

static void usage(FILE *f) {
    fprintf(f, "typedmem %d.%d.%d -- typed memory for on-device inference\n\nusage:\n",
            TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\n  tmem --version | tmem CMD --help   (every command: its options, on stdout)\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) return cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tmem: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
