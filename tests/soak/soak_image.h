/* soak_image.h: the image worker of the soak (tests/soak/test_soak.c).
 *
 * One thread plays a camera: it writes an NV12 frame into a fresh surface
 * of /memory/images (tmem_surface_create in the soak's one context), then
 * the committed tiny vision tower (tests/data/llamacpp/
 * mmproj-qwen35-tiny-vlm-f32.gguf) encodes it in typed memory: the fused
 * conversion NV12 -> patch tensor (one image copy, an IMAGE-role heap), the
 * planned activation arena and the scratch heap, all under the soak's
 * budget. Each frame's embeddings must equal, bitwise, those of the same
 * frame encoded solo before the soak (one encoder thread, so the summation
 * order is fixed). A budget refusal (the surface, the patch heap, the arena
 * or the scratch) is counted, not a failure. Header-only: one soak
 * executable. */
#ifndef TMEM_SOAK_IMAGE_H
#define TMEM_SOAK_IMAGE_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"
#include "tmemrt/vision.h"
#include "typedmem/typedmem.h"

#define SOAK_IMAGE_FRAMES 4 /* distinct frames, each with its solo reference */

typedef struct soak_image_frame {
    uint32_t width, height;
    uint64_t seed;
} soak_image_frame;

static const soak_image_frame k_soak_frames[SOAK_IMAGE_FRAMES] = {
    {64, 48, 21}, {96, 64, 22}, {128, 96, 23}, {80, 80, 24}};

typedef struct soak_image {
    tmem_context *ctx;
    tmrt_vision *vision;
    uint64_t ref[SOAK_IMAGE_FRAMES]; /* FNV-1a of the solo embeddings */
    uint64_t share;                  /* the largest frame's bytes: surface + encode heaps */
    atomic_int *stop;
    atomic_uint_fast64_t *progress;
    /* counters (this thread writes, the main thread reads after the join) */
    atomic_uint_fast64_t frames, encodes, surface_refusals, encode_refusals, failures;
} soak_image;

typedef enum soak_image_outcome {
    SOAK_IMAGE_OK,
    SOAK_IMAGE_SURFACE_REFUSED, /* tmem_surface_create: TMEM_E_BUDGET */
    SOAK_IMAGE_REFUSED,         /* the encoder's patch heap, arena or scratch */
    SOAK_IMAGE_FAILED
} soak_image_outcome;

static uint64_t soak_image_fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t soak_image_page_round(uint64_t n) {
    return (n + 4095) / 4096 * 4096;
}

/* Writes frame f's pixels (Y and interleaved UV planes, deterministic). */
static tmem_status soak_image_fill(tmem_surface *s, const soak_image_frame *f) {
    tmem_status st = tmem_surface_lock(s, 0, NULL);
    if (st != TMEM_OK) return st;
    for (uint32_t k = 0; k < 2 && st == TMEM_OK; k++) {
        tmem_tensor_view v;
        st = tmem_surface_plane_view(s, k, NULL, &v);
        if (st != TMEM_OK) break;
        tmem_rng r;
        tmem_rng_init(&r, f->seed * 3 + k);
        uint64_t row_bytes = (uint64_t)v.shape[1] * (v.rank > 2 ? (uint64_t)v.shape[2] : 1);
        for (uint64_t y = 0; y < (uint64_t)v.shape[0]; y++)
            for (uint64_t x = 0; x < row_bytes; x++)
                ((uint8_t *)v.data)[y * (uint64_t)v.strides[0] + x] =
                    (uint8_t)(tmem_rng_next(&r) >> 56);
    }
    tmem_status unlock = tmem_surface_unlock(s, 0, NULL);
    return st != TMEM_OK ? st : unlock;
}

/* One frame: surface, pixels, encode. On OK, *hash is the embeddings' and
 * *bytes (may be NULL) the frame's budget share: the surface as mapped plus
 * the encoder's three heaps, each rounded to pages. */
