/**
 * @file vision.h
 * @brief Qwen3.5 / Qwen3-VL vision encoder on typed memory: an image surface
 *        -> one fused conversion into patches -> ViT blocks -> 2x2 merger ->
 *        image embeddings (rows of the text model's hidden size).
 *
 * Weights come from a llama.cpp mmproj GGUF (clip.vision.* keys, v.blk.N.*,
 * v.patch_embd.weight / .weight.1 / .bias, v.position_embd.weight,
 * v.post_ln.*, mm.0.*, mm.2.*), mapped read-only into a FILE type and
 * validated against the config at open.
 *
 * Memory (typed mode): the patch tensor is one allocation of an IMAGE-role
 * heap; the encoder's activations are one placement heap of the
 * VISION_INTERMEDIATE role laid out by the library's planner for this image's
 * grid (tmem_model_layer_graph's vision block, re-used by every block);
 * attention is tiled (online softmax, never the patches x patches scores)
 * with per-thread tiles in a scratch heap. Everything but the caller's
 * embeddings is released before tmrt_vision_encode returns, and the source
 * surface as soon as the patch tensor exists. Naive mode (the baseline)
 * copies the image at every stage (RGB -> RGBA texture -> f32 HWC -> CHW ->
 * patches) and mallocs every tensor; the embeddings are bit-identical. The
 * mode is chosen once, at open, as for the text model (tmrt_vision_desc::
 * memory, like tmrt_model_desc::memory): it places the weights and every
 * encode of the handle.
 *
 * Errors follow the runtime's convention (error.h): a tmem_status, and a
 * message in the tmrt_error (may be NULL) where the status alone cannot say.
 *
 * Threads: a tmrt_vision is read-only after open (but for
 * tmrt_vision_set_pixel_bounds); tmrt_vision_encode may run from several
 * threads at once on one model (each call owns its memory; on a handle
 * opened with a gpu the calls are serialised: they share its device arena
 * and recording).
 *
 * GPU (tmrt_vision_desc::gpu, docs/vision.md "The GPU image path"): the
 * weights are uploaded once at open; an encode plans a device arena for its
 * grid and records the forward pass, both kept for the next encode of the
 * same grid (a camera loop allocates nothing), and so is the import of the
 * last NV12 surface (retained until another surface comes or the handle
 * closes). An NV12 frame is read by a shader while the encode holds a use
 * of it (tmem_surface_use_begin); a writer that marks its writes as uses
 * (use_begin, lock, write, unlock, use_end) is never read half-written: the
 * encode converts again, up to 8 times, then fails with TMEM_E_BUSY.
 */
#ifndef TMEMRT_VISION_H
#define TMEMRT_VISION_H

#include <stddef.h>
#include <typedmem/typedmem.h>
#include <tmemrt/runtime.h>
#include <typedmem/gpu.h>

TMEM_EXTERN_C_BEGIN

typedef struct tmrt_vision tmrt_vision;

/** @brief The encoder's shape and preprocessing (from the mmproj's keys). */
typedef struct tmrt_vision_config {
    uint32_t depth, hidden, heads, ff; /**< blocks, width, heads, MLP width */
    uint32_t patch, merge, temporal;   /**< 16, 2, 2 for Qwen3.5 */
    uint32_t out_hidden;               /**< merger output = text hidden size */
    uint32_t n_pos;                    /**< learned position embeddings (a square: 48^2) */
    float eps;                         /**< LayerNorm epsilon */
    float mean[3], std[3];             /**< normalisation (0.5 for Qwen3.5) */
    uint64_t min_pixels, max_pixels;   /**< smart-resize bounds */
} tmrt_vision_config;

/** @brief Where an image lands: the resized size and the patch grid. */
typedef struct tmrt_vision_grid {
    uint32_t width, height;   /**< resized pixels (multiples of patch*merge) */
    uint32_t grid_w, grid_h;  /**< patches across and down */
    uint32_t n_patches;       /**< grid_w * grid_h */
    uint32_t n_tokens;        /**< merged tokens = n_patches / merge^2 */
} tmrt_vision_grid;

