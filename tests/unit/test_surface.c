/* Surfaces in one process: creation and accounting, lock/unlock and the seed,
 * use counts, the registry, views, export/import and send/receive between two
 * handles, read-only shares enforced by the kernel, budgets, and context
 * destroy freeing what is left. Every case checks fds and mappings return to
 * where they started. */
#include "harness.h"
#include "surface/surface_internal.h"
#include "os/os.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tmem_context *new_ctx(uint64_t budget) {
    tmem_context_desc cd = {0};
    cd.budget = budget ? budget : (1ull << 30);
    tmem_context *ctx = NULL;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    return ctx;
}

static tmem_surface_desc nv12(uint32_t w, uint32_t h) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_NV12;
    d.width = w;
    d.height = h;
    d.name = "test-nv12";
    return d;
}

static uint64_t images_committed(tmem_context *ctx) {
    tmem_type *t;
    tmem_type_stats st;
    if (tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &t) != TMEM_OK || tmem_type_get_stats(t, &st) != TMEM_OK) return ~0ull;
    return st.committed.current;
}

static void test_create_and_account(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_surface_desc d = nv12(1920, 1080);
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    tmem_surface_info info;
    REQUIRE_OK(tmem_surface_get_info(s, &info));
    uint64_t page = tmem__os_page_size();
    uint64_t pixels = (1920u * 1080u * 3 / 2 + page - 1) / page * page;
    CHECK(info.id != 0 && info.backing == TMEM_SURFACE_BACKING_MEMFD && !info.read_only);
    CHECK(info.seed == 0 && info.use_count == 0 && info.ref_count == 1 && info.lock_count == 0);
    CHECK(info.layout.alloc_size == 1920u * 1080u * 3 / 2);
    CHECK(info.mapped_bytes == pixels + page);
    CHECK(images_committed(ctx) == pixels + page);
    tmem_role_stats rs;
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_IMAGE, &rs));
    CHECK(rs.in_use.current == 1920u * 1080u * 3 / 2 && rs.live_count == 1);
    CHECK(tmem__os_live_fds() == fds0 + 2 && tmem__os_live_mappings() == maps0 + 2);
    /* Fresh memfd pixels read as zero; the planes sit where the layout says. */
    const uint8_t *y = tmem_surface_plane_ptr(s, 0), *uv = tmem_surface_plane_ptr(s, 1);
    CHECK(y == tmem_surface_base(s) && uv == y + 1920u * 1080u);
    CHECK(y[0] == 0 && uv[1920 * 540 - 1] == 0);
    CHECK(tmem_surface_plane_ptr(s, 2) == NULL);
    tmem_surface_release(s);
    CHECK(images_committed(ctx) == 0);
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_IMAGE, &rs));
    CHECK(rs.in_use.current == 0 && rs.live_count == 0);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    tmem_context_destroy(ctx);
}

static void test_lock_seed(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d = nv12(64, 64);
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    uint32_t seed = 99;
    CHECK_OK(tmem_surface_lock(s, 0, &seed));
    CHECK(seed == 0);
    memset(tmem_surface_base(s), 7, 64);
    CHECK_OK(tmem_surface_unlock(s, 0, &seed));
    CHECK(seed == 1 && tmem_surface_seed(s) == 1);
    /* Read-only: the seed stays. Nested locks each need their unlock. */
    CHECK_OK(tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, &seed));
    CHECK_OK(tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, NULL));
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(s, &info));
    CHECK(info.lock_count == 2);
    CHECK_OK(tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, &seed));
    CHECK_OK(tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, &seed));
    CHECK(seed == 1);
    CHECK_ST(tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, &seed), TMEM_E_STATE);
    CHECK_ST(tmem_surface_unlock(s, 0, NULL), TMEM_E_STATE);
    /* A read-only lock is not undone by a read-write unlock. */
    CHECK_OK(tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, NULL));
    CHECK_ST(tmem_surface_unlock(s, 0, NULL), TMEM_E_STATE);
    CHECK(tmem_surface_seed(s) == 1);
    CHECK_OK(tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, NULL));
    CHECK_ST(tmem_surface_lock(s, 0x10, &seed), TMEM_E_INVALID_ARG);
    for (int i = 0; i < 10; i++) {
        CHECK_OK(tmem_surface_lock(s, 0, NULL));
        CHECK_OK(tmem_surface_unlock(s, 0, &seed));
    }
    CHECK(seed == 11);
    /* Release with a lock still held: dropped with the handle. */
    CHECK_OK(tmem_surface_lock(s, 0, NULL));
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
}

