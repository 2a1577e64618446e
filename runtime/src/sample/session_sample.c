/* session_sample.c: the sampler on a session's last logits, its candidates
 * in the session's scratch heap; a non-finite logit is refused here (the
 * caller names the position from tmrt_session_get_info). The pure sampler is
 * sampler.c, which a libFuzzer target (fuzz/sample) builds alone. */
#include <math.h>
#include "rt_internal.h"

tmem_status tmrt_session_sample(tmrt_session *s, tmrt_sampler *sp, int32_t *out) {
    if (!s || !sp || !out) return TMEM_E_INVALID_ARG;
    const float *logits = tmrt_session_logits(s);
    if (!logits) return TMEM_E_STATE;
    tmrt_run *r = tmrt__session_run(s);
    const tmrt_model *m = r->model;
    tmrt__scratch_reset(r);
    void *scratch = sp->desc.temperature > 0 ? tmrt__scratch(r, (size_t)m->hp.n_vocab * 2 * sizeof(float)) : NULL;
    if (tmrt_logits_first_nonfinite(logits, m->hp.n_vocab) != m->hp.n_vocab) return TMEM_E_CORRUPT;
    if (isnan(sp->desc.temperature)) return TMEM_E_INVALID_ARG;
    int32_t t = tmrt_sample(logits, m->hp.n_vocab, sp, scratch);
    tmrt__scratch_reset(r);
    if (t < 0) return TMEM_E_CORRUPT;
    *out = t;
    return TMEM_OK;
}
