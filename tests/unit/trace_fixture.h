/* Synthetic traces for the trace tests: a small inference-like session built
 * straight into a tmem_trace_data (no context needed), plus a brute-force
 * replay to check the library's analysis against. Header-only, included by
 * tests/unit/test_trace_*.c and test_report_html.c. */
#ifndef TMEM_TEST_TRACE_FIXTURE_H
#define TMEM_TEST_TRACE_FIXTURE_H

#include <string.h>
#include "harness.h"
#include "trace/trace_internal.h"

enum { FX_WEIGHTS = 0, FX_KV = 1, FX_ACT = 2, FX_IMAGES = 3 };

typedef struct fx_builder {
    tmem_trace_data *d;
    uint64_t t;
    bool ok;
} fx_builder;

static inline void fx_ev(fx_builder *b, tmem_trace_kind kind, int type, int role, uint64_t size, uint64_t offset, const char *name) {
    tmem_trace_event ev;
    memset(&ev, 0, sizeof ev);
    b->t += 1000 + (offset % 7) * 100; /* 1..1.6 us apart, deterministic */
    ev.time_ns = b->t;
    ev.kind = (uint16_t)kind;
    ev.type = (int16_t)type;
    ev.role = role;
    ev.size = size;
    ev.offset = offset;
    ev.thread = 1 + (uint32_t)(offset % 2);
    snprintf(ev.name, sizeof ev.name, "%s", name ? name : "");
    if (tmem__trace_data_push(b->d, &ev) != TMEM_OK) b->ok = false;
}

/* A session: weights, an image through vision intermediates, prefill, decode
 * with a growing KV cache and per-token activations, one budget denial. */
static inline tmem_trace_data *fx_session(uint32_t tokens) {
    fx_builder b = {NULL, 0, true};
    if (tmem__trace_data_new(&b.d) != TMEM_OK) return NULL;
    tmem__trace_data_set_type(b.d, FX_WEIGHTS, "/memory/weights", 0);
    tmem__trace_data_set_type(b.d, FX_KV, "/memory/kv", 64u << 20);
    tmem__trace_data_set_type(b.d, FX_ACT, "/memory/activations", 0);
    tmem__trace_data_set_type(b.d, FX_IMAGES, "/memory/images", 0);
    static const char *roles[] = {"weights", "kv_cache", "recurrent_state", "activation", "scratch", "image", "vision_intermediate", "output_tokens"};
    for (uint32_t r = 0; r < 8; r++) tmem__trace_data_set_role(b.d, TMEM_ROLE_BUILTIN_FIRST + r, roles[r]);
    b.d->budget = 96u << 20;
    char name[48];
    uint64_t off = 0;
    fx_ev(&b, TMEM_TRACE_COMMIT, FX_WEIGHTS, -1, 24u << 20, 0, NULL);
    for (int i = 0; i < 4; i++, off += 6u << 20) {
        snprintf(name, sizeof name, "blk.%d.weight", i);
        fx_ev(&b, TMEM_TRACE_ALLOC, FX_WEIGHTS, TMEM_ROLE_WEIGHTS, 6u << 20, off, name);
    }
    fx_ev(&b, TMEM_TRACE_MARK, -1, -1, 0, 0, "image in");
    fx_ev(&b, TMEM_TRACE_ALLOC, FX_IMAGES, TMEM_ROLE_IMAGE, 3u << 20, 0, "camera nv12");
    fx_ev(&b, TMEM_TRACE_LOCK, FX_IMAGES, TMEM_ROLE_IMAGE, 3u << 20, 1, "camera nv12");
    fx_ev(&b, TMEM_TRACE_UNLOCK, FX_IMAGES, TMEM_ROLE_IMAGE, 3u << 20, 2, "camera nv12");
    for (int i = 0; i < 6; i++) { /* vision encoder: two live intermediates at a time */
        snprintf(name, sizeof name, "vit.%d.out", i);
        fx_ev(&b, TMEM_TRACE_ALLOC, FX_ACT, TMEM_ROLE_VISION_INTERMEDIATE, 4u << 20, (uint64_t)(i % 2) << 22, name);
        if (i) {
            snprintf(name, sizeof name, "vit.%d.out", i - 1);
            fx_ev(&b, TMEM_TRACE_FREE, FX_ACT, TMEM_ROLE_VISION_INTERMEDIATE, 4u << 20, (uint64_t)((i - 1) % 2) << 22, name);
        }
    }
    fx_ev(&b, TMEM_TRACE_RESET, FX_ACT, TMEM_ROLE_VISION_INTERMEDIATE, 8u << 20, 0, "vision heap"); /* frees vit.5.out */
    fx_ev(&b, TMEM_TRACE_FREE, FX_IMAGES, TMEM_ROLE_IMAGE, 3u << 20, 0, "camera nv12");
    fx_ev(&b, TMEM_TRACE_MARK, -1, -1, 0, 0, "decode");
    for (uint32_t t = 0; t < tokens; t++) {
        snprintf(name, sizeof name, "kv.page.%u", t);
        fx_ev(&b, TMEM_TRACE_COMMIT, FX_KV, -1, 1u << 20, (uint64_t)t << 20, NULL);
        fx_ev(&b, TMEM_TRACE_ALLOC, FX_KV, TMEM_ROLE_KV_CACHE, 1u << 20, (uint64_t)t << 20, name);
        fx_ev(&b, TMEM_TRACE_ALLOC, FX_ACT, TMEM_ROLE_ACTIVATION, 2u << 20, 0, "attn.scores");
        fx_ev(&b, TMEM_TRACE_FREE, FX_ACT, TMEM_ROLE_ACTIVATION, 2u << 20, 0, "attn.scores");
    }
    fx_ev(&b, TMEM_TRACE_BUDGET_DENIED, FX_KV, TMEM_ROLE_KV_CACHE, 128u << 20, 0, "kv.grow");
    fx_ev(&b, TMEM_TRACE_EVICT, FX_KV, TMEM_ROLE_KV_CACHE, 1u << 20, 0, "kv.page.0");
    fx_ev(&b, TMEM_TRACE_FREE, FX_KV, TMEM_ROLE_KV_CACHE, 1u << 20, 0, "kv.page.0");
    fx_ev(&b, TMEM_TRACE_DECOMMIT, FX_KV, -1, 1u << 20, 0, NULL);
    fx_ev(&b, TMEM_TRACE_PRESSURE, -1, -1, 0, 1, NULL);
    fx_ev(&b, TMEM_TRACE_MARK, -1, -1, 0, 0, "done");
    if (!b.ok) {
        tmem_trace_data_destroy(b.d);
        return NULL;
    }
    return b.d;
}

