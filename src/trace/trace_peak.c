/* "What was alive at the peak": find the highest in-use total, replay to it,
 * and rank the live allocations by role, by type and by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

typedef struct live_row {
    const char *name;
    uint64_t bytes;
    uint32_t count;
} live_row;

typedef struct collect {
    uint64_t role_bytes[TMEM_ROLE_MAX + 1], type_bytes[TMEM_TRACE_TYPE_MAX + 1];
    uint32_t role_count[TMEM_ROLE_MAX + 1], type_count[TMEM_TRACE_TYPE_MAX + 1];
    /* unnamed allocations are grouped by role: "(unnamed kv_cache)" */
    char unnamed[TMEM_ROLE_MAX + 1][TMEM_TRACE_NAME_MAX + 16];
    live_row *rows;
    uint64_t nrows;
} collect;

static void on_live(const tmem_trace_event *ev, void *user) {
    collect *c = user;
    uint32_t role = ev->role >= 0 ? (uint32_t)ev->role : TMEM_ROLE_MAX;
    uint32_t type = ev->type >= 0 ? (uint32_t)ev->type : TMEM_TRACE_TYPE_MAX;
    c->role_bytes[role] = tmem__add_sat(c->role_bytes[role], ev->size), c->role_count[role]++;
    c->type_bytes[type] = tmem__add_sat(c->type_bytes[type], ev->size), c->type_count[type]++;
    c->rows[c->nrows++] = (live_row){ev->name[0] ? ev->name : c->unnamed[role], ev->size, 1};
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const live_row *)a)->name, ((const live_row *)b)->name);
}
static int by_bytes(const void *a, const void *b) {
    uint64_t x = ((const live_row *)a)->bytes, y = ((const live_row *)b)->bytes;
    if (x != y) return x > y ? -1 : 1;
    return strcmp(((const live_row *)a)->name, ((const live_row *)b)->name);
}
static int contrib_cmp(const void *a, const void *b) {
    const tmem_trace_contributor *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->id - y->id;
}

/* Fill a top table from n (bytes, count) buckets; labels from label_of. */
static uint32_t top_table(tmem_trace_contributor *out, const uint64_t *bytes, const uint32_t *count, uint32_t n,
                          const tmem_trace_data *d, bool roles) {
    tmem_trace_contributor all[TMEM_TRACE_TYPE_MAX + 1];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!count[i]) continue;
        tmem_trace_contributor *c = &all[k++];
        memset(c, 0, sizeof *c);
        int32_t id = i + 1 == n ? -1 : (int32_t)i;
        char tmp[32];
        const char *label = roles ? tmem__trace_role_label(d, id, tmp, sizeof tmp)
                                  : tmem__trace_type_label(d, id, tmp, sizeof tmp);
        snprintf(c->label, sizeof c->label, "%s", label);
        c->id = id, c->bytes = bytes[i], c->count = count[i];
    }
    qsort(all, k, sizeof all[0], contrib_cmp);
    if (k > TMEM_TRACE_TOP_MAX) k = TMEM_TRACE_TOP_MAX;
    memcpy(out, all, k * sizeof all[0]);
    return k;
}

/* Device allocations alive at the device peak, by role. */
typedef struct device_collect {
    const tmem_trace_data *data;
    uint64_t role_bytes[TMEM_ROLE_MAX + 1];
    uint32_t role_count[TMEM_ROLE_MAX + 1];
    uint64_t live;
} device_collect;

static void on_live_device(const tmem_trace_event *ev, void *user) {
    device_collect *c = user;
    if (!tmem__trace_type_is_device(c->data, ev->type)) return;
    uint32_t role = ev->role >= 0 ? (uint32_t)ev->role : TMEM_ROLE_MAX;
    c->role_bytes[role] = tmem__add_sat(c->role_bytes[role], ev->size), c->role_count[role]++;
    c->live++;
}

static tmem_status device_peak_roles(const tmem_trace_data *d, tmem_trace_peak_info *out) {
    tmem__replay r;
    tmem_status st = tmem__replay_init(&r, d);
    if (st != TMEM_OK) return st;
    while (r.next <= out->device_peak_event && tmem__replay_step(&r)) {}
    device_collect c;
    memset(&c, 0, sizeof c);
    c.data = d;
    if (!r.failed) tmem__replay_live(&r, on_live_device, &c);
    bool failed = r.failed;
    tmem__replay_free(&r);
    if (failed) return tmem__err(TMEM_E_NO_MEMORY);
    out->device_live_count = c.live;
    out->device_by_role_count =
        top_table(out->device_by_role, c.role_bytes, c.role_count, TMEM_ROLE_MAX + 1, d, true);
    return TMEM_OK;
}

