/**
 * @file convert.h
 * @brief Model files for the runtime: convert a Hugging Face Qwen3.5
 *        checkpoint to GGUF (tmrt_convert) and generate random-weight GGUFs
 *        of a preset's shape (tmrt_gen).
 *
 * Both write llama.cpp's `qwen35` layout: its metadata keys, tensor names
 * and the layout transforms of llama.cpp's converter (V heads of the Gated
 * DeltaNet tensors in tiled order, `ssm_a` = -exp(A_log), the `1 + w` of
 * Qwen3.5's RMSNorm folded into the stored weights, conv1d squeezed), so a
 * file from either side loads on the other. docs/convert.md lists every key,
 * name and transform with its reason.
 *
 * Output is streamed to disk (tmem_gguf_stream): memory stays at a few MiB
 * whatever the model size; the input checkpoint is mapped read-only into the
 * context's FILE type (/memory/weights), clean pages.
 *
 * @par Threads
 * Each call is self-contained (one thread); calls on different contexts may
 * run in parallel.
 */
#ifndef TMEMRT_CONVERT_H
#define TMEMRT_CONVERT_H

#include <typedmem/typedmem.h>
#include <tmemrt/error.h>

TMEM_EXTERN_C_BEGIN

/** @brief Progress: `done` of `total` output bytes written (total is known
 *  from the start). Called at most every few MiB. */
typedef void (*tmrt_progress_fn)(void *user, uint64_t done, uint64_t total);

/** @brief What a conversion or generation wrote. */
typedef struct tmrt_convert_result {
    uint64_t file_bytes;      /**< size of the text GGUF */
    uint64_t tensors;         /**< tensors written */
    uint64_t params;          /**< elements of all tensors */
    uint32_t n_layers, n_full_attention, n_linear_attention;
    bool tokenizer;           /**< tokenizer.ggml.* written */
    uint64_t mmproj_bytes;    /**< size of the mmproj GGUF (0 = none) */
} tmrt_convert_result;

/** @brief A Hugging Face checkpoint to convert. Zeroed = defaults. */
typedef struct tmrt_convert_desc {
    const char *hf_dir;       /**< required: config.json + *.safetensors (sharded:
                                   model.safetensors.index.json) [+ tokenizer files] */
    const char *out_path;     /**< required: the text model GGUF */
    const char *mmproj_path;  /**< optional: also write the vision tower (mmproj GGUF);
                                   if that fails the text model is removed too */
    tmem_weight_dtype dtype;  /**< DEFAULT = F16; F32, F16, BF16 or Q8_0 for the 2-D
                                 weights (1-D tensors, norms and conv1d stay F32,
                                 Q8_0 rows not a multiple of 32 fall back to F16,
                                 as llama.cpp does) */
    const char *name;         /**< general.name; NULL = the directory's name */
    tmrt_progress_fn progress;
    void *progress_user;
} tmrt_convert_desc;

/** @brief Convert a Qwen3.5 text checkpoint (`model_type` "qwen3_5_text", or
 *  the text part of a "qwen3_5" config with `text_config`). Every tensor of
 *  the checkpoint must be accounted for: a missing one, one of the wrong
 *  shape, an unknown one (e.g. a bias the architecture has not), a NaN or
 *  infinite weight, or a config field missing or inconsistent stops the
 *  conversion with a message naming it, and no output file is left.
 *  Vision tensors are skipped unless mmproj_path is set; MTP tensors
 *  (`mtp.*`) are skipped (the runtime does not run them).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, missing path) | TMEM_E_NOT_FOUND
 *          (no config.json / safetensors / a tensor) | TMEM_E_PARSE /
 *          TMEM_E_CORRUPT (a malformed file, a wrong shape, non-finite
 *          weights) | TMEM_E_UNSUPPORTED (another architecture, rope scaling,
 *          a dtype) | TMEM_E_IO | TMEM_E_NO_MEMORY | the OS errors of opening
 *          and writing files.
 *  @param[out] out  may be NULL.  @param[out] err  may be NULL.
 *  @par Threads one call per context at a time */
TMEM_API TMEM_NODISCARD tmem_status tmrt_convert(tmem_context *ctx, const tmrt_convert_desc *desc,
                                                 tmrt_convert_result *out, tmrt_error *err);

/** @brief Random weights of a model shape. Zeroed = defaults. */
typedef struct tmrt_gen_desc {
    const tmem_model_desc *model; /**< required: a preset (tmem_model_preset) or any
                                       qwen35-shaped descriptor */
    const char *out_path;     /**< required */
    const char *mmproj_path;  /**< optional: a random vision tower too */
    tmem_weight_dtype dtype;  /**< DEFAULT = F16; as tmrt_convert_desc::dtype */
    uint64_t seed;            /**< same seed, same bytes */
    bool no_tokenizer;        /**< leave tokenizer.ggml.* out (also left out when
                                   n_vocab < 283: too small for the synthetic BPE) */
    tmrt_progress_fn progress;
    void *progress_user;
} tmrt_gen_desc;

/** @brief Write a GGUF with the qwen35 layout of `model`, a synthetic
 *  byte-level BPE tokenizer of its vocabulary size (tmrt_tokenizer_synth_write,
 *  so `tmem run -p TEXT` works on it) and deterministic random weights at a
 *  scale that keeps activations finite through every
 *  layer (docs/convert.md: projections uniform with std 1/sqrt(fan_in),
 *  output projections further divided by sqrt(2 x layers), norms near 1,
 *  A and dt_bias in the ranges Qwen3.5 initialises them to). Rope theta
 *  1e7, partial rotary 0.25, sections [11, 11, 10, 0], eps 1e-6 (Qwen3.5's).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, bad shape) | TMEM_E_UNSUPPORTED
 *          (dtype) | TMEM_E_IO | TMEM_E_NO_MEMORY | the OS errors of writing.
 *  @par Threads one call per context at a time */
TMEM_API TMEM_NODISCARD tmem_status tmrt_gen(tmem_context *ctx, const tmrt_gen_desc *desc,
                                             tmrt_convert_result *out, tmrt_error *err);

TMEM_EXTERN_C_END

#endif /* TMEMRT_CONVERT_H */
