/* The tracer: a context's event recorder. Created by the first
 * tmem_trace_start and owned by the context (tmem__context_add_owned) until
 * tmem_context_destroy, so an emitter that read the pointer just before
 * another thread stopped tracing never touches freed memory. The context's
 * tracer pointer is set only while tracing is on: once stopped, emitting
 * sites are back to the never-started cost (one load, one branch).
 *
 * Emitters take the tracer's own mutex (never the context's: core may emit
 * while holding its lock). The timestamp is read under that mutex, so events
 * land in the ring and the file in time order. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

_Static_assert((int)TMEM__TRACE_MARK == (int)TMEM_TRACE_MARK, "internal and public trace kinds must agree");
_Static_assert((int)TMEM__TRACE_RESET == (int)TMEM_TRACE_RESET, "internal and public trace kinds must agree");
_Static_assert((int)TMEM__TRACE_KIND_COUNT == (int)TMEM_TRACE_KIND_COUNT, "internal and public trace kinds must agree");

#define MAX_CAPACITY (1u << 24)
#define MAX_THREADS 255u

struct tmem__tracer {
    tmem__os_mutex lock;
    tmem_context *ctx;
    atomic_bool on;
    uint32_t flags;
    uint64_t t0, last;
    /* ring: head counts every event since start; slot = head & mask */
    tmem_trace_event *ring;
    uint32_t capacity;
    uint64_t head, dropped;
    /* file stream */
    int fd; /* -1: no file */
    uint8_t *buf;
    uint32_t buf_len, buf_cap;
    uint64_t file_bytes, file_events;
    uint32_t file_errors;
    /* thread keys -> 1-based ids, in order of first appearance */
    uintptr_t threads[MAX_THREADS];
    uint32_t thread_count;
    uint64_t budget;
};

/* The address of a thread-local byte tells threads apart without an OS call
 * and without global state; it is only compared, never dereferenced. */
static _Thread_local char thread_anchor;

static uint64_t now_ns(void) { return tmem__os_now_ns(); }

static uint32_t thread_id(struct tmem__tracer *t) {
    uintptr_t key = (uintptr_t)&thread_anchor;
    for (uint32_t i = 0; i < t->thread_count; i++)
        if (t->threads[i] == key) return i + 1;
    if (t->thread_count == MAX_THREADS) return 0;
    t->threads[t->thread_count++] = key;
    return t->thread_count;
}

/* Write the buffer out; a failed write is counted and the bytes dropped. */
static void flush(struct tmem__tracer *t) {
    if (t->fd < 0 || !t->buf_len) return;
    if (tmem__os_write_all(t->fd, t->buf, t->buf_len) != TMEM_OK) t->file_errors++;
    else t->file_bytes += t->buf_len;
    t->buf_len = 0;
}

static void file_put(struct tmem__tracer *t, const uint8_t *rec, size_t n) {
    if (t->buf_len + n > t->buf_cap) flush(t);
    memcpy(t->buf + t->buf_len, rec, n);
    t->buf_len += (uint32_t)n;
}

/* Record one event; false when tracing is off (or was stopped meanwhile) or
 * the kind is filtered out. */