static void test_use_count(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d = nv12(32, 32);
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    uint32_t n = 5;
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 0 && !tmem_surface_in_use(s));
    CHECK_OK(tmem_surface_use_begin(s));
    CHECK_OK(tmem_surface_use_begin(s));
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 2 && tmem_surface_in_use(s));
    /* Use count is not the reference count. */
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(s, &info));
    CHECK(info.ref_count == 1 && info.use_count == 2);
    CHECK_OK(tmem_surface_use_end(s));
    CHECK_OK(tmem_surface_use_end(s));
    CHECK_ST(tmem_surface_use_end(s), TMEM_E_STATE);
    CHECK(!tmem_surface_in_use(s));
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
}

static void test_registry(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    enum { N = 100 };
    tmem_surface *s[N];
    uint64_t ids[N];
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_GRAY8;
    d.width = d.height = 8;
    for (int i = 0; i < N; i++) {
        REQUIRE_OK(tmem_surface_create(ctx, &d, &s[i]));
        ids[i] = tmem_surface_id(s[i]);
        CHECK(ids[i] != 0 && (i == 0 || ids[i] > ids[i - 1]));
    }
    for (int i = 0; i < N; i++) {
        tmem_surface *f = NULL;
        CHECK_OK(tmem_surface_lookup(ctx, ids[i], &f));
        CHECK(f == s[i]);
        tmem_surface_info info;
        CHECK_OK(tmem_surface_get_info(f, &info));
        CHECK(info.ref_count == 2);
        tmem_surface_release(f);
    }
    /* Retain keeps it alive past the creator's release. */
    CHECK(tmem_surface_retain(s[0]) == s[0]);
    tmem_surface_release(s[0]);
    tmem_surface *f = NULL;
    CHECK_OK(tmem_surface_lookup(ctx, ids[0], &f));
    tmem_surface_release(f);
    tmem_surface_release(s[0]);
    CHECK_ST(tmem_surface_lookup(ctx, ids[0], &f), TMEM_E_NOT_FOUND);
    CHECK(f == NULL);
    CHECK_ST(tmem_surface_lookup(ctx, 0, &f), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_lookup(ctx, ids[N - 1] + 1000, &f), TMEM_E_NOT_FOUND);
    for (int i = 1; i < N; i += 2) tmem_surface_release(s[i]);
    for (int i = 2; i < N; i += 2) {
        CHECK_OK(tmem_surface_lookup(ctx, ids[i], &f));
        tmem_surface_release(f);
    }
    /* The rest are freed by context destroy (leak checkers watch). */
    int64_t fds = tmem__os_live_fds();
    tmem_context_destroy(ctx);
    CHECK(tmem__os_live_fds() == fds - 2 * (N / 2 - 1));
    /* Registries are per context. */
    tmem_context *a = new_ctx(0), *b = new_ctx(0);
    REQUIRE(a && b);
    tmem_surface *sa;
    REQUIRE_OK(tmem_surface_create(a, &d, &sa));
    CHECK_ST(tmem_surface_lookup(b, tmem_surface_id(sa), &f), TMEM_E_NOT_FOUND);
    tmem_context_destroy(b);
    tmem_context_destroy(a);
}

