/* Surface formats and the size-and-align query: exact layouts of every
 * format, defaults, explicit pitches, errors, and seeded random descriptions
 * checked against the layout invariants. */
#include "harness.h"
#include "typedmem/surface.h"
#include <string.h>

static tmem_surface_desc mk(tmem_pixel_format f, uint32_t w, uint32_t h) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = f;
    d.width = w;
    d.height = h;
    return d;
}

static void test_nv12_1080p(void) {
    tmem_surface_desc d = mk(TMEM_FORMAT_NV12, 1920, 1080);
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.plane_count == 2 && l.channels == 3 && l.row_alignment == 64);
    CHECK(l.planes[0].width == 1920 && l.planes[0].height == 1080 && l.planes[0].bytes_per_row == 1920);
    CHECK(l.planes[0].offset == 0 && l.planes[0].size == 1920u * 1080u);
    CHECK(l.planes[1].width == 960 && l.planes[1].height == 540 && l.planes[1].bytes_per_element == 2);
    CHECK(l.planes[1].element_width == 2 && l.planes[1].element_height == 2 && l.planes[1].components == 2);
    CHECK(l.planes[1].bytes_per_row == 1920 && l.planes[1].offset == 1920u * 1080u);
    CHECK(l.alloc_size == 1920u * 1080u * 3 / 2);
}

static void test_odd_sizes_and_alignment(void) {
    tmem_surface_desc d = mk(TMEM_FORMAT_NV12, 1919, 1079);
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.planes[0].bytes_per_row == 1920 && l.planes[0].height == 1079);
    CHECK(l.planes[1].width == 960 && l.planes[1].height == 540);
    CHECK(l.planes[1].offset % 64 == 0 && l.planes[1].offset >= 1920u * 1079u);
    /* I420: three planes, chroma pitch rounded to 64 on its own. */
    d = mk(TMEM_FORMAT_I420, 100, 50);
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.plane_count == 3 && l.planes[0].bytes_per_row == 128 && l.planes[1].bytes_per_row == 64);
    CHECK(l.planes[1].offset == 128 * 50 && l.planes[2].offset == 128 * 50 + 64 * 25);
    CHECK(l.alloc_size == 128 * 50 + 2 * 64 * 25);
    /* RGB8 with alignment 1 is packed. */
    d = mk(TMEM_FORMAT_RGB8, 101, 7);
    d.row_alignment = 1;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.planes[0].bytes_per_row == 303 && l.alloc_size == 303 * 7 && l.alignment == 1);
    /* GPU-style 256-byte rows. */
    d = mk(TMEM_FORMAT_BGRA8, 1000, 3);
    d.row_alignment = 256;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.planes[0].bytes_per_row == 4096 && l.alignment == 256);
    /* F32 rows keep 4-byte alignment even when 1 is asked. */
    d = mk(TMEM_FORMAT_TENSOR_F32_CHW, 5, 2);
    d.row_alignment = 1;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.row_alignment == 4 && l.planes[0].bytes_per_row == 20 && l.plane_count == 3);
    CHECK(l.planes[1].offset == 40 && l.planes[2].offset == 80 && l.alloc_size == 120);
}

static void test_every_format(void) {
    static const struct {
        tmem_pixel_format f;
        uint32_t planes, bpe0, channels;
        const char *name;
    } t[] = {
        {TMEM_FORMAT_RGBA8, 1, 4, 4, "rgba8"},     {TMEM_FORMAT_BGRA8, 1, 4, 4, "bgra8"},
        {TMEM_FORMAT_RGB8, 1, 3, 3, "rgb8"},       {TMEM_FORMAT_GRAY8, 1, 1, 1, "gray8"},
        {TMEM_FORMAT_NV12, 2, 1, 3, "nv12"},       {TMEM_FORMAT_I420, 3, 1, 3, "i420"},
        {TMEM_FORMAT_RGBA16F, 1, 8, 4, "rgba16f"}, {TMEM_FORMAT_TENSOR_F16_CHW, 3, 2, 3, "tensor_f16_chw"},
        {TMEM_FORMAT_TENSOR_F32_CHW, 3, 4, 3, "tensor_f32_chw"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tmem_surface_desc d = mk(t[i].f, 224, 224);
        tmem_surface_layout l;
        CHECK_OK(tmem_surface_size_and_align(&d, &l));
        CHECK_MSG(l.plane_count == t[i].planes && l.planes[0].bytes_per_element == t[i].bpe0 &&
                      l.channels == t[i].channels,
                  "format %s", t[i].name);
        CHECK(strcmp(tmem_pixel_format_name(t[i].f), t[i].name) == 0);
    }
    CHECK(strcmp(tmem_pixel_format_name((tmem_pixel_format)77), "invalid") == 0);
    tmem_surface_desc d = mk(TMEM_FORMAT_TENSOR_F16_CHW, 16, 16);
    d.channels = 1;
    tmem_surface_layout l;
    CHECK_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.plane_count == 1 && l.channels == 1);
    d.channels = 4;
    CHECK_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.plane_count == 4);
}