tmem_status tmem_trace_peak(const tmem_trace_data *d, tmem_trace_peak_info *out) {
    if (!d || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    tmem__replay r;
    tmem_status st = tmem__replay_init(&r, d);
    if (st != TMEM_OK) return st;
    /* Pass 1: where is the peak (first time the highest total is reached). */
    while (tmem__replay_step(&r)) {
        const tmem_trace_event *ev = &d->events[r.next - 1];
        if (r.in_use > out->peak_bytes) {
            out->peak_bytes = r.in_use;
            out->peak_time_ns = ev->time_ns;
            out->peak_event = r.next - 1;
        }
        if (r.device_in_use > out->device_peak_bytes) {
            out->device_peak_bytes = r.device_in_use;
            out->device_peak_time_ns = ev->time_ns;
            out->device_peak_event = r.next - 1;
        }
        if (r.committed > out->peak_committed) {
            out->peak_committed = r.committed;
            out->peak_committed_time_ns = ev->time_ns;
        }
        if (ev->kind == TMEM_TRACE_BUDGET_DENIED) out->budget_denials++;
        if (ev->kind == TMEM_TRACE_EVICT) out->evicted_bytes = tmem__add_sat(out->evicted_bytes, ev->size);
    }
    out->unmatched_frees = r.unmatched_frees;
    bool failed = r.failed;
    tmem__replay_free(&r);
    if (failed) {
        memset(out, 0, sizeof *out);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    if (out->peak_bytes == 0) return TMEM_OK;
    if (out->device_peak_bytes && (st = device_peak_roles(d, out)) != TMEM_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }

    /* Pass 2: replay up to the peak event and look at what is live. */
    if ((st = tmem__replay_init(&r, d)) != TMEM_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    while (r.next <= out->peak_event && tmem__replay_step(&r)) {}
    collect *c = calloc(1, sizeof *c);
    if (!r.failed && c) c->rows = malloc((r.used ? r.used : 1) * sizeof *c->rows);
    if (r.failed || !c || !c->rows) {
        if (c) free(c->rows);
        free(c);
        tmem__replay_free(&r);
        memset(out, 0, sizeof *out);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (int32_t role = 0; role <= TMEM_ROLE_MAX; role++) {
        char tmp[32];
        snprintf(c->unnamed[role], sizeof c->unnamed[role], "(unnamed %s)",
                 role == TMEM_ROLE_MAX ? "no role" : tmem__trace_role_label(d, role, tmp, sizeof tmp));
    }
    tmem__replay_live(&r, on_live, c);
    out->live_count = c->nrows;
    tmem__replay_free(&r);

    out->by_role_count = top_table(out->by_role, c->role_bytes, c->role_count, TMEM_ROLE_MAX + 1, d, true);
    out->by_type_count = top_table(out->by_type, c->type_bytes, c->type_count, TMEM_TRACE_TYPE_MAX + 1, d, false);

    /* Names: merge equal names, then rank. */
    qsort(c->rows, c->nrows, sizeof *c->rows, by_name);
    uint64_t m = 0;
    for (uint64_t i = 0; i < c->nrows; i++) {
        if (m && !strcmp(c->rows[m - 1].name, c->rows[i].name)) {
            c->rows[m - 1].bytes = tmem__add_sat(c->rows[m - 1].bytes, c->rows[i].bytes);
            c->rows[m - 1].count++;
        } else {
            c->rows[m++] = c->rows[i];
        }
    }
    qsort(c->rows, m, sizeof *c->rows, by_bytes);
    out->by_name_count = (uint32_t)(m < TMEM_TRACE_TOP_MAX ? m : TMEM_TRACE_TOP_MAX);
    for (uint32_t i = 0; i < out->by_name_count; i++) {
        tmem_trace_contributor *t = &out->by_name[i];
        snprintf(t->label, sizeof t->label, "%s", c->rows[i].name);
        t->id = -1, t->bytes = c->rows[i].bytes, t->count = c->rows[i].count;
    }
    free(c->rows);
    free(c);
    return TMEM_OK;
}