static void test_views(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d = nv12(64, 48);
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    tmem_tensor_view v;
    tmem_rect r = {16, 8, 32, 16};
    REQUIRE_OK(tmem_surface_plane_view(s, 1, &r, &v));
    /* UV plane: the rect in pixels is 16x8 elements of 2 bytes from (8, 4). */
    uint8_t *uv = tmem_surface_plane_ptr(s, 1);
    CHECK(v.rank == 3 && v.dtype == TMEM_DTYPE_U8 && v.shape[0] == 8 && v.shape[1] == 16 && v.shape[2] == 2);
    CHECK(v.strides[0] == 64 && v.strides[1] == 2 && v.strides[2] == 1);
    CHECK((uint8_t *)v.data == uv + 4 * 64 + 8 * 2);
    /* Writing through the view lands in the surface (no copy). */
    ((uint8_t *)v.data)[v.strides[0] * 2 + v.strides[1] * 3 + 1] = 0xAB;
    CHECK(uv[(4 + 2) * 64 + (8 + 3) * 2 + 1] == 0xAB);
    r = (tmem_rect){1, 0, 2, 2}; /* off the 2x2 chroma grid */
    CHECK_ST(tmem_surface_plane_view(s, 1, &r, &v), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_surface_plane_view(s, 0, &r, &v)); /* fine for luma */
    r = (tmem_rect){0, 0, 65, 1};
    CHECK_ST(tmem_surface_plane_view(s, 0, &r, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_plane_view(s, 2, NULL, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_tensor_view(s, NULL, &v), TMEM_E_INVALID_ARG);
    tmem_surface_release(s);

    /* A CHW tensor surface viewed as one (C, H, W) tensor across its planes. */
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_TENSOR_F32_CHW;
    d.width = 10;
    d.height = 4;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    REQUIRE_OK(tmem_surface_tensor_view(s, NULL, &v));
    CHECK(v.shape[0] == 3 && v.shape[1] == 4 && v.shape[2] == 10 && v.dtype == TMEM_DTYPE_F32);
    CHECK(v.strides[2] == 4 && v.strides[1] == 64 && v.strides[0] == 64 * 4);
    float *c2 = tmem_surface_plane_ptr(s, 2);
    *(float *)(void *)((uint8_t *)v.data + 2 * v.strides[0] + 3 * v.strides[1] + 9 * v.strides[2]) = 3.5f;
    CHECK(c2[3 * 16 + 9] == 3.5f);
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
}

/* Two handles on one memory in one process, through export/import. */
static void test_export_import(void) {
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d = nv12(320, 240);
    tmem_surface *a, *b;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &a));
    tmem_surface_share sh;
    REQUIRE_OK(tmem_surface_export(a, 0, &sh));
    CHECK(sh.fds[0] >= 0 && sh.fds[1] >= 0 && sh.descriptor_size == TMEM_SURFACE_DESCRIPTOR_SIZE);
    REQUIRE_OK(tmem_surface_import(ctx, &sh, 0, &b));
    tmem_surface_share_close(&sh);
    CHECK(sh.fds[0] == -1 && sh.fds[1] == -1);
    tmem_surface_info ia, ib;
    CHECK_OK(tmem_surface_get_info(a, &ia));
    CHECK_OK(tmem_surface_get_info(b, &ib));
    CHECK(ib.backing == TMEM_SURFACE_BACKING_IMPORTED && ib.id != ia.id && !ib.read_only);
    CHECK(tmem__surface_layout_equal(&ia.layout, &ib.layout));
    CHECK(tmem_surface_base(a) != tmem_surface_base(b));
    /* Same memory: bytes, seed and use count are shared. */
    uint32_t seed;
    CHECK_OK(tmem_surface_lock(a, 0, NULL));
    memcpy(tmem_surface_plane_ptr(a, 1), "shared", 6);
    CHECK_OK(tmem_surface_unlock(a, 0, &seed));
    CHECK(seed == 1 && tmem_surface_seed(b) == 1);
    CHECK_OK(tmem_surface_lock(b, TMEM_LOCK_READ_ONLY, &seed));
    CHECK(memcmp(tmem_surface_plane_ptr(b, 1), "shared", 6) == 0);
    CHECK_OK(tmem_surface_unlock(b, TMEM_LOCK_READ_ONLY, NULL));
    CHECK_OK(tmem_surface_use_begin(b));
    uint32_t n;
    CHECK_OK(tmem_surface_use_count(a, &n));
    CHECK(n == 1);
    CHECK_OK(tmem_surface_use_begin(a));
    CHECK_OK(tmem_surface_use_count(b, &n));
    CHECK(n == 2);
    /* Releasing the importer drops its uses with its slot. */
    tmem_surface_release(b);
    CHECK_OK(tmem_surface_use_count(a, &n));
    CHECK(n == 1);
    CHECK_OK(tmem_surface_use_end(a));
    /* The first share fixed the mode (read-write): no read-only share now. */
    CHECK_ST(tmem_surface_export(a, TMEM_SHARE_READ_ONLY, &sh), TMEM_E_PERMISSION);
    CHECK(sh.fds[0] == -1 && sh.fds[1] == -1);
    /* The importer keeps the memory alive after the creator is gone. */
    REQUIRE_OK(tmem_surface_export(a, 0, &sh));
    REQUIRE_OK(tmem_surface_import(ctx, &sh, TMEM_SHARE_READ_ONLY, &b));
    tmem_surface_share_close(&sh);
    tmem_surface_release(a);
    CHECK_OK(tmem_surface_get_info(b, &ib));
    CHECK(ib.read_only && !ib.shared_read_only);
    CHECK(memcmp(tmem_surface_plane_ptr(b, 1), "shared", 6) == 0);
    CHECK_ST(tmem_surface_lock(b, 0, NULL), TMEM_E_PERMISSION);
    CHECK_ST(tmem_surface_export(b, 0, &sh), TMEM_E_PERMISSION);
    tmem_surface_release(b);
    CHECK(images_committed(ctx) == 0);
    tmem_context_destroy(ctx);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
}

