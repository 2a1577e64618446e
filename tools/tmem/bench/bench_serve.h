/* bench_serve.h: the llama-server peer of `tmem bench serve` (bench_serve_peer.c). */
#ifndef TMEM_BENCH_SERVE_H
#define TMEM_BENCH_SERVE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct serve_peer_fig {
    bool ok;
    double decode_tok_s;        /* aggregate over the concurrent requests */
    double dirty_peak;          /* the server process's peak Private_Dirty, bytes */
} serve_peer_fig;

/* llama-server at `server` on `model` with -np sessions, `sessions`
 * concurrent requests of `prompt` token ids (below vocab) and `gen` tokens
 * each, -t threads. ok false when it cannot start or a request fails. */
serve_peer_fig tmem_bench_serve_peer(const char *server, const char *model, uint32_t sessions, uint32_t prompt,
                                     uint32_t gen, uint32_t threads, uint32_t vocab);

#endif