static bool record(struct tmem__tracer *t, tmem__trace_kind kind, const tmem_type *type, int32_t role, uint64_t size,
                   uint64_t offset, const char *name) {
    if (!atomic_load_explicit(&t->on, memory_order_acquire)) return false;
    tmem_trace_event ev;
    ev.size = size;
    ev.offset = offset;
    ev.kind = (uint16_t)kind;
    uint32_t ti = type ? tmem__type_index(type) : UINT32_MAX;
    ev.type = (int16_t)(ti < TMEM_TRACE_TYPE_MAX ? (int32_t)ti : -1);
    ev.role = role > TMEM_ROLE_DEFAULT && role < TMEM_ROLE_MAX ? role : -1; /* DEFAULT: no role */
    size_t n = name ? strnlen(name, TMEM_TRACE_NAME_MAX - 1) : 0;
    for (size_t i = 0; i < n; i++) /* keep every recorded name valid for the reader */
        ev.name[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    ev.name[n] = '\0';

    tmem__os_mutex_lock(&t->lock);
    bool on = atomic_load_explicit(&t->on, memory_order_relaxed);
    /* flags change at start, under this lock: read them here */
    if (on && (t->flags & TMEM_TRACE_NO_COMMITS) &&
        (kind == TMEM__TRACE_COMMIT || kind == TMEM__TRACE_DECOMMIT))
        on = false;
    if (on) {
        uint64_t now = now_ns() - t->t0;
        ev.time_ns = t->last = now > t->last ? now : t->last;
        ev.thread = thread_id(t);
        if (t->ring) {
            if (t->head >= t->capacity) t->dropped++;
            t->ring[t->head & (t->capacity - 1)] = ev;
        }
        t->head++;
        if (t->fd >= 0) {
            uint8_t rec[TMEM__REC_MAX + 4];
            file_put(t, rec, tmem__trace_encode_event(rec, &ev));
            t->file_events++;
        }
    }
    tmem__os_mutex_unlock(&t->lock);
    return on;
}

/* The context's trace hook (core/internal.h): every layer's events land
 * here through the pointer in the context head. */
static void emit(struct tmem__tracer *t, tmem__trace_kind kind, const tmem_type *type,
                 int32_t role, uint64_t size, uint64_t offset, const char *name) {
    (void)record(t, kind, type, role, size, offset, name);
}

/* Names of the context's types and roles, and its budget (user thread, no
 * tracer lock held: these calls may take the context's lock). */
static tmem_status collect_names(tmem_context *ctx, tmem_trace_data *d) {
    uint32_t n = tmem_type_count(ctx);
    for (uint32_t i = 0; i < n && i < TMEM_TRACE_TYPE_MAX; i++) {
        tmem_type *type;
        tmem_type_info info;
        if (tmem_type_at(ctx, i, &type) != TMEM_OK || tmem_type_get_info(type, &info) != TMEM_OK) continue;
        if (info.index >= TMEM_TRACE_TYPE_MAX) continue;
        tmem_status st = tmem__trace_data_set_type(d, info.index, info.name, info.budget);
        if (st == TMEM_OK)
            st = tmem__trace_data_set_placement(d, info.index, (uint32_t)info.placement);
        if (st != TMEM_OK) return st;
    }
    for (int32_t r = 0; r < TMEM_ROLE_MAX; r++) {
        const char *name = tmem_role_name(ctx, (tmem_role)r);
        if (!name) continue;
        tmem_status st = tmem__trace_data_set_role(d, (uint32_t)r, name);
        if (st != TMEM_OK) return st;
    }
    tmem_budget_info bi;
    if (tmem_context_budget(ctx, &bi) == TMEM_OK) d->budget = bi.budget;
    return TMEM_OK;
}

static void tracer_owned_destroy(void *object);

/* The tracer of ctx (on or stopped), or NULL when tracing never started. */
static struct tmem__tracer *find_tracer(tmem_context *ctx) {
    return tmem__context_find_owned(ctx, tracer_owned_destroy);
}

/* The tracer of ctx, created on first use. The context lock is recursive and
 * held across find + add, so two first starts cannot make two tracers. */
static struct tmem__tracer *get_tracer(tmem_context *ctx) {
    tmem__context_lock(ctx);
    struct tmem__tracer *t = find_tracer(ctx);
    if (!t && (t = tmem__calloc(ctx, 1, sizeof *t)) != NULL) {
        t->ctx = ctx;
        t->fd = -1;
        atomic_init(&t->on, false);
        if (tmem__os_mutex_init(&t->lock, 0) != 0) {
            tmem__free(ctx, t, sizeof *t);
            t = NULL;
        } else if (tmem__context_add_owned(ctx, t, tracer_owned_destroy) != TMEM_OK) {
            tmem__os_mutex_destroy(&t->lock);
            tmem__free(ctx, t, sizeof *t);
            t = NULL;
        }
    }
    tmem__context_unlock(ctx);
    return t;
}

static uint32_t round_pow2(uint32_t x) {
    uint32_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

tmem_status tmem_trace_start(tmem_context *ctx, const tmem_trace_desc *desc) {
    if (!ctx || !desc || (desc->flags & ~(uint32_t)TMEM_TRACE_FLAG_MASK) || desc->capacity > MAX_CAPACITY)
        return tmem__err(TMEM_E_INVALID_ARG);
    uint32_t cap = desc->capacity ? round_pow2(desc->capacity) : desc->path ? 0 : TMEM_TRACE_DEFAULT_CAPACITY;
    uint32_t buf_cap = desc->buffer_size ? desc->buffer_size : 64u << 10;
    if (buf_cap < 4096) buf_cap = 4096;
    if (buf_cap > (16u << 20)) buf_cap = 16u << 20;
    struct tmem__tracer *t = get_tracer(ctx);
    if (!t) return tmem__err(TMEM_E_NO_MEMORY);
    if (atomic_load(&t->on)) return tmem__err(TMEM_E_STATE);

    /* Everything that can fail, before touching the tracer. */
    tmem_trace_event *ring = cap ? tmem__malloc(ctx, (size_t)cap * sizeof *ring) : NULL;
    uint8_t *buf = desc->path ? tmem__malloc(ctx, buf_cap) : NULL;
    int file = -1;
    tmem_status st = TMEM_OK;
    if ((cap && !ring) || (desc->path && !buf)) st = tmem__err(TMEM_E_NO_MEMORY);
    else if (desc->path && tmem__os_afile_check(desc->path, NULL) == TMEM_E_INVALID_ARG)
        st = tmem__err(TMEM_E_INVALID_ARG); /* a directory, device or fifo: refused, nothing touched */
    else if (desc->path && tmem__os_file_create(desc->path, &file) != TMEM_OK) st = tmem__err(TMEM_E_IO);
    tmem_budget_info bi;
    uint64_t budget = tmem_context_budget(ctx, &bi) == TMEM_OK ? bi.budget : 0;

    tmem__os_mutex_lock(&t->lock);
    if (st == TMEM_OK && atomic_load(&t->on)) st = tmem__err(TMEM_E_STATE); /* lost a race with another start */
    if (st == TMEM_OK) {
        /* swap: the old ring / buffer are freed below, outside the lock */
        tmem_trace_event *old_ring = t->ring;
        uint32_t old_cap = t->capacity;
        uint8_t *old_buf = t->buf;
        uint32_t old_buf_cap = t->buf_cap;
        t->ring = ring, t->capacity = cap, t->head = t->dropped = 0;
        t->fd = file, t->buf = buf, t->buf_cap = buf_cap, t->buf_len = 0;
        t->file_bytes = t->file_events = 0, t->file_errors = 0;
        t->thread_count = 0, t->flags = desc->flags, t->budget = budget;
        t->t0 = now_ns(), t->last = 0;
        if (file >= 0) {
            uint8_t hdr[TMEM__TRACE_HEADER_SIZE];
            file_put(t, hdr, tmem__trace_encode_header(hdr));
        }
        ring = old_ring, cap = old_cap, buf = old_buf, buf_cap = old_buf_cap, file = -1;
        atomic_store_explicit(&t->on, true, memory_order_release);
        tmem__context_set_tracer(ctx, t, emit); /* emitting sites start calling in */
    }
    tmem__os_mutex_unlock(&t->lock);
    if (ring) tmem__free(ctx, ring, (size_t)cap * sizeof *ring);
    if (buf) tmem__free(ctx, buf, buf_cap);
    if (file >= 0) { /* start failed: remove the empty file this call created */
        (void)tmem__os_close(file);
        (void)tmem__os_unlink(desc->path);
    }
    return st;
}

/* Flush, write the trailer (names when known) and close; caller holds the lock. */
static tmem_status close_file(tmem_context *ctx, struct tmem__tracer *t, const tmem_trace_data *names) {
    if (t->fd < 0) return TMEM_OK;
    uint8_t rec[TMEM__REC_MAX + 4];
    for (uint32_t i = 0; names && i < TMEM_TRACE_TYPE_MAX; i++)
        if (names->type_names[i])
            file_put(t, rec,
                     tmem__trace_encode_type(rec, i, names->type_budgets[i], names->type_names[i]));
    for (uint32_t i = 0; names && i < TMEM_TRACE_TYPE_MAX; i++)
        if (tmem__trace_type_is_device(names, (int32_t)i))
            file_put(t, rec, tmem__trace_encode_placement(rec, i, names->type_placements[i]));
    for (uint32_t i = 0; names && i < TMEM_ROLE_MAX; i++)
        if (names->role_names[i]) file_put(t, rec, tmem__trace_encode_role(rec, i, names->role_names[i]));
    file_put(t, rec, tmem__trace_encode_end(rec, names ? names->budget : t->budget, 0, t->file_events));
    flush(t);
    /* A trace cut by write errors is kept: the reader loads what is whole and
     * the missing trailer marks it incomplete. */
    if (tmem__os_close(t->fd) != TMEM_OK) t->file_errors++;
    t->fd = -1;
    tmem__free(ctx, t->buf, t->buf_cap);
    t->buf = NULL;
    t->buf_cap = 0;
    return t->file_errors ? tmem__err(TMEM_E_IO) : TMEM_OK;
}

tmem_status tmem_trace_stop(tmem_context *ctx) {
    if (!ctx) return tmem__err(TMEM_E_INVALID_ARG);
    struct tmem__tracer *t = find_tracer(ctx);
    if (!t || !atomic_load(&t->on)) return tmem__err(TMEM_E_STATE);
    tmem_trace_data *names = NULL;
    if (tmem__trace_data_new(&names) == TMEM_OK && collect_names(ctx, names) != TMEM_OK) {
        tmem_trace_data_destroy(names); /* the file then lacks names, nothing worse */
        names = NULL;
    }
    tmem__os_mutex_lock(&t->lock);
    tmem_status st = TMEM_OK;
    if (!atomic_load(&t->on)) st = tmem__err(TMEM_E_STATE);
    else {
        tmem__context_set_tracer(ctx, NULL, NULL); /* back to the never-started path */
        atomic_store_explicit(&t->on, false, memory_order_release);
        st = close_file(ctx, t, names);
    }
    tmem__os_mutex_unlock(&t->lock);
    tmem_trace_data_destroy(names);
    return st;
}

tmem_status tmem_trace_flush(tmem_context *ctx) {
    if (!ctx) return tmem__err(TMEM_E_INVALID_ARG);
    struct tmem__tracer *t = find_tracer(ctx);
    if (!t) return tmem__err(TMEM_E_STATE);
    tmem_status st = TMEM_OK;
    tmem__os_mutex_lock(&t->lock);
    if (!atomic_load(&t->on)) st = tmem__err(TMEM_E_STATE);
    else if (t->fd >= 0) {
        flush(t); /* write(2) is unbuffered: out of the process once this returns */
        if (t->file_errors) st = tmem__err(TMEM_E_IO);
    }
    tmem__os_mutex_unlock(&t->lock);
    return st;
}

tmem_status tmem_trace_mark(tmem_context *ctx, const char *name) {
    if (!ctx || !name) return tmem__err(TMEM_E_INVALID_ARG);
    struct tmem__tracer *t = tmem__context_tracer(ctx);
    if (!t || !atomic_load(&t->on)) return tmem__err(TMEM_E_STATE);
    return record(t, TMEM__TRACE_MARK, NULL, -1, 0, 0, name) ? TMEM_OK : tmem__err(TMEM_E_STATE);
}

tmem_status tmem_trace_get_info(tmem_context *ctx, tmem_trace_info *out) {
    if (!ctx || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    struct tmem__tracer *t = find_tracer(ctx);
    if (!t) return TMEM_OK;
    tmem__os_mutex_lock(&t->lock);
    out->on = atomic_load(&t->on);
    out->capacity = t->capacity;
    out->recorded = t->head;
    out->dropped = t->dropped;
    out->file_bytes = t->file_bytes + t->buf_len;
    out->file_errors = t->file_errors;
    tmem__os_mutex_unlock(&t->lock);
    return TMEM_OK;
}

tmem_status tmem_trace_snapshot(tmem_context *ctx, tmem_trace_data **out) {
    if (out) *out = NULL;
    if (!ctx || !out) return tmem__err(TMEM_E_INVALID_ARG);
    struct tmem__tracer *t = find_tracer(ctx);
    if (!t) return tmem__err(TMEM_E_STATE);
    tmem_trace_data *d;
    tmem_status st = tmem__trace_data_new(&d);
    if (st == TMEM_OK) st = collect_names(ctx, d);
    if (st != TMEM_OK) {
        tmem_trace_data_destroy(d);
        return st;
    }
    tmem__os_mutex_lock(&t->lock);
    if (!t->ring) st = tmem__err(TMEM_E_STATE);
    else {
        uint64_t n = t->head < t->capacity ? t->head : t->capacity;
        d->events = n ? malloc((size_t)n * sizeof *d->events) : NULL;
        if (n && !d->events) st = tmem__err(TMEM_E_NO_MEMORY);
        else {
            uint64_t first = t->head - n;
            for (uint64_t i = 0; i < n; i++) d->events[i] = t->ring[(first + i) & (t->capacity - 1)];
            d->count = d->cap = n;
            d->dropped = t->dropped;
            d->thread_count = t->thread_count;
        }
    }
    tmem__os_mutex_unlock(&t->lock);
    if (st != TMEM_OK) {
        tmem_trace_data_destroy(d);
        return st;
    }
    *out = d;
    return TMEM_OK;
}

/* Stop for good: clear the pointer, close the file with the names (types
 * are still alive: the context destroys them last). Idempotent. */
static void finish(tmem_context *ctx, struct tmem__tracer *t) {
    if (tmem__context_tracer(ctx) == t) tmem__context_set_tracer(ctx, NULL, NULL);
    atomic_store(&t->on, false);
    tmem_trace_data *names = NULL;
    if (t->fd >= 0 && tmem__trace_data_new(&names) == TMEM_OK && collect_names(ctx, names) != TMEM_OK) {
        tmem_trace_data_destroy(names);
        names = NULL;
    }
    tmem__os_mutex_lock(&t->lock);
    (void)close_file(ctx, t, names);
    tmem__os_mutex_unlock(&t->lock);
    tmem_trace_data_destroy(names);
}

/* The context's owned-object hook: runs once at tmem_context_destroy. */
static void tracer_owned_destroy(void *object) {
    struct tmem__tracer *t = object;
    tmem_context *ctx = t->ctx;
    finish(ctx, t);
    if (t->ring) tmem__free(ctx, t->ring, (size_t)t->capacity * sizeof *t->ring);
    tmem__os_mutex_destroy(&t->lock);
    tmem__free(ctx, t, sizeof *t);
}
