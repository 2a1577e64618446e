/* The binary trace file format, version 1 (docs/trace.md has the table).
 *
 *   header  : "TMEMTRC\x1a" | u32 version | u32 flags (0)
 *   records : u8 tag | u8 payload length | payload, little-endian
 *     EVENT 1: u64 time_ns | u64 size | u64 offset | u16 thread | u8 kind |
 *              i8 type | i8 role | name bytes (rest, no NUL)
 *     TYPE  2: u8 index | u64 budget | name
 *     ROLE  3: u8 role | name
 *     END   4: u64 budget | u64 dropped | u64 events   (last record)
 *     PLACE 5: u8 index | u8 placement   (device types only, so a trace
 *              without device types reads the same as before)
 *
 * Records are self-delimiting so a streamed file cut by a crash still reads up
 * to its last whole record; END tells a complete file from a cut one. */
#include <string.h>
#include "trace/trace_internal.h"

static uint8_t *put8(uint8_t *p, uint8_t v) { *p = v; return p + 1; }
static uint8_t *put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); return p + 2; }
static uint8_t *put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}
static uint8_t *put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}
static uint8_t *putname(uint8_t *p, const char *name) {
    size_t n = name ? strnlen(name, TMEM_TRACE_NAME_MAX - 1) : 0;
    memcpy(p, name, n);
    return p + n;
}
/* Fill in the record header once the payload is written. */
static size_t finish(uint8_t *buf, uint8_t tag, const uint8_t *end) {
    buf[0] = tag;
    buf[1] = (uint8_t)(end - buf - 2);
    return (size_t)(end - buf);
}

size_t tmem__trace_encode_header(uint8_t *buf) {
    memcpy(buf, TMEM__TRACE_MAGIC, 8);
    uint8_t *p = put32(buf + 8, TMEM_TRACE_FILE_VERSION);
    p = put32(p, 0);
    return (size_t)(p - buf);
}

size_t tmem__trace_encode_event(uint8_t *buf, const tmem_trace_event *ev) {
    uint8_t *p = buf + 2;
    p = put64(p, ev->time_ns);
    p = put64(p, ev->size);
    p = put64(p, ev->offset);
    p = put16(p, (uint16_t)ev->thread);
    p = put8(p, (uint8_t)ev->kind);
    p = put8(p, (uint8_t)(int8_t)ev->type);
    p = put8(p, (uint8_t)(int8_t)ev->role);
    p = putname(p, ev->name);
    return finish(buf, TMEM__REC_EVENT, p);
}

size_t tmem__trace_encode_type(uint8_t *buf, uint32_t index, uint64_t budget, const char *name) {
    uint8_t *p = put8(buf + 2, (uint8_t)index);
    p = put64(p, budget);
    p = putname(p, name);
    return finish(buf, TMEM__REC_TYPE, p);
}

size_t tmem__trace_encode_role(uint8_t *buf, uint32_t role, const char *name) {
    uint8_t *p = put8(buf + 2, (uint8_t)role);
    p = putname(p, name);
    return finish(buf, TMEM__REC_ROLE, p);
}

size_t tmem__trace_encode_placement(uint8_t *buf, uint32_t index, uint32_t placement) {
    uint8_t *p = put8(buf + 2, (uint8_t)index);
    p = put8(p, (uint8_t)placement);
    return finish(buf, TMEM__REC_PLACEMENT, p);
}

size_t tmem__trace_encode_end(uint8_t *buf, uint64_t budget, uint64_t dropped, uint64_t events) {
    uint8_t *p = put64(buf + 2, budget);
    p = put64(p, dropped);
    p = put64(p, events);
    return finish(buf, TMEM__REC_END, p);
}

bool tmem__trace_event_valid(const tmem_trace_event *ev) {
    if (ev->kind >= TMEM_TRACE_KIND_COUNT) return false;
    if (ev->type < -1 || ev->type >= TMEM_TRACE_TYPE_MAX) return false;
    if (ev->role < -1 || ev->role >= TMEM_ROLE_MAX) return false;
    if (ev->thread > 255) return false;
    size_t n = strnlen(ev->name, TMEM_TRACE_NAME_MAX);
    if (n == TMEM_TRACE_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ev->name[i] < 0x20 || ev->name[i] == 0x7f) return false;
    return true;
}

static void put(tmem__text *sb, const uint8_t *buf, size_t n) { tmem__text_putn(sb, (const char *)buf, n); }

void tmem__trace_write_all(const tmem_trace_data *d, tmem__text *sb) {
    uint8_t buf[TMEM__REC_MAX + 4];
    put(sb, buf, tmem__trace_encode_header(buf));
    for (uint32_t i = 0; i < TMEM_TRACE_TYPE_MAX; i++)
        if (d->type_names[i]) put(sb, buf, tmem__trace_encode_type(buf, i, d->type_budgets[i], d->type_names[i]));
    for (uint32_t i = 0; i < TMEM_TRACE_TYPE_MAX; i++)
        if (tmem__trace_type_is_device(d, (int32_t)i))
            put(sb, buf, tmem__trace_encode_placement(buf, i, d->type_placements[i]));
    for (uint32_t i = 0; i < TMEM_ROLE_MAX; i++)
        if (d->role_names[i]) put(sb, buf, tmem__trace_encode_role(buf, i, d->role_names[i]));
    for (uint64_t i = 0; !sb->failed && i < d->count; i++) put(sb, buf, tmem__trace_encode_event(buf, &d->events[i]));
    put(sb, buf, tmem__trace_encode_end(buf, d->budget, d->dropped, d->count));
}

tmem_status tmem__trace_file_finish(tmem__os_afile *af, tmem_status st) {
    if (st != TMEM_OK) {
        tmem__os_afile_abort(af); /* the temporary goes; the path is as it was */
        return st;
    }
    return tmem__os_afile_commit(af) != TMEM_OK ? tmem__err(TMEM_E_IO) : TMEM_OK;
}

tmem_status tmem_trace_data_save(const tmem_trace_data *d, const char *path) {
    if (!d || !path) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__os_afile af;
    tmem_status cst = tmem__os_afile_create(path, &af, NULL);
    if (cst != TMEM_OK) return tmem__err(cst == TMEM_E_INVALID_ARG ? cst : TMEM_E_IO);
    tmem__text sb;
    tmem__trace_text_fd(&sb, af.fd);
    tmem__trace_write_all(d, &sb);
    tmem__text_drain(&sb);
    tmem_status st = sb.failed ? tmem__err(sb.sink_failed ? TMEM_E_IO : TMEM_E_NO_MEMORY) : TMEM_OK;
    tmem__text_free(&sb);
    return tmem__trace_file_finish(&af, st);
}