/* Importing what this context already imported returns the same handle. */
static void test_reimport_same_handle(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d = nv12(64, 32);
    tmem_surface *a, *b1, *b2, *b3, *c;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &a));
    int sv[2];
    REQUIRE_OK(tmem__os_socketpair(sv));
    REQUIRE_OK(tmem_surface_send(a, sv[0], 0));
    REQUIRE_OK(tmem_surface_receive(ctx, sv[1], 0, &b1));
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    uint64_t committed = images_committed(ctx);
    REQUIRE_OK(tmem_surface_send(a, sv[0], 0));
    REQUIRE_OK(tmem_surface_receive(ctx, sv[1], 0, &b2));
    CHECK(b2 == b1 && b1 != a);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0 && images_committed(ctx) == committed);
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(b1, &info));
    CHECK(info.ref_count == 2);
    /* A read-only import of the same memory is another handle. */
    REQUIRE_OK(tmem_surface_send(a, sv[0], 0));
    REQUIRE_OK(tmem_surface_receive(ctx, sv[1], TMEM_SHARE_READ_ONLY, &b3));
    CHECK(b3 != b1);
    CHECK_OK(tmem_surface_get_info(b3, &info));
    CHECK(info.read_only && info.ref_count == 1);
    /* Another context maps its own. */
    tmem_context *other = new_ctx(0);
    REQUIRE(other);
    REQUIRE_OK(tmem_surface_send(a, sv[0], 0));
    REQUIRE_OK(tmem_surface_receive(other, sv[1], 0, &c));
    CHECK(c != b1);
    tmem_context_destroy(other);
    tmem_surface_release(b3);
    tmem_surface_release(b2);
    CHECK(tmem_surface_seed(b1) == 0); /* still alive */
    tmem_surface_release(b1);
    tmem_surface_release(a);
    (void)tmem__os_close(sv[0]);
    (void)tmem__os_close(sv[1]);
    tmem_context_destroy(ctx);
}

/* A read-only share: the kernel refuses every writable mapping of the pixels
 * from then on, and resizing either file. */
