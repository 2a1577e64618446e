/* OS fault sweeps over every surface path that talks to the OS: create (two
 * memfds, seals, two mappings), export (seals, dups), import (fstat, seals,
 * mappings), send/receive (sendmsg/recvmsg). Each injected failure must end in
 * a clean error with no fd or mapping left (the sweep checks the live
 * counters), nothing charged to the images type, and success once disarmed. */
#include "harness.h"
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

typedef struct fixture {
    tmem_context *ctx;
    tmem_surface *src;   /* made outside the scenario (import sweeps) */
    tmem_surface *made;  /* what the scenario made */
    tmem_surface_share share;
    int sv[2];
    uint64_t committed0;
} fixture;

static uint64_t images_committed(tmem_context *ctx) {
    tmem_type *t;
    tmem_type_stats st;
    if (tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &t) != TMEM_OK || tmem_type_get_stats(t, &st) != TMEM_OK) return ~0ull;
    return st.committed.current;
}

static tmem_surface_desc nv12(void) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_NV12;
    d.width = 320;
    d.height = 240;
    return d;
}

/* Failed runs leave nothing charged and nothing registered. */
static bool check_clean(void *user, tmem_status st) {
    fixture *f = user;
    if (st == TMEM_OK) return true;
    return f->made == NULL && images_committed(f->ctx) == f->committed0 && tmem_context_check(f->ctx) == TMEM_OK;
}

static void cleanup_made(void *user) {
    fixture *f = user;
    tmem_surface_release(f->made);
    f->made = NULL;
    tmem_surface_share_close(&f->share);
}

static void keep_share_cleanup(void *user) {
    fixture *f = user;
    tmem_surface_release(f->made);
    f->made = NULL;
}

static tmem_status scen_create(void *user) {
    fixture *f = user;
    tmem_surface_desc d = nv12();
    return tmem_surface_create(f->ctx, &d, &f->made);
}

/* A fresh surface each run, so the first export's sealing is swept too. */
static tmem_status scen_export(void *user) {
    fixture *f = user;
    tmem_surface_desc d = nv12();
    tmem_status st = tmem_surface_create(f->ctx, &d, &f->made);
    if (st == TMEM_OK) st = tmem_surface_export(f->made, TMEM_SHARE_READ_ONLY, &f->share);
    if (st != TMEM_OK) {
        /* export failed: the share must be empty */
        if (f->share.fds[0] != -1 || f->share.fds[1] != -1) return TMEM_E_CORRUPT;
        tmem_surface_release(f->made);
        f->made = NULL;
    }
    return st;
}

static tmem_status scen_import(void *user) {
    fixture *f = user;
    return tmem_surface_import(f->ctx, &f->share, 0, &f->made);
}

static tmem_status scen_send_receive(void *user) {
    fixture *f = user;
    tmem_status st = tmem_surface_send(f->src, f->sv[0], TMEM_SHARE_READ_ONLY);
    if (st != TMEM_OK) return st;
    st = tmem_surface_receive(f->ctx, f->sv[1], 0, &f->made);
    return st;
}

static void sweep(const char *label, tmem_status (*scen)(void *), fixture *f) {
    tmem_test_sweep_desc d;
    memset(&d, 0, sizeof d);
    d.label = label;
    d.scenario = scen;
    d.cleanup = cleanup_made;
    d.check = check_clean;
    d.user = f;
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    printf("   %s: %llu OS calls swept\n", label, (unsigned long long)n);
    CHECK(n > 0);
}

static void test_sweeps(void) {
    fixture f;
    memset(&f, 0, sizeof f);
    f.share.fds[0] = f.share.fds[1] = -1;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &f.ctx));
    f.committed0 = images_committed(f.ctx);
    sweep("surface_create", scen_create, &f);
    sweep("surface_export", scen_export, &f);

    tmem_surface_desc d = nv12();
    REQUIRE_OK(tmem_surface_create(f.ctx, &d, &f.src));
    f.committed0 = images_committed(f.ctx);

    /* Import sweeps need a share that outlives each run. */
    tmem_surface_share keep;
    REQUIRE_OK(tmem_surface_export(f.src, TMEM_SHARE_READ_ONLY, &keep));
    f.share = keep;
    tmem_test_sweep_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.label = "surface_import";
    sd.scenario = scen_import;
    sd.check = check_clean;
    sd.cleanup = keep_share_cleanup; /* releases the surface, keeps the share */
    sd.user = &f;
    uint64_t n = tmem_test_fault_sweep_ex(&sd);
    printf("   surface_import: %llu OS calls swept\n", (unsigned long long)n);
    CHECK(n > 0);
    tmem_surface_share_close(&keep);
    f.share.fds[0] = f.share.fds[1] = -1;

    REQUIRE_OK(tmem__os_socketpair(f.sv));
    sweep("surface_send_receive", scen_send_receive, &f);
    (void)tmem__os_close(f.sv[0]);
    (void)tmem__os_close(f.sv[1]);
    tmem_surface_release(f.src);
    tmem_context_destroy(f.ctx);
}

int main(void) {
    RUN(test_sweeps);
    return tmem_test_finish();
}
