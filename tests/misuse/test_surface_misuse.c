/* Bad input to every public surface call: NULLs, unknown flags, handles that
 * are not surfaces, unbalanced unlock/use_end, bad shares. Each returns a
 * status and changes nothing; nothing aborts, nothing leaks. */
#include "harness.h"
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

static void test_null_and_flags(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGBA8;
    d.width = d.height = 16;
    tmem_surface *s = (tmem_surface *)(uintptr_t)8;
    CHECK_ST(tmem_surface_create(NULL, &d, &s), TMEM_E_INVALID_ARG);
    CHECK(s == NULL);
    CHECK_ST(tmem_surface_create(ctx, NULL, &s), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_create(ctx, &d, NULL), TMEM_E_INVALID_ARG);
    d.width = 0;
    CHECK_ST(tmem_surface_create(ctx, &d, &s), TMEM_E_INVALID_ARG);
    d.width = 16;
    /* A type of another context, a device-less DEVICE-style misuse: refused. */
    tmem_context *other;
    REQUIRE_OK(tmem_context_create(&cd, &other));
    tmem_type *foreign;
    REQUIRE_OK(tmem_role_get_type(other, TMEM_ROLE_IMAGE, &foreign));
    d.type = foreign;
    CHECK_ST(tmem_surface_create(ctx, &d, &s), TMEM_E_INVALID_ARG);
    tmem_type *weights;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &weights)); /* FILE placement */
    d.type = weights;
    CHECK_ST(tmem_surface_create(ctx, &d, &s), TMEM_E_INVALID_ARG);
    d.type = NULL;
    tmem_context_destroy(other);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);

    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    /* Calls on NULL: no-ops or INVALID_ARG. */
    tmem_surface_release(NULL);
    CHECK(tmem_surface_retain(NULL) == NULL);
    CHECK(tmem_surface_id(NULL) == 0 && tmem_surface_seed(NULL) == 0);
    CHECK(tmem_surface_base(NULL) == NULL && tmem_surface_plane_ptr(NULL, 0) == NULL);
    CHECK(!tmem_surface_in_use(NULL));
    uint32_t u32 = 7;
    CHECK_ST(tmem_surface_lock(NULL, 0, &u32), TMEM_E_INVALID_ARG);
    CHECK(u32 == 0);
    CHECK_ST(tmem_surface_unlock(NULL, 0, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_use_begin(NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_use_end(NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_use_count(NULL, &u32), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_use_count(s, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_get_info(NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_get_info(s, NULL), TMEM_E_INVALID_ARG);
    tmem_surface *f = (tmem_surface *)(uintptr_t)8;
    CHECK_ST(tmem_surface_lookup(NULL, 1, &f), TMEM_E_INVALID_ARG);
    CHECK(f == NULL);
    CHECK_ST(tmem_surface_lookup(ctx, 1, NULL), TMEM_E_INVALID_ARG);
    tmem_tensor_view v;
    CHECK_ST(tmem_surface_plane_view(NULL, 0, NULL, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_plane_view(s, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_tensor_view(NULL, NULL, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_tensor_view_chw(NULL, TMEM_DTYPE_F32, 1, 1, 1, &v), TMEM_E_INVALID_ARG);
    float x;
    CHECK_ST(tmem_tensor_view_chw(&x, TMEM_DTYPE_COUNT, 1, 1, 1, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_tensor_view_chw(&x, TMEM_DTYPE_F32, 0, 1, 1, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_tensor_view_chw(&x, TMEM_DTYPE_F32, 1ull << 40, 1ull << 40, 1, &v), TMEM_E_OVERFLOW);
    CHECK(tmem_dtype_size(TMEM_DTYPE_COUNT) == 0);
    CHECK_ST(tmem_surface_convert(NULL, NULL, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_convert(s, NULL, NULL), TMEM_E_INVALID_ARG);

    /* A pointer that is not a surface (a context) is refused, not trusted. */
    tmem_surface *bogus = (tmem_surface *)(void *)ctx;
    CHECK_ST(tmem_surface_lock(bogus, 0, NULL), TMEM_E_INVALID_ARG);
    tmem_surface_release(bogus);

    /* Flags nobody defined. */
    CHECK_ST(tmem_surface_lock(s, 2, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_unlock(s, 2, NULL), TMEM_E_INVALID_ARG);
    tmem_surface_share sh;
    CHECK_ST(tmem_surface_export(s, 4, &sh), TMEM_E_INVALID_ARG);
    CHECK(sh.fds[0] == -1 && sh.fds[1] == -1);
    CHECK_ST(tmem_surface_export(s, 0, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_send(s, -1, 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_receive(ctx, -1, 0, &f), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_receive(NULL, 0, 0, &f), TMEM_E_INVALID_ARG);

    /* Unbalanced: state unchanged afterwards. */
    CHECK_ST(tmem_surface_unlock(s, 0, NULL), TMEM_E_STATE);
    CHECK_ST(tmem_surface_use_end(s), TMEM_E_STATE);
    CHECK(tmem_surface_seed(s) == 0 && !tmem_surface_in_use(s));

    /* Bad shares. */
    REQUIRE_OK(tmem_surface_export(s, 0, &sh));
    tmem_surface_share bad = sh;
    bad.fds[0] = -1;
    CHECK_ST(tmem_surface_import(ctx, &bad, 0, &f), TMEM_E_INVALID_ARG);
    bad = sh;
    bad.descriptor_size = 500;
    CHECK_ST(tmem_surface_import(ctx, &bad, 0, &f), TMEM_E_INVALID_ARG);
    bad = sh;
    bad.descriptor_size = 100;
    CHECK_ST(tmem_surface_import(ctx, &bad, 0, &f), TMEM_E_PARSE);
    bad = sh;
    bad.fds[1] = 987654; /* not an open fd */
    CHECK_ST(tmem_surface_import(ctx, &bad, 0, &f), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_import(ctx, &sh, 8, &f), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_import(NULL, &sh, 0, &f), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_surface_import(ctx, NULL, 0, &f), TMEM_E_INVALID_ARG);
    bad = sh;
    bad.descriptor[20] ^= 1; /* checksum catches it */
    CHECK_ST(tmem_surface_import(ctx, &bad, 0, &f), TMEM_E_PARSE);
    CHECK(f == NULL);
    tmem_surface_share_close(&sh);
    tmem_surface_share_close(&sh); /* twice: fds already -1 */
    tmem_surface_share_close(NULL);
    tmem_surface_release(s);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_null_and_flags);
    return tmem_test_finish();
}