/** @brief Describes an mmproj to open. Zeroed = defaults. */
typedef struct tmrt_vision_desc {
    const char *path;           /**< mmproj GGUF; required */
    tmrt_memory_mode memory;    /**< TYPED: mapped into the WEIGHTS role's FILE type, encodes
                                     on planned heaps; NAIVE: read into malloc'd memory, encodes
                                     with a malloc per tensor and a copy per image stage */
    tmem_gpu *gpu;              /**< NULL: encode on the CPU. A Vulkan gpu attached to ctx (typed
                                     mode only): the weights are uploaded to a DEVICE type at open
                                     and every encode runs there (docs/vision.md, "The GPU image
                                     path"); must outlive the handle */
} tmrt_vision_desc;

/** @brief Open an mmproj GGUF and check it against its config (every
 *  tensor's type and shape, NaN/Inf in norms and biases).
 *  @param ctx  typed mode: the context the weights are charged to and the
 *              encodes' heaps come from; naive mode: may be NULL.
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; names the file, key or tensor.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL desc, path or out, typed
 *          without ctx, an unknown mode, a gpu with naive memory)
 *          | TMEM_E_NOT_FOUND (cannot open, a missing key or tensor)
 *          | TMEM_E_UNSUPPORTED (another projector, a weight type the kernels
 *          lack; with a gpu: not Vulkan, no Vulkan in this build, the
 *          device's types not attached to ctx, no host mapping for staging)
 *          | TMEM_E_CORRUPT (a wrong shape, inconsistent keys, NaN) | TMEM_E_IO
 *          | TMEM_E_NO_MEMORY | TMEM_E_BUDGET (the weights on the device) | the
 *          errors of tmem_gguf_open and of the weight upload
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_open(tmem_context *ctx, const tmrt_vision_desc *desc,
                                                     tmrt_vision **out, tmrt_error *err);

/** @brief Close (unmap or free); NULL is a no-op.
 *  @par Threads externally synchronized (no encode in flight) */
TMEM_API void tmrt_vision_close(tmrt_vision *v);

/** @brief The model's config (valid until close); NULL for NULL.
 *  @par Threads safe */
TMEM_API const tmrt_vision_config *tmrt_vision_get_config(const tmrt_vision *v);

/** @brief The smart resize's pixel bounds an mmproj GGUF asks for, as
 *  tmrt_vision_open reads them: clip.vision.image_min_pixels /
 *  image_max_pixels (ours: the processor's size), else llama.cpp's limits for
 *  Qwen-VL projectors, 8 .. 4096 merged tokens of (patch x merge)^2 pixels.
 *  Reads only those two keys (tmem fit sizes an image with it).
 *  @param[out] min_pixels, max_pixels  unchanged on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (a NULL pointer, zero patch or
 *          merge) | TMEM_E_CORRUPT (a bound 0, above 2^24, not an integer,
 *          or min > max)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_pixel_bounds(const tmem_gguf *g, uint32_t patch, uint32_t merge,
                                                             uint64_t *min_pixels, uint64_t *max_pixels);

/** @brief Override the smart resize's pixel bounds (what Hugging Face's
 *  processor takes as min_pixels / max_pixels); 0 keeps that bound. Later
 *  tmrt_vision_image_grid / tmrt_vision_encode calls use the new bounds.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (v NULL, min > max, max_pixels
 *          above 2^32, a bound below one merged token, patch*merge
 *          squared); v is unchanged on failure
 *  @par Threads externally synchronized (no encode in flight) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_set_pixel_bounds(tmrt_vision *v, uint64_t min_pixels,
                                                                 uint64_t max_pixels);

/** @brief Bytes of the weights (mapped: clean, FILE type; naive: malloc'd);
 *  0 for NULL.
 *  @par Threads safe */
TMEM_API uint64_t tmrt_vision_weight_bytes(const tmrt_vision *v);

/** @brief Hugging Face's smart_resize: each side rounded (half to even) to a
 *  multiple of patch*merge, then scaled into [min_pixels, max_pixels]
 *  keeping the aspect ratio. Pure.
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, zero patch or merge, a side
 *          smaller than patch*merge or zero, an aspect ratio above 200 (as
 *          HF refuses them), a result above TMEM_SURFACE_MAX_DIM)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_smart_resize(const tmrt_vision_config *c, uint32_t width,
                                                             uint32_t height, tmrt_vision_grid *out);

/** @brief An encode request. Zeroed = defaults. */
typedef struct tmrt_vision_encode_desc {
    int n_threads;            /**< 0 = 1; at most 256 */
    bool keep_surface;        /**< false: release the caller's surface reference
                                   as soon as the patch tensor exists */
} tmrt_vision_encode_desc;

