/*
 * Fuzz target: the surface descriptor a peer sends (tmem__wire_decode) and,
 * when it decodes, what an importer does with the layout it describes.
 *
 * Input: bytes 0..127 are the descriptor. When the input is longer, byte 128
 * holds options: bit 0 recomputes the checksum first (so mutations reach the
 * layout checks instead of dying on the checksum), bit 1 imports the
 * descriptor against the fds of a real surface of this process (fstat, seals,
 * control page identity), bit 2 runs views and a small fused conversion over
 * a buffer of the decoded layout when it is small, bit 3 (with bit 1) writes
 * the real surface's identity into the descriptor before the checksum, so
 * imports can get all the way through.
 *
 * Invariants checked (abort on violation, so libFuzzer reports them):
 * a decoded layout recomputes to itself; its planes lie inside alloc_size and
 * inside the memfd size it claims; an import that succeeds describes memory
 * inside the file it maps (a different but consistent layout of the same
 * bytes, e.g. a narrower width with the same pitch, is legitimate: it is a
 * view, found by this fuzzer and kept in the corpus as a regression).
 */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "surface/surface_internal.h"
#include "os/os.h"

static uint32_t fnv(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* One real surface per process, created on first use (never freed: reachable). */
static tmem_context *g_ctx;
static tmem_surface *g_surface;
static tmem_surface_share g_share;

static bool ensure_surface(void) {
    if (g_surface) return true;
    tmem_context_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.budget = 1ull << 30;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return false;
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_NV12;
    d.width = 64;
    d.height = 48;
    if (tmem_surface_create(g_ctx, &d, &g_surface) != TMEM_OK) return false;
    return tmem_surface_export(g_surface, 0, &g_share) == TMEM_OK;
}

static void check_layout(const tmem__wire_desc *w) {
    const tmem_surface_layout *l = &w->layout;
    if (l->plane_count == 0 || l->plane_count > TMEM_SURFACE_MAX_PLANES) abort();
    for (uint32_t p = 0; p < l->plane_count; p++) {
        const tmem_surface_plane *pl = &l->planes[p];
        if (pl->offset > l->alloc_size || pl->size > l->alloc_size - pl->offset) abort();
        if (pl->bytes_per_row < (uint64_t)pl->width * pl->bytes_per_element) abort();
    }
    if (l->alloc_size > w->pixel_bytes) abort();
    /* Re-encoding gives a descriptor that decodes to the same layout. */
    uint8_t again[TMEM_SURFACE_DESCRIPTOR_SIZE];
    tmem__wire_encode(w, again);
    tmem__wire_desc w2;
    if (tmem__wire_decode(again, sizeof again, &w2) != TMEM_OK || !tmem__surface_layout_equal(l, &w2.layout)) abort();
}

static void small_convert(const tmem_surface_layout *l) {
    if (l->alloc_size > (1u << 20)) return;
    uint8_t *base = calloc(1, l->alloc_size ? l->alloc_size : 1);
    float out[3 * 8 * 8];
    tmem_tensor_view v;
    if (base && tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 3, 8, 8, &v) == TMEM_OK) {
        tmem_convert_desc cd;
        memset(&cd, 0, sizeof cd);
        (void)tmem__surface_convert_raw(l, base, &cd, &v, NULL);
        cd.filter = TMEM_RESIZE_NEAREST;
        cd.src_rect = (tmem_rect){l->width / 2, l->height / 2, l->width - l->width / 2, l->height - l->height / 2};
        (void)tmem__surface_convert_raw(l, base, &cd, &v, NULL);
    }
    free(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t desc[TMEM_SURFACE_DESCRIPTOR_SIZE];
    size_t len = size < sizeof desc ? size : sizeof desc;
    memcpy(desc, data, len);
    uint8_t opts = size > sizeof desc ? data[sizeof desc] : 0;
    if ((opts & 10) == 10 && len == sizeof desc && ensure_surface()) {
        uint64_t uid = g_surface->uid;
        for (int i = 0; i < 8; i++) desc[88 + i] = (uint8_t)(uid >> (8 * i));
    }
    if ((opts & 1) && len == sizeof desc) {
        uint32_t c = fnv(desc, 124);
        for (int i = 0; i < 4; i++) desc[124 + i] = (uint8_t)(c >> (8 * i));
    }
    tmem__wire_desc w;
    tmem_status st = tmem__wire_decode(desc, len, &w);
    if (st == TMEM_OK) {
        check_layout(&w);
        if (opts & 4) small_convert(&w.layout);
    } else if (st != TMEM_E_PARSE && st != TMEM_E_CORRUPT) {
        abort();
    }
    if ((opts & 2) && ensure_surface()) {
        int64_t fds = tmem__os_live_fds(), maps = tmem__os_live_mappings();
        tmem_surface_share sh = g_share;
        memcpy(sh.descriptor, desc, len);
        sh.descriptor_size = (uint32_t)len;
        tmem_surface *s = NULL;
        st = tmem_surface_import(g_ctx, &sh, 0, &s);
        if (st == TMEM_OK) {
            tmem_surface_info a, b;
            if (tmem_surface_get_info(s, &a) != TMEM_OK || tmem_surface_get_info(g_surface, &b) != TMEM_OK ||
                a.layout.alloc_size > s->pix_map_size || a.mapped_bytes != b.mapped_bytes)
                abort();
            /* Touch the last byte of every plane: must be mapped. */
            volatile const uint8_t *base = tmem_surface_base(s);
            for (uint32_t p = 0; p < a.layout.plane_count; p++) {
                const tmem_surface_plane *pl = &a.layout.planes[p];
                (void)base[pl->offset + pl->size - 1];
            }
            tmem_surface_release(s);
        }
        if (tmem__os_live_fds() != fds || tmem__os_live_mappings() != maps) abort();
    }
    return 0;
}
