/* Private to runtime/src/vision: the loaded mmproj and the pieces of the
 * encoder (one concept per file):
 *   mmproj.c      open + validate the GGUF, weight views
 *   preprocess.c  smart resize, the fused conversion into patches (typed) and
 *                 the naive multi-copy chain
 *   encoder.c     the forward pass over a set of buffers (typed or naive)
 *   memory.c      where the buffers come from: planned heaps or mallocs
 *   attention.c   tiled (flash-style) attention with 2D rotary positions
 *   ops.c         LayerNorm, GELU, bias, position-embedding interpolation
 *   writer.c      random mmproj files (tmem gen --mmproj) and presets
 * What the rest of the runtime may use is vision/writer.h (the converter). */
#ifndef TMRT_VISION_INTERNAL_H
#define TMRT_VISION_INTERNAL_H

#include "tmemrt/vision.h"
#include "kern/kern.h"
#include "util/fail.h"
#include "util/graph_acts.h"
#include "vision/writer.h"

typedef struct vis_block {
    kern_wmat qkv, out, up, down;
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    const float *qkv_b, *out_b, *up_b, *down_b;
} vis_block;

typedef struct tmrt_vis_vk tmrt_vis_vk;

struct tmrt_vision {
    tmrt_memory_mode memory;    /* of the weights and of every encode */
    tmem_context *ctx;
    tmem_gguf *gguf;
    void *naive_bytes;          /* naive open: the file read into malloc */
    tmrt_vision_config cfg;
    kern_wmat patch0, patch1, pos, mm0, mm2;
    const float *patch_b, *post_w, *post_b, *mm0_b, *mm2_b;
    vis_block *blocks;
    uint64_t weight_bytes;
    tmrt_use_log *use_log;      /* tests: record the block graph's uses (graph_acts.h); NULL = off */
    tmrt_vis_vk *gpu_enc;       /* opened with a gpu: encodes run there (encoder_vk.c); NULL = CPU */
};

/* ---- ops.c ---- */
/* out = LayerNorm(x) * w + b over n values (two-pass, double accumulation). */
void tmrt__vis_layernorm(float *out, const float *x, const float *w, const float *b, int64_t n, float eps);
void tmrt__vis_gelu_tanh(float *x, int64_t n);
void tmrt__vis_gelu_erf(float *x, int64_t n);
/* y[t][i] += b[i] for n_tok rows of stride ld. */
void tmrt__vis_add_bias(float *y, size_t ld, int64_t n_tok, const float *b, int64_t n);
/* Grid position (row, col) of token t of a grid_w-wide grid in merge order. */
void tmrt__vis_token_pos(uint32_t t, uint32_t grid_w, uint32_t merge, uint32_t *row, uint32_t *col);
/* x[t] += the learned position embedding interpolated to the grid as HF's
 * fast_pos_embed_interpolate does (bilinear, align-corners linspace), for
 * tokens [t0, t1); `rows` is scratch for 4 * hidden floats. */
void tmrt__vis_add_pos_embed(const tmrt_vision *v, const tmrt_vision_grid *g, float *x, uint32_t t0, uint32_t t1,
                       float *rows);

/* ---- attention.c ---- */
enum { VIS_ATTN_BLOCK = 64 };
/* Per-thread scratch floats of tmrt__vis_attention. */
size_t tmrt__vis_attention_scratch_floats(uint32_t head_dim);
/* Rotary positions on q and k of every token of qkv (rows of 3*hidden), in place. */
void tmrt__vis_rope(const tmrt_vision *v, const tmrt_vision_grid *g, float *qkv, kern_pool *pool);
/* out[t][h*hd..] = softmax(q k^T * scale) v per head, tiled: query blocks of
 * VIS_ATTN_BLOCK against key blocks of VIS_ATTN_BLOCK with an online softmax.
 * scratch: n_threads * tmrt__vis_attention_scratch_floats floats. */
