/* logits_sink.h: a tmrt logits callback that keeps every row it is given
 * (rows[(base + index) * n_vocab ...]), for the parity tests on the CPU and
 * on the GPU. */
#ifndef TMEM_TEST_LOGITS_SINK_H
#define TMEM_TEST_LOGITS_SINK_H

#include <stdint.h>
#include <string.h>
#include "typedmem/status.h"

typedef struct sink {
    float *rows;
    uint32_t n_vocab, base, cap;
} sink;

static inline tmem_status keep(void *user, uint32_t index, const float *logits, uint32_t n_vocab) {
    sink *s = user;
    if (n_vocab != s->n_vocab || s->base + index >= s->cap) return TMEM_E_INVALID_ARG;
    memcpy(s->rows + (size_t)(s->base + index) * n_vocab, logits, n_vocab * sizeof *logits);
    return TMEM_OK;
}

#endif /* TMEM_TEST_LOGITS_SINK_H */
