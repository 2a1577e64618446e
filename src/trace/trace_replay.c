/* Replay a trace in order, keeping in-use bytes per type and role, committed
 * bytes per type, and the set of live allocations. Every exporter and the
 * peak analysis walk a trace through this one routine, so they agree.
 *
 * Live allocations are keyed by (type, offset): heaps report pool offsets, so
 * two live allocations of one type never share an offset. A FREE subtracts
 * what its ALLOC added (the allocation's size and role), which keeps the
 * counters right even when a FREE carries a different role; a FREE whose ALLOC
 * is not in the trace (dropped by the ring, or made before the start)
 * subtracts nothing and is counted in unmatched_frees. */
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

static uint64_t key_of(const tmem_trace_event *ev) {
    return ev->offset ^ ((uint64_t)(uint32_t)(ev->type + 1) << 57);
}

static uint64_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

tmem_status tmem__replay_init(tmem__replay *r, const tmem_trace_data *data) {
    memset(r, 0, sizeof *r);
    r->data = data;
    r->slots = 1024;
    r->keys = calloc(r->slots, sizeof *r->keys);
    r->vals = calloc(r->slots, sizeof *r->vals);
    if (!r->keys || !r->vals) {
        tmem__replay_free(r);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    return TMEM_OK;
}

void tmem__replay_free(tmem__replay *r) {
    free(r->keys);
    free(r->vals);
    r->keys = r->vals = NULL;
}

/* Slot of key k: where it is, or the empty slot where it would go. */
static uint64_t find(const tmem__replay *r, uint64_t k) {
    uint64_t mask = r->slots - 1, i = hash(k) & mask;
    while (r->vals[i] && r->keys[i] != k) i = (i + 1) & mask;
    return i;
}

static bool grow(tmem__replay *r) {
    uint64_t old_slots = r->slots, *ok = r->keys, *ov = r->vals;
    r->slots *= 2;
    r->keys = calloc(r->slots, sizeof *r->keys);
    r->vals = calloc(r->slots, sizeof *r->vals);
    if (!r->keys || !r->vals) {
        free(r->keys);
        free(r->vals);
        r->keys = ok, r->vals = ov, r->slots = old_slots;
        return false;
    }
    for (uint64_t i = 0; i < old_slots; i++)
        if (ov[i]) {
            uint64_t j = find(r, ok[i]);
            r->keys[j] = ok[i];
            r->vals[j] = ov[i];
        }
    free(ok);
    free(ov);
    return true;
}

/* Remove slot i, shifting later members of its probe run back (linear probing
 * deletion without tombstones). */
static void erase(tmem__replay *r, uint64_t i) {
    uint64_t mask = r->slots - 1, j = i;
    r->vals[i] = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!r->vals[j]) break;
        uint64_t home = hash(r->keys[j]) & mask;
        /* Move j into the hole at i when its home is not in (i, j]. */
        bool in_between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_between) {
            r->keys[i] = r->keys[j];
            r->vals[i] = r->vals[j];
            r->vals[j] = 0;
            i = j;
        }
    }
    r->used--;
}

static void sub(uint64_t *v, uint64_t x) { *v = *v > x ? *v - x : 0; }
static void add(uint64_t *v, uint64_t x) { *v = tmem__add_sat(*v, x); }

/* Count an allocation's bytes in (add) or out (sub): its type, its role, the
 * total and, for a device type, the device part of the role and total. */
typedef void (*count_op)(uint64_t *v, uint64_t x);
static void count_alloc(tmem__replay *r, const tmem_trace_event *a, count_op op) {
    uint32_t role = a->role >= 0 ? (uint32_t)a->role : TMEM_ROLE_MAX;
    if (a->type >= 0) op(&r->type_in_use[a->type], a->size);
    op(&r->role_in_use[role], a->size);
    op(&r->in_use, a->size);
    if (tmem__trace_type_is_device(r->data, a->type)) {
        op(&r->role_device_in_use[role], a->size);
        op(&r->device_in_use, a->size);
    }
}

static void drop_alloc(tmem__replay *r, const tmem_trace_event *a) { count_alloc(r, a, sub); }

/* Drop every live allocation of ev's type inside [offset, offset + size):
 * collect their keys first, since erasing shifts entries around. */
static bool reset_range(tmem__replay *r, const tmem_trace_event *ev) {
    const tmem_trace_event *evs = r->data->events;
    uint64_t end = tmem__add_sat(ev->offset, ev->size), n = 0;
    uint64_t *doomed = malloc((r->used ? r->used : 1) * sizeof *doomed);
    if (!doomed) return false;
    for (uint64_t i = 0; i < r->slots; i++) {
        if (!r->vals[i]) continue;
        const tmem_trace_event *a = &evs[r->vals[i] - 1];
        if (a->type == ev->type && a->offset >= ev->offset && a->offset < end) doomed[n++] = r->keys[i];
    }
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = find(r, doomed[k]);
        drop_alloc(r, &evs[r->vals[i] - 1]);
        erase(r, i);
    }
    free(doomed);
    return true;
}

bool tmem__replay_step(tmem__replay *r) {
    const tmem_trace_data *d = r->data;
    if (r->failed || r->next >= d->count) return false;
    const tmem_trace_event *ev = &d->events[r->next];
    switch (ev->kind) {
    case TMEM_TRACE_ALLOC: {
        if ((r->used + 1) * 2 > r->slots && !grow(r)) {
            r->failed = true;
            return false;
        }
        uint64_t k = key_of(ev), i = find(r, k);
        if (r->vals[i]) drop_alloc(r, &d->events[r->vals[i] - 1]); /* its FREE was lost */
        else r->used++;
        r->keys[i] = k;
        r->vals[i] = r->next + 1;
        count_alloc(r, ev, add);
        break;
    }
    case TMEM_TRACE_FREE: {
        uint64_t i = find(r, key_of(ev));
        if (r->vals[i]) {
            drop_alloc(r, &d->events[r->vals[i] - 1]);
            erase(r, i);
        } else {
            r->unmatched_frees++;
        }
        break;
    }
    case TMEM_TRACE_RESET:
        if (!reset_range(r, ev)) {
            r->failed = true;
            return false;
        }
        break;
    case TMEM_TRACE_COMMIT:
        if (ev->type >= 0) add(&r->type_committed[ev->type], ev->size);
        add(&r->committed, ev->size);
        break;
    case TMEM_TRACE_DECOMMIT:
        if (ev->type >= 0) sub(&r->type_committed[ev->type], ev->size);
        sub(&r->committed, ev->size);
        break;
    default:
        break;
    }
    r->next++;
    return true;
}

void tmem__replay_live(const tmem__replay *r, void (*fn)(const tmem_trace_event *ev, void *user), void *user) {
    for (uint64_t i = 0; i < r->slots; i++)
        if (r->vals[i]) fn(&r->data->events[r->vals[i] - 1], user);
}