static soak_image_outcome soak_image_frame_run(soak_image *w, const soak_image_frame *f,
                                               uint64_t *hash, uint64_t *bytes) {
    tmem_surface_desc sd = {0};
    sd.width = f->width, sd.height = f->height, sd.format = TMEM_FORMAT_NV12;
    tmem_surface *s;
    tmem_status st = tmem_surface_create(w->ctx, &sd, &s);
    if (st == TMEM_E_BUDGET) return SOAK_IMAGE_SURFACE_REFUSED;
    if (st != TMEM_OK) {
        fprintf(stderr, "soak: image surface: %s\n", tmem_status_name(st));
        return SOAK_IMAGE_FAILED;
    }
    tmem_surface_info si;
    st = soak_image_fill(s, f);
    if (st == TMEM_OK) st = tmem_surface_get_info(s, &si);
    if (st != TMEM_OK) {
        fprintf(stderr, "soak: image fill: %s\n", tmem_status_name(st));
        tmem_surface_release(s);
        return SOAK_IMAGE_FAILED;
    }
    atomic_fetch_add(&w->frames, 1);
    tmrt_vision_grid g;
    tmrt_error err = {""};
    if (tmrt_vision_image_grid(w->vision, s, &g, &err) != TMEM_OK) {
        fprintf(stderr, "soak: image grid: %s\n", err.message);
        tmem_surface_release(s);
        return SOAK_IMAGE_FAILED;
    }
    size_t out_h = tmrt_vision_get_config(w->vision)->out_hidden;
    float *emb = calloc((size_t)g.n_tokens * out_h, sizeof *emb);
    if (!emb) {
        tmem_surface_release(s);
        return SOAK_IMAGE_FAILED;
    }
    /* keep_surface = false: the frame goes back as soon as the patches exist */
    tmrt_vision_encode_desc ed = {1, false};
    tmrt_vision_stats vs;
    tmem_status rc = tmrt_vision_encode(w->vision, &s, &ed, emb, out_h, &vs, &err);
    if (s) tmem_surface_release(s);
    soak_image_outcome out = SOAK_IMAGE_OK;
    if (rc != TMEM_OK) {
        out = rc == TMEM_E_BUDGET ? SOAK_IMAGE_REFUSED : SOAK_IMAGE_FAILED;
        if (out == SOAK_IMAGE_FAILED) fprintf(stderr, "soak: image encode: %s\n", err.message);
    } else if (vs.image_copies != 1) {
        fprintf(stderr, "soak: image encode made %u copies, not 1\n", vs.image_copies);
        out = SOAK_IMAGE_FAILED;
    } else {
        *hash = soak_image_fnv(emb, (size_t)g.n_tokens * out_h * sizeof *emb);
        if (bytes)
            *bytes = soak_image_page_round(si.mapped_bytes) +
                     soak_image_page_round(vs.patch_bytes + 4096) +
                     soak_image_page_round(vs.arena_bytes) +
                     soak_image_page_round(vs.scratch_bytes);
    }
    free(emb);
    return out;
}

/* The solo references (idle context); w->share = the largest frame's bytes. */
static bool soak_image_references(soak_image *w) {
    w->share = 0;
    for (int k = 0; k < SOAK_IMAGE_FRAMES; k++) {
        uint64_t bytes = 0;
        if (soak_image_frame_run(w, &k_soak_frames[k], &w->ref[k], &bytes) != SOAK_IMAGE_OK)
            return false;
        if (bytes > w->share) w->share = bytes;
    }
    atomic_store(&w->frames, 0);
    return true;
}

static void *soak_image_main(void *arg) {
    soak_image *w = arg;
    tmem_rng rng;
    tmem_rng_init(&rng, 0x1ea9e);
    while (!atomic_load(w->stop)) {
        uint32_t k = (uint32_t)tmem_rng_range(&rng, 0, SOAK_IMAGE_FRAMES - 1);
        uint64_t h = 0;
        soak_image_outcome o = soak_image_frame_run(w, &k_soak_frames[k], &h, NULL);
        atomic_fetch_add(w->progress, 1);
        if (o == SOAK_IMAGE_SURFACE_REFUSED || o == SOAK_IMAGE_REFUSED) {
            atomic_fetch_add(o == SOAK_IMAGE_REFUSED ? &w->encode_refusals : &w->surface_refusals,
                             1);
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (o == SOAK_IMAGE_FAILED) {
            atomic_fetch_add(&w->failures, 1);
            continue;
        }
        if (h != w->ref[k]) {
            fprintf(stderr, "soak: frame %u: embeddings differ from the solo run\n", k);
            atomic_fetch_add(&w->failures, 1);
        }
        atomic_fetch_add(&w->encodes, 1);
    }
    return NULL;
}

#endif
