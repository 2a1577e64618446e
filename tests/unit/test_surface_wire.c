/* The wire descriptor: round trip, every single-bit corruption and every
 * truncation rejected, and re-checksummed lies about the layout caught by the
 * recomputation (TMEM_E_CORRUPT). */
#include "harness.h"
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

static uint32_t fnv(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static void reseal(uint8_t *b) {
    uint32_t c = fnv(b, 124);
    for (int i = 0; i < 4; i++) b[124 + i] = (uint8_t)(c >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void make(tmem_pixel_format f, uint32_t w, uint32_t h, uint8_t out[TMEM_SURFACE_DESCRIPTOR_SIZE],
                 tmem__wire_desc *wd) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = f;
    d.width = w;
    d.height = h;
    memset(wd, 0, sizeof *wd);
    if (tmem_surface_size_and_align(&d, &wd->layout) != TMEM_OK) return;
    (void)tmem__surface_memfd_sizes(&wd->layout, &wd->pixel_bytes, &wd->control_bytes);
    wd->uid = 0x1234567890ABCDEFull;
    wd->origin_id = 7;
    wd->flags = TMEM__WIRE_FLAG_READ_ONLY;
    tmem__wire_encode(wd, out);
}

static void test_roundtrip(void) {
    for (int f = 1; f < TMEM_FORMAT_COUNT; f++) {
        uint8_t b[TMEM_SURFACE_DESCRIPTOR_SIZE];
        tmem__wire_desc in, out;
        make((tmem_pixel_format)f, 641, 479, b, &in);
        CHECK_OK(tmem__wire_decode(b, sizeof b, &out));
        CHECK(tmem__surface_layout_equal(&in.layout, &out.layout));
        CHECK(out.uid == in.uid && out.origin_id == 7 && out.flags == TMEM__WIRE_FLAG_READ_ONLY);
        CHECK(out.pixel_bytes == in.pixel_bytes && out.control_bytes == in.control_bytes);
        CHECK(out.pixel_bytes % tmem__os_page_size() == 0 && out.pixel_bytes >= in.layout.alloc_size);
    }
}

static void test_corruption(void) {
    uint8_t good[TMEM_SURFACE_DESCRIPTOR_SIZE], b[TMEM_SURFACE_DESCRIPTOR_SIZE];
    tmem__wire_desc wd, out;
    make(TMEM_FORMAT_NV12, 1920, 1080, good, &wd);
    int accepted = 0;
    for (size_t bit = 0; bit < sizeof good * 8; bit++) {
        memcpy(b, good, sizeof b);
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        tmem_status st = tmem__wire_decode(b, sizeof b, &out);
        if (st == TMEM_OK) accepted++;
        CHECK(st == TMEM_E_PARSE || st == TMEM_E_CORRUPT || st == TMEM_OK);
    }
    CHECK_MSG(accepted == 0, "%d bit flips accepted", accepted);
    for (size_t len = 0; len < sizeof good; len++) CHECK_ST(tmem__wire_decode(good, len, &out), TMEM_E_PARSE);
    uint8_t longer[TMEM_SURFACE_DESCRIPTOR_SIZE + 8] = {0};
    memcpy(longer, good, sizeof good);
    CHECK_ST(tmem__wire_decode(longer, sizeof longer, &out), TMEM_E_PARSE);
    CHECK_ST(tmem__wire_decode(NULL, 128, &out), TMEM_E_INVALID_ARG);
}

/* Lies with a valid checksum: the layout check must catch each. */
static void test_lies(void) {
    uint8_t good[TMEM_SURFACE_DESCRIPTOR_SIZE], b[TMEM_SURFACE_DESCRIPTOR_SIZE];
    tmem__wire_desc wd, out;
    make(TMEM_FORMAT_NV12, 1920, 1080, good, &wd);
    struct {
        size_t off;
        uint64_t value;
        int width; /* bytes */
        tmem_status want;
        const char *what;
    } lies[] = {
        {12, 99, 4, TMEM_E_CORRUPT, "unknown format"},
        {12, TMEM_FORMAT_RGBA8, 4, TMEM_E_CORRUPT, "format changed (sizes no longer match)"},
        {16, 3840, 4, TMEM_E_CORRUPT, "wider than the pitch"},
        {20, 2160, 4, TMEM_E_CORRUPT, "taller: alloc size no longer matches"},
        {16, 0, 4, TMEM_E_CORRUPT, "zero width"},
        {24, 3, 4, TMEM_E_CORRUPT, "channels on NV12"},
        {28, 48, 4, TMEM_E_CORRUPT, "alignment not a power of two"},
        {28, 0, 4, TMEM_E_CORRUPT, "alignment zero"},
        {32, 1024, 8, TMEM_E_CORRUPT, "pitch below the row"},
        {48, 64, 8, TMEM_E_CORRUPT, "pitch for a third plane"},
        {64, 1, 8, TMEM_E_CORRUPT, "alloc size"},
        {72, 1ull << 40, 8, TMEM_E_CORRUPT, "memfd size"},
        {80, 0, 8, TMEM_E_CORRUPT, "control size"},
        {88, 0, 8, TMEM_E_CORRUPT, "uid zero"},
        {104, 3, 4, TMEM_E_CORRUPT, "plane count"},
        {8, 2, 4, TMEM_E_PARSE, "unknown flag"},
        {4, 2, 2, TMEM_E_PARSE, "version 2"},
        {6, 64, 2, TMEM_E_PARSE, "size field"},
        {110, 1, 1, TMEM_E_PARSE, "reserved byte"},
        {0, 0x41414141, 4, TMEM_E_PARSE, "magic"},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        memcpy(b, good, sizeof b);
        for (int k = 0; k < lies[i].width; k++) b[lies[i].off + (size_t)k] = (uint8_t)(lies[i].value >> (8 * k));
        reseal(b);
        tmem_status st = tmem__wire_decode(b, sizeof b, &out);
        CHECK_MSG(st == lies[i].want, "%s: got %s", lies[i].what, tmem_status_name(st));
    }
    /* A consistent lie about pitch is accepted: it is a different, valid
     * layout (the file size check in share.c then decides). */
    memcpy(b, good, sizeof b);
    put64(b + 32, 2048);
    put64(b + 64, 2048ull * 1080 + 1920 * 540);
    put64(b + 72, (2048ull * 1080 + 1920 * 540 + tmem__os_page_size() - 1) / tmem__os_page_size() * tmem__os_page_size());
    reseal(b);
    CHECK_OK(tmem__wire_decode(b, sizeof b, &out));
    CHECK(out.layout.planes[0].bytes_per_row == 2048 && out.layout.planes[1].offset == 2048u * 1080u);
}

int main(void) {
    RUN(test_roundtrip);
    RUN(test_corruption);
    RUN(test_lies);
    return tmem_test_finish();
}
