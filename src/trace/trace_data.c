/* The immutable trace object (tmem_trace_data): events plus the type and role
 * names they refer to. Built by the file reader, by tmem_trace_snapshot and
 * by tests; read by every exporter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

tmem_status tmem__trace_data_new(tmem_trace_data **out) {
    tmem_trace_data *d = calloc(1, sizeof *d);
    if (!d) return tmem__err(TMEM_E_NO_MEMORY);
    d->complete = true;
    *out = d;
    return TMEM_OK;
}

tmem_status tmem__trace_data_push(tmem_trace_data *d, const tmem_trace_event *ev) {
    if (d->count == d->cap) {
        uint64_t cap = d->cap ? d->cap * 2 : 1024;
        uint64_t bytes;
        if (tmem__mul_overflow(cap, sizeof *ev, &bytes) || bytes > SIZE_MAX) return tmem__err(TMEM_E_NO_MEMORY);
        tmem_trace_event *p = realloc(d->events, (size_t)bytes);
        if (!p) return tmem__err(TMEM_E_NO_MEMORY);
        d->events = p;
        d->cap = cap;
    }
    d->events[d->count++] = *ev;
    if (ev->thread > d->thread_count) d->thread_count = ev->thread;
    return TMEM_OK;
}

static tmem_status set_name(char **slot, const char *name) {
    size_t n = strnlen(name, TMEM_TRACE_NAME_MAX - 1);
    char *copy = malloc(n + 1);
    if (!copy) return tmem__err(TMEM_E_NO_MEMORY);
    memcpy(copy, name, n);
    copy[n] = '\0';
    free(*slot);
    *slot = copy;
    return TMEM_OK;
}

tmem_status tmem__trace_data_set_type(tmem_trace_data *d, uint32_t index, const char *name, uint64_t budget) {
    if (index >= TMEM_TRACE_TYPE_MAX || !name) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = set_name(&d->type_names[index], name);
    if (st == TMEM_OK) d->type_budgets[index] = budget;
    return st;
}

tmem_status tmem__trace_data_set_role(tmem_trace_data *d, uint32_t role, const char *name) {
    if (role >= TMEM_ROLE_MAX || !name) return tmem__err(TMEM_E_INVALID_ARG);
    return set_name(&d->role_names[role], name);
}

tmem_status tmem__trace_data_set_placement(tmem_trace_data *d, uint32_t index, uint32_t placement) {
    if (index >= TMEM_TRACE_TYPE_MAX || placement >= TMEM_PLACEMENT_COUNT)
        return tmem__err(TMEM_E_INVALID_ARG);
    d->type_placements[index] = (uint8_t)placement;
    return TMEM_OK;
}

bool tmem__trace_type_is_device(const tmem_trace_data *d, int32_t index) {
    return tmem__placement_is_device(tmem_trace_data_type_placement(d, index));
}

const char *tmem__trace_type_label(const tmem_trace_data *d, int32_t index, char *buf, size_t cap) {
    if (index < 0 || index >= TMEM_TRACE_TYPE_MAX) return "none";
    if (d->type_names[index]) return d->type_names[index];
    snprintf(buf, cap, "type#%d", (int)index);
    return buf;
}

const char *tmem__trace_role_label(const tmem_trace_data *d, int32_t role, char *buf, size_t cap) {
    if (role < 0 || role >= TMEM_ROLE_MAX) return "none";
    if (d->role_names[role]) return d->role_names[role];
    snprintf(buf, cap, "role#%d", (int)role);
    return buf;
}

uint32_t tmem__trace_type_span(const tmem_trace_data *d) {
    uint32_t span = 0;
    for (uint32_t i = 0; i < TMEM_TRACE_TYPE_MAX; i++)
        if (d->type_names[i]) span = i + 1;
    for (uint64_t i = 0; i < d->count; i++)
        if (d->events[i].type >= 0 && (uint32_t)d->events[i].type + 1 > span) span = (uint32_t)d->events[i].type + 1;
    return span;
}

void tmem_trace_data_destroy(tmem_trace_data *d) {
    if (!d) return;
    for (uint32_t i = 0; i < TMEM_TRACE_TYPE_MAX; i++) free(d->type_names[i]);
    for (uint32_t i = 0; i < TMEM_ROLE_MAX; i++) free(d->role_names[i]);
    free(d->events);
    free(d);
}

tmem_status tmem_trace_data_get_info(const tmem_trace_data *d, tmem_trace_data_info *out) {
    if (!d || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    out->events = d->count;
    out->dropped = d->dropped;
    out->duration_ns = d->count ? d->events[d->count - 1].time_ns : 0;
    out->budget = d->budget;
    out->type_count = tmem__trace_type_span(d);
    out->thread_count = d->thread_count;
    out->complete = d->complete;
    return TMEM_OK;
}

tmem_status tmem_trace_data_event(const tmem_trace_data *d, uint64_t index, tmem_trace_event *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!d || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (index >= d->count) return tmem__err(TMEM_E_NOT_FOUND);
    *out = d->events[index];
    return TMEM_OK;
}

const char *tmem_trace_data_type_name(const tmem_trace_data *d, int32_t index) {
    if (!d || index < 0 || index >= TMEM_TRACE_TYPE_MAX) return NULL;
    return d->type_names[index];
}

tmem_placement tmem_trace_data_type_placement(const tmem_trace_data *d, int32_t index) {
    if (!d || index < 0 || index >= TMEM_TRACE_TYPE_MAX) return TMEM_PLACEMENT_HOST;
    return (tmem_placement)d->type_placements[index];
}

const char *tmem_trace_data_role_name(const tmem_trace_data *d, int32_t role) {
    if (!d || role < 0 || role >= TMEM_ROLE_MAX) return NULL;
    return d->role_names[role];
}

const char *tmem_trace_kind_name(uint32_t kind) {
    static const char *const names[TMEM_TRACE_KIND_COUNT] = {
        "alloc", "free", "alias", "purge", "commit", "decommit", "lock",
        "unlock", "evict", "budget_denied", "pressure", "mark", "reset"};
    return kind < TMEM_TRACE_KIND_COUNT ? names[kind] : "?";
}