/* Brute force: in-use total after each event, matching frees by (type,
 * offset) with a linear scan. Returns the peak and its first event index;
 * *final gets the in-use total after the last event. */
static inline uint64_t fx_brute_peak_final(const tmem_trace_data *d, uint64_t *peak_event, uint64_t *type_peak_sum, uint64_t *final) {
    typedef struct { int type; uint64_t off, size; int role; } live;
    live *l = calloc(d->count + 1, sizeof *l);
    uint64_t n = 0, cur = 0, best = 0;
    *peak_event = 0;
    for (uint64_t i = 0; i < d->count; i++) {
        const tmem_trace_event *e = &d->events[i];
        if (e->kind == TMEM_TRACE_ALLOC) {
            for (uint64_t j = 0; j < n; j++)
                if (l[j].type == e->type && l[j].off == e->offset) { cur -= l[j].size; l[j] = l[--n]; break; }
            l[n++] = (live){e->type, e->offset, e->size, e->role};
            cur += e->size;
        } else if (e->kind == TMEM_TRACE_FREE) {
            for (uint64_t j = 0; j < n; j++)
                if (l[j].type == e->type && l[j].off == e->offset) { cur -= l[j].size; l[j] = l[--n]; break; }
        } else if (e->kind == TMEM_TRACE_RESET) {
            for (uint64_t j = 0; j < n;)
                if (l[j].type == e->type && l[j].off >= e->offset && l[j].off - e->offset < e->size) { cur -= l[j].size; l[j] = l[--n]; }
                else j++;
        }
        if (cur > best) {
            best = cur;
            *peak_event = i;
            if (type_peak_sum) {
                *type_peak_sum = 0;
                for (uint64_t j = 0; j < n; j++) *type_peak_sum += l[j].size;
            }
        }
    }
    free(l);
    if (final) *final = cur;
    return best;
}

static inline uint64_t fx_brute_peak(const tmem_trace_data *d, uint64_t *peak_event, uint64_t *type_peak_sum) {
    return fx_brute_peak_final(d, peak_event, type_peak_sum, NULL);
}

#endif
