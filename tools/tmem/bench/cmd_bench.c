/* tmem bench <name> [--json] [options]: dispatch to bench/bench_<name>.c. */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "bench/bench.h"

/* One line per bench; the list ends with a NULL name. */
static const tmem_bench benches[] = {
    {"heap", "general heap vs glibc malloc, mimalloc, jemalloc: mixed sizes, ops/s and latency", tmem_bench_heap},
    {"plan", "lifetime planner vs TFLite greedy-by-size and online best fit", tmem_bench_plan},
    {"surface", "image pipeline: copies, peak and cross-process hand-off, naive vs surfaces", tmem_bench_surface},
    {"vision", "vision encoder on one image: peak dirty, copies, time, typed vs naive", tmem_bench_vision},
    {"trace", "cost of tracing: off vs stopped vs ring vs file, and export speed", tmem_bench_trace},
    {"kv", "paged KV cache vs contiguous max-length buffers: waste, CoW fork savings", tmem_bench_kv},
    {"kern", "runtime matmul kernels: decode GB/s vs a streaming read, prefill GFLOP/s vs scalar", tmem_bench_kern},
    {"run", "the runtime on the Qwen3.5-0.8B shape: typed vs naive memory, speed, fit vs OS peak", tmem_bench_run},
    {"tok", "tokenizer tables indexed in the mapped GGUF vs strings copied: dirty bytes, "
            "encode/decode",
     tmem_bench_tok},
    {"gpu", "model graphs on CUDA: planned typed heap vs cudaMalloc per tensor vs cudaMallocAsync", tmem_bench_gpu},
    {"gpu-run", "the runtime on Vulkan vs on the CPU (and llama.cpp -ngl 99): tok/s, device bytes, host dirty",
     tmem_bench_gpu_run},
    {NULL, NULL, NULL}
};

static void list(FILE *f) {
    fprintf(f, "usage: tmem bench <name> [--json] [options]\nbenches:\n");
    for (const tmem_bench *b = benches; b->name; b++) fprintf(f, "  %-10s %s\n", b->name, b->what);
}

static bool wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
    return false;
}

int tmem_cmd_bench(int argc, char **argv) {
    if (argc < 2) {
        list(stderr);
        return 2;
    }
    /* tmem bench --help, tmem bench NAME --help: on stdout, exit 0 */
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        list(stdout);
        return 0;
    }
    for (const tmem_bench *b = benches; b->name && wants_help(argc, argv); b++)
        if (!strcmp(argv[1], b->name)) {
            printf("usage: tmem bench %s [--json] [options]\n\n%s\n\noptions and the command that reproduces a run: "
                   "docs/benchmarks.md\n", b->name, b->what);
            return 0;
        }
    bool json = false;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--json")) json = true;
    for (const tmem_bench *b = benches; b->name; b++)
        if (!strcmp(argv[1], b->name)) return b->run(argc - 1, argv + 1, json);
    fprintf(stderr, "tmem bench: unknown bench '%s'\n", argv[1]);
    list(stderr);
    return 2;
}
