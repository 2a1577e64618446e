/**
 * @file defaults.h
 * @brief The reference runtime's defaults, in one place: what a zeroed
 *        field of tmrt_session_desc (runtime.h) becomes. Included by
 *        runtime.h.
 *
 * Every default the runtime applies is named here and nowhere else written
 * as a number; the command line (`tmem run`) passes 0 for "default" and
 * reads the decision back from tmrt_session_info, so there is one rule per
 * default, applied by the session.
 *
 * The DeltaNet chunk (64 tokens) is a property of the layer graph, not of
 * the runtime: it is the library's TMEM_MODEL_DELTA_CHUNK (model.h), used
 * by both the graph (src/model/layer_graph.c) and the forward pass
 * (runtime/src/forward/deltanet.c).
 */
#ifndef TMEMRT_DEFAULTS_H
#define TMEMRT_DEFAULTS_H

#include <typedmem/model.h>

/** Context of a session whose tmrt_session_desc::n_ctx is 0.
 *
 *  The one rule: n_ctx = max(n_ctx_min, min(TMRT_DEFAULT_CTX, n_ctx_train)),
 *  where n_ctx_train is the model's trained context (tmrt_hparams) and
 *  n_ctx_min is tmrt_session_desc::n_ctx_min (the tokens the caller knows
 *  the request needs, 0 = none; an n_ctx_train of 0, unknown, counts as
 *  TMRT_DEFAULT_CTX). So the default never passes the trained context
 *  unless the request itself needs more; an explicit n_ctx is taken as
 *  given. */
#define TMRT_DEFAULT_CTX 4096u

/** n_ctx_train of a model whose GGUF has no `qwen35.context_length`. */
#define TMRT_DEFAULT_CTX_TRAIN 4096u

/** Prefill tokens per step when tmrt_session_desc::chunk is 0 (then capped
 *  by the context): the fit calculator's own default (model.h), so a
 *  session and a bare tmem_fit size the same arena. */
#define TMRT_DEFAULT_CHUNK TMEM_FIT_DEFAULT_CHUNK

/** The smallest prefill chunk admission shrinks to: when the request does
 *  not fit at its chunk, the session halves the chunk down to this
 *  (unless TMRT_SESSION_NO_CHUNK_SHRINK) before it refuses. */
#define TMRT_MIN_CHUNK 16u

#endif /* TMEMRT_DEFAULTS_H */