/** @brief What an encode did. */
typedef struct tmrt_vision_stats {
    tmrt_vision_grid grid;
    double preprocess_ms, encode_ms;
    uint64_t patch_bytes;     /**< the patch tensor */
    uint64_t arena_bytes;     /**< the planned activation arena (typed) or the
                                   sum of the block's tensors (naive) */
    uint64_t scratch_bytes;   /**< attention tiles, matmul scratch */
    uint32_t image_copies;    /**< copies of the image on its way to patches (GPU: 1 for an
                                   imported NV12 frame, the shader's conversion) */
    uint64_t device_bytes;    /**< GPU: the device arena, the embeddings' and staging buffers */
    uint32_t frame_tries;     /**< GPU, NV12: conversions run until one saw the frame unchanged */
} tmrt_vision_stats;

/** @brief The grid an image surface will get (no work done).
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a surface, an image
 *          the smart resize refuses: err says which)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_image_grid(const tmrt_vision *v, tmem_surface *image,
                                                           tmrt_vision_grid *out, tmrt_error *err);

/** @brief Encode one image into `embeddings` (grid.n_tokens rows of
 *  out_hidden floats, row stride `ld` floats >= out_hidden), e.g. straight
 *  into the prefill's input rows, in the handle's memory mode. `*image` is
 *  released (and set NULL) once the patches exist unless
 *  desc->keep_surface. The image may be any format tmem_surface_convert
 *  reads (RGB8, RGBA8, BGRA8, GRAY8, NV12, I420; naive mode: not the
 *  tensor formats). Everything but the embeddings is released before the
 *  call returns, on success and on failure.
 *  @param desc  NULL = defaults.
 *  @param[out] stats  may be NULL; zeroed on failure.
 *  @param[out] err  may be NULL; budget refusals name the heap.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, ld < out_hidden, threads
 *          outside 0..256, an image the smart resize refuses)
 *          | TMEM_E_UNSUPPORTED (a format the naive chain cannot read)
 *          | TMEM_E_BUDGET | TMEM_E_NO_MEMORY | the errors of the surface
 *          conversion and of the planner | GPU: TMEM_E_BUSY (an NV12 frame
 *          rewritten during every try), TMEM_E_OS (device lost; err names the
 *          call); on failure the embeddings are
 *          undefined and *image was released only when the patch tensor
 *          was already made
 *  @par Threads safe (calls on one model may run at once; each owns its memory) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_encode(tmrt_vision *v, tmem_surface **image,
                                                       const tmrt_vision_encode_desc *desc, float *embeddings,
                                                       size_t ld, tmrt_vision_stats *stats, tmrt_error *err);

/* ---- writing mmproj files (tmem gen / tmem convert --mmproj) ---- */

/** @brief Write an mmproj GGUF of config c with deterministic random weights
 *  (matrices in `ggml_type`: F32, F16, BF16 or Q8_0; norms and biases F32;
 *  position embeddings in F32 or F16 like the matrices) scaled so
 *  activations stay O(1) through every block. Streamed: memory stays small;
 *  no file is left on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, Q8_0 with sizes not multiples
 *          of 32) | TMEM_E_UNSUPPORTED (the type) | TMEM_E_NO_MEMORY
 *          | TMEM_E_IO and the OS errors of writing
 *  @par Threads safe (distinct paths) */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_write_random(const tmrt_vision_config *c, uint32_t ggml_type,
                                                             uint64_t seed, const char *path, tmrt_error *err);

/** @brief The vision config of a named preset ("qwen3.5-0.8b", "qwen3.5-2b",
 *  "tiny" for tests; case-insensitive).
 *  @param[out] out  unchanged on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_NOT_FOUND (unknown name)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_vision_preset(const char *name, tmrt_vision_config *out);

TMEM_EXTERN_C_END

#endif /* TMEMRT_VISION_H */
