/* The peer of `tmem bench run`: llama.cpp's own tools (llama-bench,
 * llama-mtmd-cli) from a build directory the user names with
 * `--peer llama.cpp=BUILD_DIR`, run on the same GGUF files in the same bench
 * run, so the ratios are of one minute of one machine. (bench_peer.c) */
#ifndef TMEM_BENCH_PEER_H
#define TMEM_BENCH_PEER_H

#include <stdbool.h>

typedef struct bench_peer {
    char bin[1024]; /* the directory holding llama-bench, llama-mtmd-cli */
} bench_peer;

/* Parse "llama.cpp=DIR" (DIR or DIR/bin holding an executable llama-bench)
 * into *p. false, with a message on stderr, if the spec or the directory is
 * wrong; *p is then unspecified. */
bool bench_peer_parse(const char *spec, bench_peer *p);

/* One llama-bench test on model with `threads` threads and one repetition
 * (after llama-bench's own warm-up): `-p n_prompt -n n_gen -d n_depth`.
 * *tok_s gets its tokens per second, *peak_dirty the process's peak
 * Private_Dirty in bytes (sampled). false if it failed (a message on stderr). */
bool bench_peer_llama_bench(const bench_peer *p, const char *model, unsigned threads,
                            unsigned n_prompt, unsigned n_gen, unsigned n_depth, double *tok_s,
                            double *peak_dirty);

/* What llama-mtmd-cli reported for one image + prompt. */
typedef struct bench_peer_mtmd {
    bool ok;
    double encode_ms;     /* the sum of its "slice encoded in N ms" lines */
    double prefill_tok_s; /* llama_perf's prompt eval (text and image tokens) */
    double decode_tok_s;  /* llama_perf's eval */
    double peak_dirty, wall_s, cpu_s;
} bench_peer_mtmd;

/* llama-mtmd-cli -m model --mmproj mmproj --image image -p TEXT -n n_gen -t
 * threads -c ctx --temp 0, its figures parsed from what it prints. r->ok
 * false if it failed (a message on stderr). */
bench_peer_mtmd bench_peer_run_mtmd(const bench_peer *p, const char *model, const char *mmproj,
                                    const char *image, unsigned threads, unsigned ctx,
                                    unsigned n_gen);

#endif