static void test_explicit_pitch(void) {
    tmem_surface_desc d = mk(TMEM_FORMAT_NV12, 640, 480);
    d.bytes_per_row[0] = 1024;
    d.bytes_per_row[1] = 768;
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.planes[0].bytes_per_row == 1024 && l.planes[1].bytes_per_row == 768);
    CHECK(l.planes[1].offset == 1024 * 480 && l.alloc_size == 1024 * 480 + 768 * 240);
    d.bytes_per_row[1] = 600; /* below 640 bytes of UV */
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    CHECK(l.alloc_size == 0 && l.plane_count == 0); /* zeroed on failure */
    d.bytes_per_row[1] = 650; /* 640 <= 650, but not a multiple of 64 */
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_ALIGNMENT);
    d.bytes_per_row[1] = 0;
    d.bytes_per_row[2] = 64; /* NV12 has no third plane */
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    /* Tensor planes share one pitch. */
    d = mk(TMEM_FORMAT_TENSOR_F32_CHW, 10, 10);
    d.bytes_per_row[0] = 128;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    CHECK(l.planes[2].bytes_per_row == 128 && l.planes[2].offset == 2 * 128 * 10);
    d.bytes_per_row[1] = 192;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
}

static void test_errors(void) {
    tmem_surface_layout l;
    tmem_surface_desc d = mk(TMEM_FORMAT_RGBA8, 16, 16);
    CHECK_ST(tmem_surface_size_and_align(NULL, &l), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_size_and_align(&d, NULL), TMEM_E_INVALID_ARG);
    d.format = TMEM_FORMAT_INVALID;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    d.format = TMEM_FORMAT_COUNT;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    d = mk(TMEM_FORMAT_RGBA8, 0, 16);
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    d = mk(TMEM_FORMAT_RGBA8, 16, TMEM_SURFACE_MAX_DIM + 1);
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    d = mk(TMEM_FORMAT_RGBA8, TMEM_SURFACE_MAX_DIM, TMEM_SURFACE_MAX_DIM);
    CHECK_OK(tmem_surface_size_and_align(&d, &l)); /* 4 GiB: computed, not allocated */
    CHECK(l.alloc_size == 4ull * TMEM_SURFACE_MAX_DIM * TMEM_SURFACE_MAX_DIM);
    d = mk(TMEM_FORMAT_RGBA8, 16, 16);
    d.channels = 3; /* only tensors take channels */
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    d = mk(TMEM_FORMAT_TENSOR_F32_CHW, 16, 16);
    d.channels = 5;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    d = mk(TMEM_FORMAT_RGBA8, 16, 16);
    d.row_alignment = 48;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_ALIGNMENT);
    d.row_alignment = TMEM_SURFACE_MAX_ROW_ALIGN * 2;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_ALIGNMENT);
    d.row_alignment = 0;
    d.flags = 1;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_INVALID_ARG);
    /* A pitch whose product with the height overflows 64 bits. */
    d = mk(TMEM_FORMAT_GRAY8, 16, 16);
    d.bytes_per_row[0] = 1ull << 62;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_OVERFLOW);
    /* Two planes that each fit but whose sum does not. */
    d = mk(TMEM_FORMAT_NV12, 16, 2);
    d.bytes_per_row[0] = 1ull << 62;
    d.bytes_per_row[1] = 1ull << 62;
    CHECK_ST(tmem_surface_size_and_align(&d, &l), TMEM_E_OVERFLOW);
    d = mk(TMEM_FORMAT_GRAY8, 16, 1);
    d.bytes_per_row[0] = UINT64_MAX - 63; /* multiple of 64, align-up of the end overflows */
    CHECK(tmem_surface_size_and_align(&d, &l) != TMEM_OK);
}

/* Random descriptions: either a clean error or a layout whose planes are in
 * bounds, aligned, disjoint and wide enough. */
static void test_random_invariants(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(4242));
    uint64_t ok = 0;
    for (int it = 0; it < 20000; it++) {
        tmem_surface_desc d;
        memset(&d, 0, sizeof d);
        d.format = (tmem_pixel_format)tmem_rng_range(&r, 0, TMEM_FORMAT_COUNT);
        d.width = (uint32_t)tmem_rng_range(&r, 0, 5000);
        d.height = (uint32_t)tmem_rng_range(&r, 0, 5000);
        if (tmem_rng_range(&r, 0, 3) == 0) d.channels = (uint32_t)tmem_rng_range(&r, 0, 5);
        if (tmem_rng_range(&r, 0, 2) == 0) d.row_alignment = 1u << tmem_rng_range(&r, 0, 13);
        for (int p = 0; p < 4; p++)
            if (tmem_rng_range(&r, 0, 4) == 0) d.bytes_per_row[p] = tmem_rng_range(&r, 0, 40000);
        tmem_surface_layout l;
        tmem_status st = tmem_surface_size_and_align(&d, &l);
        if (st != TMEM_OK) {
            CHECK(st == TMEM_E_INVALID_ARG || st == TMEM_E_ALIGNMENT || st == TMEM_E_OVERFLOW);
            continue;
        }
        ok++;
        uint64_t prev_end = 0;
        for (uint32_t p = 0; p < l.plane_count; p++) {
            const tmem_surface_plane *pl = &l.planes[p];
            CHECK(pl->offset >= prev_end && pl->offset % l.row_alignment == 0);
            CHECK(pl->bytes_per_row % l.row_alignment == 0);
            CHECK(pl->bytes_per_row >= (uint64_t)pl->width * pl->bytes_per_element);
            CHECK((uint64_t)pl->width * pl->element_width >= l.width);
            CHECK((uint64_t)(pl->width - 1) * pl->element_width < l.width);
            CHECK(pl->size == pl->bytes_per_row * pl->height);
            prev_end = pl->offset + pl->size;
        }
        CHECK(l.alloc_size >= prev_end && l.alloc_size % l.alignment == 0);
    }
    CHECK(ok > 1000);
}

int main(void) {
    RUN(test_nv12_1080p);
    RUN(test_odd_sizes_and_alignment);
    RUN(test_every_format);
    RUN(test_explicit_pitch);
    RUN(test_errors);
    RUN(test_random_invariants);
    return tmem_test_finish();
}
