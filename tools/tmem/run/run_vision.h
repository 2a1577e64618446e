/* run_vision.h: the image part of `tmem run` (--mmproj, --image,
 * --image-raw, --embeddings-out): the mmproj and the image, the prompt's
 * <image> marker expanded to <|vision_start|> + image tokens +
 * <|vision_end|>, the M-RoPE positions of the sequence, the encoder run
 * before the text session exists (its memory is gone before the prefill's
 * arenas are made) and the image rows handed to the prefill batches. */
#ifndef TMEM_TOOL_RUN_VISION_H
#define TMEM_TOOL_RUN_VISION_H

#include <stdio.h>
#include "tmemrt/runtime.h"
#include "tmemrt/tokenizer.h"
#include "tmemrt/vision.h"

typedef struct run_vision {
    const char *mmproj, *image, *raw_spec, *raw_file, *embeddings_out;
    bool naive;
    bool vulkan;               /* --device vulkan: the encoder on the GPU (the text stays on the CPU) */
    tmem_gpu *gpu;
    uint64_t min_pixels, max_pixels; /* --min-pixels / --max-pixels; 0 = the mmproj's */
    tmrt_vision *v;
    tmem_surface *img;
    tmrt_vision_grid grid;
    uint32_t image_w, image_h;  /* as decoded */
    tmrt_vision_stats stats;
    float *embd;               /* n_tokens x n_embd, until the prefill took them */
    tmem_heap *embd_heap;      /* typed: VISION_INTERMEDIATE */
    int32_t *positions;        /* 4 per prompt token (t, h, w, t) */
    uint32_t first, n_tokens;  /* the image tokens in the prompt */
    int32_t next_pos;          /* M-RoPE position of the first generated token */
    int32_t image_id, start_id, end_id;
} run_vision;

/* Consumes a vision option at argv[i]: returns the arguments used (0: not a
 * vision option), -1 for a bad or missing value. */
int run_vision_parse(run_vision *rv, int argc, char **argv, int i);
/* Whether an image was asked for. */
bool run_vision_active(const run_vision *rv);
/* Open the mmproj, decode the image, size its grid. 0 or -1 (message printed). */
int run_vision_open(run_vision *rv, tmem_context *ctx, bool naive, const tmrt_tokenizer *tok,
                    const tmrt_hparams *hp);
/* The prompt with the image: `<image>` replaced (or the image first) by
 * the vision tokens; malloc'ed, NULL on failure. */
char *run_vision_prompt(const run_vision *rv, const char *prompt);
/* Find the image tokens in the prompt ids, build the positions. 0 or -1. */
int run_vision_layout(run_vision *rv, const int32_t *prompt, uint32_t n_prompt);
/* Encode the image into its embedding rows. 0 or -1. */
int run_vision_encode(run_vision *rv, tmem_context *ctx, uint32_t n_embd, uint32_t threads);
/* Fill the batch's positions and image rows for prompt tokens [first, first + n). */
void run_vision_batch(const run_vision *rv, tmrt_batch *b, uint32_t first, uint32_t n);
/* After a prefill batch ending at `end`: release the image rows once consumed. */
void run_vision_after_batch(run_vision *rv, uint32_t end);
/* Positions of generated token k (0-based), NULL without an image. */
const int32_t *run_vision_decode_positions(run_vision *rv, uint32_t k, int32_t buf[4]);
/* One line (text) about the encode. */
void run_vision_report(const run_vision *rv, FILE *f);
void run_vision_free(run_vision *rv);

#endif
