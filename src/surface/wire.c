/*
 * The versioned descriptor that travels next to a surface's fds. Pure code:
 * no OS calls, no allocation, never reads past the buffer, so it is what the
 * fuzz target drives (fuzz/surface_desc).
 *
 * Decoding trusts nothing: the layout is recomputed from the few inputs
 * (format, size, channels, alignment, row pitches) with the same
 * size-and-align code the creator used, and every derived field the peer sent
 * must match it. Sizes are then checked against the files themselves by
 * share.c (fstat), so a peer can neither describe planes outside the memory
 * nor memory smaller than the planes.
 */
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

enum {
    OFF_MAGIC = 0, OFF_VERSION = 4, OFF_SIZE = 6, OFF_FLAGS = 8, OFF_FORMAT = 12, OFF_WIDTH = 16, OFF_HEIGHT = 20,
    OFF_CHANNELS = 24, OFF_ROW_ALIGN = 28, OFF_BPR = 32, OFF_ALLOC = 64, OFF_PIXEL_BYTES = 72, OFF_CONTROL_BYTES = 80,
    OFF_UID = 88, OFF_ORIGIN = 96, OFF_PLANES = 104, OFF_RESERVED = 108, OFF_CHECKSUM = 124
};
_Static_assert(OFF_CHECKSUM + 4 == TMEM_SURFACE_DESCRIPTOR_SIZE, "descriptor layout");

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* FNV-1a: catches truncation and accidental corruption, not an attacker
 * (the attacker's values are validated field by field anyway). */
static uint32_t checksum(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

tmem_status tmem__surface_memfd_sizes(const tmem_surface_layout *l, uint64_t *pixel_bytes, uint64_t *control_bytes) {
    uint64_t page = tmem__os_page_size();
    if (!tmem__align_up(l->alloc_size, page, pixel_bytes)) return tmem__err(TMEM_E_OVERFLOW);
    if (!tmem__align_up(sizeof(tmem__surface_ctl), page, control_bytes)) return tmem__err(TMEM_E_OVERFLOW);
    return TMEM_OK;
}

void tmem__wire_encode(const tmem__wire_desc *d, uint8_t out[TMEM_SURFACE_DESCRIPTOR_SIZE]) {
    memset(out, 0, TMEM_SURFACE_DESCRIPTOR_SIZE);
    const tmem_surface_layout *l = &d->layout;
    put32(out + OFF_MAGIC, TMEM__WIRE_MAGIC);
    out[OFF_VERSION] = (uint8_t)TMEM_SURFACE_DESCRIPTOR_VERSION;
    out[OFF_SIZE] = (uint8_t)TMEM_SURFACE_DESCRIPTOR_SIZE;
    put32(out + OFF_FLAGS, d->flags);
    put32(out + OFF_FORMAT, (uint32_t)l->format);
    put32(out + OFF_WIDTH, l->width);
    put32(out + OFF_HEIGHT, l->height);
    /* Only tensor formats take channels as an input. */
    put32(out + OFF_CHANNELS, tmem__surface_format_is_tensor(l->format) ? l->channels : 0);
    put32(out + OFF_ROW_ALIGN, l->row_alignment);
    for (uint32_t p = 0; p < l->plane_count && p < TMEM_SURFACE_MAX_PLANES; p++)
        put64(out + OFF_BPR + 8 * p, l->planes[p].bytes_per_row);
    put64(out + OFF_ALLOC, l->alloc_size);
    put64(out + OFF_PIXEL_BYTES, d->pixel_bytes);
    put64(out + OFF_CONTROL_BYTES, d->control_bytes);
    put64(out + OFF_UID, d->uid);
    put64(out + OFF_ORIGIN, d->origin_id);
    put32(out + OFF_PLANES, l->plane_count);
    put32(out + OFF_CHECKSUM, checksum(out, OFF_CHECKSUM));
}

tmem_status tmem__wire_decode(const uint8_t *buf, size_t len, tmem__wire_desc *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!buf || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (len < OFF_FLAGS || get32(buf + OFF_MAGIC) != TMEM__WIRE_MAGIC) return tmem__err(TMEM_E_PARSE);
    uint32_t version = (uint32_t)buf[OFF_VERSION] | (uint32_t)buf[OFF_VERSION + 1] << 8;
    uint32_t size = (uint32_t)buf[OFF_SIZE] | (uint32_t)buf[OFF_SIZE + 1] << 8;
    if (version != TMEM_SURFACE_DESCRIPTOR_VERSION || size != TMEM_SURFACE_DESCRIPTOR_SIZE ||
        len != TMEM_SURFACE_DESCRIPTOR_SIZE)
        return tmem__err(TMEM_E_PARSE);
    if (get32(buf + OFF_CHECKSUM) != checksum(buf, OFF_CHECKSUM)) return tmem__err(TMEM_E_PARSE);
    for (size_t i = OFF_RESERVED; i < OFF_CHECKSUM; i++)
        if (buf[i]) return tmem__err(TMEM_E_PARSE);
    uint32_t flags = get32(buf + OFF_FLAGS);
    if (flags & ~(uint32_t)TMEM__WIRE_FLAG_READ_ONLY) return tmem__err(TMEM_E_PARSE);

    /* Recompute the layout from its inputs; any failure means the peer
     * described something this library would never have created. */
    tmem_surface_desc sd;
    memset(&sd, 0, sizeof sd);
    uint32_t format = get32(buf + OFF_FORMAT);
    if (format == TMEM_FORMAT_INVALID || format >= TMEM_FORMAT_COUNT) return tmem__err(TMEM_E_CORRUPT);
    sd.format = (tmem_pixel_format)format;
    sd.width = get32(buf + OFF_WIDTH);
    sd.height = get32(buf + OFF_HEIGHT);
    sd.channels = get32(buf + OFF_CHANNELS);
    sd.row_alignment = get32(buf + OFF_ROW_ALIGN);
    if (sd.row_alignment == 0) return tmem__err(TMEM_E_CORRUPT); /* the effective one is always sent */
    for (uint32_t p = 0; p < TMEM_SURFACE_MAX_PLANES; p++) sd.bytes_per_row[p] = get64(buf + OFF_BPR + 8 * p);
    tmem_surface_layout l;
    if (tmem_surface_size_and_align(&sd, &l) != TMEM_OK) return tmem__err(TMEM_E_CORRUPT);
    if (l.row_alignment != sd.row_alignment || l.plane_count != get32(buf + OFF_PLANES) ||
        l.alloc_size != get64(buf + OFF_ALLOC))
        return tmem__err(TMEM_E_CORRUPT);
    uint64_t pixel_bytes = 0, control_bytes = 0;
    if (tmem__surface_memfd_sizes(&l, &pixel_bytes, &control_bytes) != TMEM_OK) return tmem__err(TMEM_E_CORRUPT);
    if (pixel_bytes != get64(buf + OFF_PIXEL_BYTES) || control_bytes != get64(buf + OFF_CONTROL_BYTES))
        return tmem__err(TMEM_E_CORRUPT);
    uint64_t uid = get64(buf + OFF_UID);
    if (!uid) return tmem__err(TMEM_E_CORRUPT);

    out->flags = flags;
    out->layout = l;
    out->pixel_bytes = pixel_bytes;
    out->control_bytes = control_bytes;
    out->uid = uid;
    out->origin_id = get64(buf + OFF_ORIGIN);
    return TMEM_OK;
}