static void test_read_only_share(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d = nv12(128, 64);
    tmem_surface *a, *b;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &a));
    tmem_surface_share sh;
    REQUIRE_OK(tmem_surface_export(a, TMEM_SHARE_READ_ONLY, &sh));
    REQUIRE_OK(tmem_surface_import(ctx, &sh, 0, &b)); /* read-write asked, read-only given */
    tmem_surface_info ib;
    CHECK_OK(tmem_surface_get_info(b, &ib));
    CHECK(ib.read_only && ib.shared_read_only);
    void *p = NULL;
    CHECK_ST(tmem__os_map_fd(sh.fds[1], 0, 4096, true, true, &p), TMEM_E_PERMISSION);
    CHECK(p == NULL);
    CHECK(tmem__os_fd_resize(sh.fds[1], 4096) == TMEM_E_PERMISSION);
    CHECK(tmem__os_fd_resize(sh.fds[1], 1 << 24) == TMEM_E_PERMISSION);
    CHECK(tmem__os_fd_resize(sh.fds[0], 0) == TMEM_E_PERMISSION);
    CHECK(tmem__os_memfd_seal(sh.fds[1], TMEM__OS_SEAL_WRITE) == TMEM_E_PERMISSION);
    /* The control page stays writable: a read-only consumer counts its use. */
    CHECK_OK(tmem_surface_use_begin(b));
    CHECK(tmem_surface_in_use(a));
    CHECK_OK(tmem_surface_use_end(b));
    /* The creator's own mapping still writes; the consumer sees it. */
    CHECK_OK(tmem_surface_lock(a, 0, NULL));
    ((uint8_t *)tmem_surface_base(a))[5] = 42;
    CHECK_OK(tmem_surface_unlock(a, 0, NULL));
    CHECK(((uint8_t *)tmem_surface_base(b))[5] == 42 && tmem_surface_seed(b) == 1);
    /* Read-write shares are refused from now on. */
    tmem_surface_share sh2;
    CHECK_ST(tmem_surface_export(a, 0, &sh2), TMEM_E_PERMISSION);
    tmem_surface_share_close(&sh);
    tmem_surface_release(a);
    tmem_surface_release(b);
    tmem_context_destroy(ctx);
}

static void test_send_receive(void) {
    int64_t fds0 = tmem__os_live_fds();
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    int sv[2];
    REQUIRE_OK(tmem__os_socketpair(sv));
    tmem_surface_desc d = nv12(640, 480);
    tmem_surface *a, *b;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &a));
    CHECK_OK(tmem_surface_lock(a, 0, NULL));
    ((uint8_t *)tmem_surface_plane_ptr(a, 0))[1000] = 0x5A;
    CHECK_OK(tmem_surface_unlock(a, 0, NULL));
    for (int i = 0; i < 50; i++) {
        REQUIRE_OK(tmem_surface_send(a, sv[0], TMEM_SHARE_READ_ONLY));
        REQUIRE_OK(tmem_surface_receive(ctx, sv[1], 0, &b));
        CHECK(((uint8_t *)tmem_surface_plane_ptr(b, 0))[1000] == 0x5A && tmem_surface_seed(b) == 1);
        tmem_surface_release(b);
    }
    tmem_surface_release(a);
    /* Peer gone: a clean TMEM_E_IO. */
    (void)tmem__os_close(sv[0]);
    CHECK_ST(tmem_surface_receive(ctx, sv[1], 0, &b), TMEM_E_IO);
    CHECK(b == NULL);
    (void)tmem__os_close(sv[1]);
    tmem_context_destroy(ctx);
    CHECK(tmem__os_live_fds() == fds0);
}

static void test_budget(void) {
    tmem_context *ctx = new_ctx(4u << 20);
    REQUIRE(ctx);
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_surface_desc d = nv12(1920, 1080); /* ~3 MiB */
    tmem_surface *a, *b = NULL;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &a));
    CHECK_ST(tmem_surface_create(ctx, &d, &b), TMEM_E_BUDGET);
    CHECK(b == NULL && tmem__os_live_fds() == fds0 + 2 && tmem__os_live_mappings() == maps0 + 2);
    /* An import is charged too. */
    tmem_surface_share sh;
    REQUIRE_OK(tmem_surface_export(a, 0, &sh));
    CHECK_ST(tmem_surface_import(ctx, &sh, 0, &b), TMEM_E_BUDGET);
    tmem_surface_share_close(&sh);
    tmem_surface_release(a);
    REQUIRE_OK(tmem_surface_create(ctx, &d, &b));
    tmem_surface_release(b);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    tmem_context_destroy(ctx);
}

