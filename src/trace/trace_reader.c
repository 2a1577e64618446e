/* The trace file reader. A parser of untrusted bytes (fuzzed by
 * fuzz/trace_file): every length, enum and name is checked before use, and a
 * bad file is refused with a status, never with a crash or a partial object. */
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

/* Copy a name field of n bytes: printable bytes only, bounded. */
static bool get_name(const uint8_t *p, size_t n, char *out) {
    if (n > TMEM_TRACE_NAME_MAX - 1) return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] == 0x7f) return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

enum { EVENT_FIXED = 29, TYPE_FIXED = 9, ROLE_FIXED = 1, END_FIXED = 24, PLACEMENT_FIXED = 2 };

static tmem_status parse(tmem_trace_data *d, const uint8_t *b, size_t len) {
    if (len < TMEM__TRACE_HEADER_SIZE || memcmp(b, TMEM__TRACE_MAGIC, 8) != 0) return tmem__err(TMEM_E_PARSE);
    if (get32(b + 8) != TMEM_TRACE_FILE_VERSION) return tmem__err(TMEM_E_PARSE);
    if (get32(b + 12) != 0) return tmem__err(TMEM_E_CORRUPT);
    size_t pos = TMEM__TRACE_HEADER_SIZE;
    uint64_t last_time = 0;
    bool seen_end = false;
    d->complete = false;
    while (pos < len) {
        if (seen_end) return tmem__err(TMEM_E_CORRUPT); /* bytes after the trailer */
        if (len - pos < 2) break;                        /* cut inside a record header */
        uint8_t tag = b[pos], n = b[pos + 1];
        if (len - pos - 2 < n) break;                    /* cut inside a payload */
        const uint8_t *p = b + pos + 2;
        char name[TMEM_TRACE_NAME_MAX];
        switch (tag) {
        case TMEM__REC_EVENT: {
            if (n < EVENT_FIXED || !get_name(p + EVENT_FIXED, n - EVENT_FIXED, name)) return tmem__err(TMEM_E_CORRUPT);
            tmem_trace_event ev;
            memset(&ev, 0, sizeof ev);
            ev.time_ns = get64(p);
            ev.size = get64(p + 8);
            ev.offset = get64(p + 16);
            ev.thread = get16(p + 24);
            ev.kind = p[26];
            ev.type = (int8_t)p[27];
            ev.role = (int8_t)p[28];
            memcpy(ev.name, name, sizeof name);
            if (!tmem__trace_event_valid(&ev) || ev.time_ns < last_time) return tmem__err(TMEM_E_CORRUPT);
            last_time = ev.time_ns;
            tmem_status st = tmem__trace_data_push(d, &ev);
            if (st != TMEM_OK) return st;
            break;
        }
        case TMEM__REC_TYPE:
            if (n < TYPE_FIXED || p[0] >= TMEM_TRACE_TYPE_MAX || d->type_names[p[0]] ||
                !get_name(p + TYPE_FIXED, n - TYPE_FIXED, name))
                return tmem__err(TMEM_E_CORRUPT);
            if (tmem__trace_data_set_type(d, p[0], name, get64(p + 1)) != TMEM_OK) return tmem__err(TMEM_E_NO_MEMORY);
            break;
        case TMEM__REC_ROLE:
            if (n < ROLE_FIXED || p[0] >= TMEM_ROLE_MAX || d->role_names[p[0]] ||
                !get_name(p + ROLE_FIXED, n - ROLE_FIXED, name))
                return tmem__err(TMEM_E_CORRUPT);
            if (tmem__trace_data_set_role(d, p[0], name) != TMEM_OK) return tmem__err(TMEM_E_NO_MEMORY);
            break;
        case TMEM__REC_PLACEMENT: /* only device placements are written */
            if (n != PLACEMENT_FIXED || p[0] >= TMEM_TRACE_TYPE_MAX || d->type_placements[p[0]] ||
                p[1] >= TMEM_PLACEMENT_COUNT || !tmem__placement_is_device((tmem_placement)p[1]))
                return tmem__err(TMEM_E_CORRUPT);
            d->type_placements[p[0]] = p[1];
            break;
        case TMEM__REC_END:
            if (n != END_FIXED || get64(p + 16) != d->count) return tmem__err(TMEM_E_CORRUPT);
            d->budget = get64(p);
            d->dropped = get64(p + 8);
            seen_end = true;
            break;
        default:
            return tmem__err(TMEM_E_CORRUPT);
        }
        pos += 2u + n;
    }
    d->complete = seen_end;
    return TMEM_OK;
}

tmem_status tmem_trace_load_memory(const void *bytes, size_t len, tmem_trace_data **out) {
    if (out) *out = NULL;
    if (!out || (!bytes && len)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_trace_data *d;
    tmem_status st = tmem__trace_data_new(&d);
    if (st != TMEM_OK) return st;
    st = parse(d, bytes, len);
    if (st != TMEM_OK) {
        tmem_trace_data_destroy(d);
        return st;
    }
    *out = d;
    return TMEM_OK;
}

tmem_status tmem_trace_load(const char *path, tmem_trace_data **out) {
    if (out) *out = NULL;
    if (!path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    int fd;
    uint64_t size;
    if (tmem__os_file_open(path, &fd, &size) != TMEM_OK) return tmem__err(TMEM_E_IO);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    tmem_status st = TMEM_OK;
    /* Read to the end, not to the size fstat saw: a trace still being written
     * grows meanwhile (the tail is then an incomplete file, which is fine). */
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : size < SIZE_MAX - 4096 ? (size_t)size + 4096 : SIZE_MAX;
            uint8_t *p = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!p) {
                st = tmem__err(TMEM_E_NO_MEMORY);
                break;
            }
            buf = p;
            cap = ncap;
        }
        size_t got;
        if (tmem__os_read(fd, buf + len, cap - len, &got) != TMEM_OK) {
            st = tmem__err(TMEM_E_IO);
            break;
        }
        if (got == 0) break;
        len += got;
    }
    (void)tmem__os_close(fd); /* read-only: nothing was lost when close fails */
    if (st == TMEM_OK) st = tmem_trace_load_memory(buf, len, out);
    free(buf);
    return st;
}
