/*
 * The builtin types, one per inference role, and the role -> type policy.
 *
 * Reclaim priority (lower is given back first under pressure) follows what it
 * costs to lose the memory:
 *   10 scratch, activations  recomputed by the next step anyway
 *   20 vision                 encoder intermediates, recomputable per image
 *   30 images                 input frames: the camera sends another
 *   40 kv                     evicting costs a prefill of the evicted tokens
 *   50 weights                clean file pages: re-read from disk, slow decode
 *   60 state                  recurrent state: losing it costs the whole prefix
 *   70 tokens                 the output ring: tiny, and the user's result
 * Each type's reserve is the context budget (clamped): any one role may
 * legitimately grow to the whole budget, which still caps the sum.
 */
#include "core/core.h"
#include "core/defaults.h"

typedef struct default_type {
    tmem_role role;
    const char *role_name;
    const char *type_name;
    tmem_placement placement;
    tmem_lifetime lifetime;
    int32_t priority;
} default_type;

static const default_type defaults[TMEM_ROLE_BUILTIN_COUNT] = {
    {TMEM_ROLE_WEIGHTS, "weights", "/memory/weights", TMEM_PLACEMENT_FILE, TMEM_LIFETIME_PERSISTENT, 50},
    {TMEM_ROLE_KV_CACHE, "kv_cache", "/memory/kv", TMEM_PLACEMENT_HOST, TMEM_LIFETIME_GROWING, 40},
    {TMEM_ROLE_RECURRENT_STATE, "recurrent_state", "/memory/state", TMEM_PLACEMENT_HOST, TMEM_LIFETIME_GROWING, 60},
    {TMEM_ROLE_ACTIVATION, "activation", "/memory/activations", TMEM_PLACEMENT_HOST, TMEM_LIFETIME_TRANSIENT, 10},
    {TMEM_ROLE_SCRATCH, "scratch", "/memory/scratch", TMEM_PLACEMENT_HOST, TMEM_LIFETIME_TRANSIENT, 10},
    {TMEM_ROLE_IMAGE, "image", "/memory/images", TMEM_PLACEMENT_HOST_SHARED, TMEM_LIFETIME_SHARED, 30},
    {TMEM_ROLE_VISION_INTERMEDIATE, "vision_intermediate", "/memory/vision", TMEM_PLACEMENT_HOST,
     TMEM_LIFETIME_TRANSIENT, 20},
    {TMEM_ROLE_OUTPUT_TOKENS, "output_tokens", "/memory/tokens", TMEM_PLACEMENT_HOST, TMEM_LIFETIME_PERSISTENT, 70},
};

const char *tmem__builtin_role_name(tmem_role role) {
    return role >= TMEM_ROLE_BUILTIN_FIRST && role < TMEM_ROLE_BUILTIN_END
               ? defaults[role - TMEM_ROLE_BUILTIN_FIRST].role_name
               : NULL;
}

tmem_status tmem__defaults_create(tmem_context *ctx) {
    for (unsigned i = 0; i < TMEM_ROLE_BUILTIN_COUNT; i++) {
        const default_type *d = &defaults[i];
        tmem_type_desc td = {0};
        td.name = d->type_name;
        td.placement = d->placement;
        td.lifetime = d->lifetime;
        td.reclaim_priority = d->priority;
        tmem_type *t;
        tmem_status st = tmem_type_create(ctx, &td, &t);
        if (st != TMEM_OK) return st;
        st = tmem_role_set_type(ctx, d->role, t);
        if (st != TMEM_OK) return st;
    }
    return TMEM_OK;
}