/* The one conversion, from a surface straight into a destination tensor. */
static void test_convert_from_surface(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_BGRA8;
    d.width = 8;
    d.height = 8;
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    CHECK_OK(tmem_surface_lock(s, 0, NULL));
    uint8_t *p = tmem_surface_base(s);
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(s, &info));
    for (uint32_t y = 0; y < 8; y++)
        for (uint32_t x = 0; x < 8; x++) {
            uint8_t *px = p + y * info.layout.planes[0].bytes_per_row + x * 4;
            px[0] = 10, px[1] = 20, px[2] = 30, px[3] = 255; /* B G R A */
        }
    CHECK_OK(tmem_surface_unlock(s, 0, NULL));
    float out[3 * 4 * 4];
    tmem_tensor_view v;
    REQUIRE_OK(tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 3, 4, 4, &v));
    CHECK_OK(tmem_surface_convert(s, NULL, &v));
    CHECK(fabsf(out[0] - 30.0f / 255.0f) < 1e-6f && fabsf(out[16] - 20.0f / 255.0f) < 1e-6f);
    CHECK(fabsf(out[32 + 15] - 10.0f / 255.0f) < 1e-6f);
    CHECK(tmem_surface_seed(s) == 1); /* a read-only lock inside */
    CHECK_OK(tmem_surface_get_info(s, &info));
    CHECK(info.lock_count == 0);
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
}

/* Heap backing: pixels in a region of any heap (here a transient one),
 * same lock/seed/view/convert behaviour, not shareable. */
static void test_heap_backed(void) {
    tmem_context *ctx = new_ctx(0);
    REQUIRE(ctx);
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_GENERAL;
    hd.type = act;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = 8u << 20;
    tmem_heap *heap;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &heap));
    int64_t fds0 = tmem__os_live_fds();
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGB8;
    d.width = 100;
    d.height = 50;
    d.row_alignment = 256;
    d.heap = heap;
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    CHECK(tmem__os_live_fds() == fds0); /* no memfd */
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(s, &info));
    CHECK(info.backing == TMEM_SURFACE_BACKING_HEAP && info.layout.planes[0].bytes_per_row == 512);
    CHECK((uintptr_t)tmem_surface_base(s) % 256 == 0);
    tmem_heap_info hi;
    CHECK_OK(tmem_heap_get_info(heap, &hi));
    CHECK(hi.used >= 512u * 50u && hi.live_count == 1);
    const uint8_t *p = tmem_surface_base(s);
    CHECK(p[0] == 0 && p[512 * 50 - 1] == 0); /* zeroed */
    uint32_t seed;
    CHECK_OK(tmem_surface_lock(s, 0, NULL));
    memset(tmem_surface_base(s), 200, 512 * 50);
    CHECK_OK(tmem_surface_unlock(s, 0, &seed));
    CHECK(seed == 1);
    CHECK_OK(tmem_surface_use_begin(s));
    CHECK(tmem_surface_in_use(s));
    CHECK_OK(tmem_surface_use_end(s));
    tmem_surface_share sh;
    CHECK_ST(tmem_surface_export(s, 0, &sh), TMEM_E_STATE);
    CHECK_ST(tmem_surface_send(s, 0, 0), TMEM_E_STATE);
    float out[3 * 10 * 10];
    tmem_tensor_view v;
    REQUIRE_OK(tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 3, 10, 10, &v));
    CHECK_OK(tmem_surface_convert(s, NULL, &v));
    CHECK(fabsf(out[0] - 200.0f / 255.0f) < 1e-6f && fabsf(out[299] - 200.0f / 255.0f) < 1e-6f);
    tmem_surface_release(s);
    CHECK_OK(tmem_heap_get_info(heap, &hi));
    CHECK(hi.live_count == 0);
    /* A heap of another context is refused. */
    tmem_context *other = new_ctx(0);
    REQUIRE(other);
    d.heap = heap;
    tmem_surface *o = NULL;
    CHECK_ST(tmem_surface_create(other, &d, &o), TMEM_E_INVALID_ARG);
    tmem_context_destroy(other);
    /* Left alive: context destroy frees the surface before the heap. */
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_create_and_account);
    RUN(test_lock_seed);
    RUN(test_use_count);
    RUN(test_registry);
    RUN(test_views);
    RUN(test_export_import);
    RUN(test_read_only_share);
    RUN(test_reimport_same_handle);
    RUN(test_send_receive);
    RUN(test_budget);
    RUN(test_convert_from_surface);
    RUN(test_heap_backed);
    return tmem_test_finish();
}
