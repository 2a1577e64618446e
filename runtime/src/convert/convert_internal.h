/* convert_internal.h: the pieces of tmrt_convert / tmrt_gen.
 *
 *   qwen35_layout.c   the qwen35 GGUF layout: tensor list (names, shapes,
 *                     types, HF sources, transforms) and metadata keys
 *   convert_config.c  config.json -> cv_hparams
 *   convert_source.c  the checkpoint's safetensors shards, by tensor name
 *   convert_rows.c    one tensor's bytes: source -> f32 -> transform -> type
 *   convert_tokenizer.c  HF tokenizer files -> tokenizer.ggml.*
 *   convert.c / gen.c the two entry points
 *   convert_vision.c  the vision tower (mmproj), owned by the vision work:
 *                     it plugs in through tmrt__cv_vision_convert / tmrt__cv_vision_gen
 */
#ifndef TMRT_CONVERT_INTERNAL_H
#define TMRT_CONVERT_INTERNAL_H

#include "tmemrt/convert.h"
#include "util/fail.h"
#include <stdio.h>

#define CV_MAX_LAYERS 256
#define CV_NAME 64
#define CV_HF_NAME 112

/* Everything the qwen35 layout and the forward pass need from a config. */
typedef struct cv_hparams {
    char name[CV_NAME];
    uint32_t n_layers, n_embd, n_ff, n_vocab, n_ctx_train;
    uint32_t n_head, n_head_kv, head_dim;
    uint32_t rope_dim;                 /* partial_rotary_factor x head_dim */
    int32_t rope_sections[4];
    double rope_theta, rms_eps;
    uint32_t ssm_conv_kernel;          /* linear_conv_kernel_dim */
    uint32_t ssm_k_heads, ssm_k_dim;   /* linear_num_key_heads, linear_key_head_dim */
    uint32_t ssm_v_heads, ssm_v_dim;   /* linear_num_value_heads, linear_value_head_dim */
    uint32_t full_attn_interval;       /* 0 when the layer pattern is not periodic */
    bool recurrent[CV_MAX_LAYERS];     /* layer i is Gated DeltaNet */
    bool tied;                         /* tie_word_embeddings */
    /* token ids from config.json (-1 = unset), for the tokenizer part */
    int64_t bos_id, eos_id, pad_id;
} cv_hparams;

/* Element-wise transform applied to every value (f32). */
typedef enum cv_op {
    CV_OP_NONE = 0,
    CV_OP_PLUS1,   /* Qwen3.5 RMSNorm computes x * (1 + w): store 1 + w */
    CV_OP_NEG_EXP, /* ssm_a = -exp(A_log) */
} cv_op;

/* How a tensor's values are initialised by tmrt_gen. */
typedef enum cv_init {
    CV_INIT_PROJ = 0,  /* uniform, std 1 / sqrt(fan_in) */
    CV_INIT_PROJ_OUT,  /* ... / sqrt(2 x layers): the residual branches' outputs */
    CV_INIT_EMBD,      /* token embedding */
    CV_INIT_NORM,      /* 1 + small noise */
    CV_INIT_SSM_A,     /* -uniform(1, 16) */
    CV_INIT_DT_BIAS,   /* softplus^-1 of dt = exp(uniform(log 1e-3, log 1e-1)) */
} cv_init;

/* A V-head reorder (grouped by key head -> tiled), along the rows or the
 * columns of the HF matrix, for the indices [start, ...) in heads of `hd`. */
typedef struct cv_reorder {
    uint8_t axis;      /* 0 none, 1 rows, 2 columns */
    uint32_t start, hd;
} cv_reorder;

/* One GGUF tensor of the layout. */
typedef struct cv_tensor {
    char name[CV_NAME];           /* "blk.3.ssm_a" */
    char hf[CV_HF_NAME];          /* "model.layers.3.linear_attn.A_log" ("" = none) */
    uint32_t n_dims;              /* GGUF */
    uint64_t ne[4];               /* GGUF order: ne[0] contiguous */
    uint32_t hf_dims;             /* the checkpoint's rank (conv1d: 3) */
    uint64_t hf_shape[4];         /* PyTorch order */
    uint32_t type;                /* tmem_ggml_type written */
    cv_op op;
    cv_reorder reorder;
    cv_init init;
    uint32_t layer;               /* UINT32_MAX for global tensors */
} cv_tensor;

/* The tensor list of the layout for h, every type chosen for `dtype`
 * (llama.cpp's rules). *out is malloc'd; free() it. */