void tmrt__vis_attention(const tmrt_vision *v, uint32_t n_tok, const float *qkv, float *out, float *scratch,
                   kern_pool *pool);

/* ---- encoder.c ---- */
/* The buffers one encode uses (pointers into planned heaps or mallocs). */
typedef struct vis_buffers {
    float *patches;                  /* n_patches x C*T*p*p, frame-major */
    tmrt_acts act;                   /* the block graph's buffers by id (layer_in, norm1, ... layer_out) */
    float *attn_scratch;             /* per-thread tiles */
    float *pos_rows;                 /* 4 * hidden */
    void *matmul_scratch;
} vis_buffers;

/* Bytes of matmul scratch for n_tok rows through the largest matrix. */
size_t tmrt__vis_matmul_scratch_bytes(const tmrt_vision *v, uint32_t n_tok, int n_threads);
/* The forward pass from b->patches to `embeddings`. `between` (may be NULL)
 * is called after the patch embedding (the patch tensor is dead then) and
 * after each block (naive mode frees and mallocs there); its failure stops
 * the pass and is returned. */
typedef tmem_status (*tmrt__vis_hook)(void *arg, int stage);
tmem_status tmrt__vis_forward(const tmrt_vision *v, const tmrt_vision_grid *g, vis_buffers *b, float *embeddings,
                              size_t ld, kern_pool *pool, tmrt__vis_hook between, void *arg);

/* ---- memory.c ---- */
/* The vision block's table (tmem_model_graph_get) for this patch count. */
tmem_status tmrt__vis_block_graph(const tmrt_vision *v, uint32_t patches, tmem_model_graph *out, tmrt_error *err);
/* The block graph as a plan problem (buffer i of the graph = plan index i),
 * layer_in and layer_out pinned at offset 0 (their lifetimes do not
 * overlap), every buffer aligned to `align`; image_bytes > 0 adds the
 * encoder's input image (index buf_count) alive in layer_in's first step
 * (the patch embedding) only. */
tmem_status tmrt__vis_plan_block(const tmem_model_graph *gr, uint64_t align, uint64_t image_bytes, tmem_plan **plan,
                                 tmrt_error *err);

/* ---- encoder_vk.c (TMRT_HAVE_VULKAN; else each returns TMEM_E_UNSUPPORTED) ---- */
/* Upload the weights to `gpu` (a Vulkan gpu attached to v->ctx) and open the
 * compute layer there. */
tmem_status tmrt__vis_vk_open(tmrt_vision *v, tmem_gpu *gpu, tmrt_vis_vk **out, tmrt_error *err);
void tmrt__vis_vk_close(tmrt_vis_vk *g);
/* Device bytes of the uploaded weights. */
uint64_t tmrt__vis_vk_weight_bytes(const tmrt_vis_vk *g);
/* tmrt_vision_encode on the device (arguments checked by the caller). */
tmem_status tmrt__vis_vk_encode(tmrt_vision *v, tmem_surface **image, const tmrt_vision_encode_desc *d,
                                float *embeddings, size_t ld, tmrt_vision_stats *stats, tmrt_error *err);

/* ---- preprocess.c ---- */
/* The normalisation the conversion applies (scale 1/255, the config's mean/std). */
void tmrt__vis_convert_desc(const tmrt_vision_config *c, tmem_convert_desc *out);
/* Typed: one fused conversion of the surface into b->patches (frame-major). */
tmem_status tmrt__vis_patches_fused(const tmrt_vision *v, tmem_surface *image, const tmrt_vision_grid *g,
                                    float *patches, tmrt_error *err);
/* Naive: decoded pixels -> malloc RGB -> RGBA texture -> f32 HWC (resized,
 * normalised) -> CHW -> patches, a malloc and a copy per stage; the result is
 * bit-identical to the fused conversion. *copies: the copies made. */
tmem_status tmrt__vis_patches_naive(const tmrt_vision *v, tmem_surface *image, const tmrt_vision_grid *g,
                                    float *patches, uint32_t *copies, tmrt_error *err);

#endif