tmem_status tmrt__cv_layout_tensors(const cv_hparams *h, tmem_weight_dtype dtype, cv_tensor **out, size_t *n,
                              tmrt_error *err);
/* general.* and qwen35.* keys. */
tmem_status tmrt__cv_layout_metadata(tmem_gguf_writer *w, const cv_hparams *h, tmem_weight_dtype dtype);
/* Check a shape for the layout (head divisibility, ranges). */
tmem_status tmrt__cv_hparams_check(const cv_hparams *h, tmrt_error *err);
/* Layer kinds from the interval (0 = keep recurrent[] as given). */
void tmrt__cv_hparams_set_interval(cv_hparams *h, uint32_t interval);

/* config.json of hf_dir -> h. */
tmem_status tmrt__cv_config_read(tmem_context *ctx, const char *hf_dir, cv_hparams *h, tmrt_error *err);

/* A whole file read into memory (small JSON files). NOT_FOUND if absent. */
tmem_status tmrt__cv_read_file(const char *path, char **data, size_t *len, tmrt_error *err);

/* The checkpoint's tensors over all shards. */
typedef struct cv_source cv_source;
tmem_status tmrt__cv_source_open(tmem_context *ctx, const char *hf_dir, cv_source **out, tmrt_error *err);
void tmrt__cv_source_close(cv_source *s);
/* Find by normalised name ("language_model." removed, as llama.cpp does);
 * marks it used. */
tmem_status tmrt__cv_source_find(cv_source *s, const char *name, tmem_safetensors_tensor *out);
/* The first tensor never found whose name does not start with one of the
 * `ignore` prefixes (NULL-terminated list), or NULL. */
const char *tmrt__cv_source_unused(const cv_source *s, const char *const *ignore);

/* Encode one tensor from its source (convert) or from the generator (gen)
 * and stream it out; progress via the tracker. */
typedef struct cv_progress {
    tmrt_progress_fn fn;
    void *user;
    uint64_t done, total, last;
} cv_progress;
void tmrt__cv_progress_add(cv_progress *p, uint64_t bytes);

/* The checkpoint tensor has the shape the config implies and a float dtype. */
tmem_status tmrt__cv_rows_check(const cv_tensor *t, const tmem_safetensors_tensor *src, tmrt_error *err);
tmem_status tmrt__cv_rows_convert(tmem_gguf_stream *s, const cv_tensor *t, const cv_hparams *h,
                            const tmem_safetensors_tensor *src, cv_progress *p, tmrt_error *err);
tmem_status tmrt__cv_rows_generate(tmem_gguf_stream *s, const cv_tensor *t, const cv_hparams *h, uint64_t seed,
                             cv_progress *p, tmrt_error *err);
/* Bytes of a tensor of the layout. */
uint64_t tmrt__cv_tensor_bytes(const cv_tensor *t);

/* A writer holding the layout's metadata for h. */
tmem_status tmrt__cv_writer_new(const cv_hparams *h, tmem_weight_dtype dtype, tmem_gguf_writer **w,
                                tmrt_error *err);
/* Declare the tensors on w and stream them to path (src: their checkpoint
 * views, NULL = generate with seed). */
tmem_status tmrt__cv_write_model(tmem_gguf_writer *w, const char *path, const cv_tensor *t, size_t n,
                                 const cv_hparams *h, const tmem_safetensors_tensor *src, uint64_t seed,
                                 tmrt_progress_fn fn, void *user, uint64_t *file_bytes,
                                 tmrt_error *err);
void tmrt__cv_fill_result(tmrt_convert_result *out, const cv_tensor *t, size_t n, const cv_hparams *h, uint64_t bytes,
                    bool tokenizer);

/* HF tokenizer files (tokenizer.json, tokenizer_config.json) -> keys.
 * *written false (and TMEM_OK) when the directory has none. */
tmem_status tmrt__cv_tokenizer_convert(tmem_context *ctx, tmem_gguf_writer *w, const char *hf_dir, const cv_hparams *h,
                                 bool *written, tmrt_error *err);

/* Vision tower plug-in points (convert_vision.c). */
tmem_status tmrt__cv_vision_convert(tmem_context *ctx, const char *hf_dir, const char *mmproj_path,
                                    tmem_weight_dtype dtype, uint64_t *file_bytes, tmrt_error *err);
tmem_status tmrt__cv_vision_gen(tmem_context *ctx, const tmem_model_desc *m, const char *mmproj_path,
                          tmem_weight_dtype dtype, uint64_t seed, uint64_t *file_bytes, tmrt_error *err);

#endif /* TMRT_CONVERT_INTERNAL_H */
