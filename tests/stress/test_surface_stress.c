/* Surfaces under threads (TSan label): concurrent lock/unlock with seed
 * counting, use_begin/use_end, lookup/retain/release racing the creator's
 * last release, and first-share sealing from several threads. Checks exact
 * final counts: every read-write unlock bumped the seed exactly once, no use
 * or lock left behind, every lookup either found a live surface or nothing. */
#include "harness.h"
#include "typedmem/surface.h"
#include "os/os.h"
#include <pthread.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 2000 };

typedef struct shared {
    tmem_context *ctx;
    tmem_surface *s;
    uint64_t id;
    _Atomic int failures;
} shared;

static void *hammer(void *arg) {
    shared *sh = arg;
    for (int i = 0; i < ROUNDS; i++) {
        uint32_t flags = (i % 3 == 0) ? 0 : TMEM_LOCK_READ_ONLY;
        if (tmem_surface_lock(sh->s, flags, NULL) != TMEM_OK) sh->failures++;
        if (tmem_surface_use_begin(sh->s) != TMEM_OK) sh->failures++;
        if (tmem_surface_use_end(sh->s) != TMEM_OK) sh->failures++;
        if (tmem_surface_unlock(sh->s, flags, NULL) != TMEM_OK) sh->failures++;
        tmem_surface *f;
        if (tmem_surface_lookup(sh->ctx, sh->id, &f) != TMEM_OK || f != sh->s) sh->failures++;
        tmem_surface_release(f);
    }
    return NULL;
}

static void test_lock_use_lookup(void) {
    shared sh;
    memset(&sh, 0, sizeof sh);
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &sh.ctx));
    /* No pixel writes: the lock is not a mutex between writers (by design,
     * as IOSurface's), so concurrent writers would race on the bytes. */
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_GRAY8;
    d.width = d.height = 64;
    REQUIRE_OK(tmem_surface_create(sh.ctx, &d, &sh.s));
    sh.id = tmem_surface_id(sh.s);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, hammer, &sh);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(sh.failures == 0);
    uint32_t rw_per_thread = (ROUNDS + 2) / 3;
    CHECK_MSG(tmem_surface_seed(sh.s) == THREADS * rw_per_thread, "seed %u", tmem_surface_seed(sh.s));
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(sh.s, &info));
    CHECK(info.lock_count == 0 && info.use_count == 0 && info.ref_count == 1);
    tmem_surface_release(sh.s);
    tmem_context_destroy(sh.ctx);
}

/* Lookups racing the last release: each lookup returns the surface (and
 * keeps it alive) or NOT_FOUND, never a dying object. */
typedef struct race {
    tmem_context *ctx;
    _Atomic uint64_t id;
    _Atomic int stop;
    _Atomic int bad;
} race;

static void *looker(void *arg) {
    race *r = arg;
    while (!r->stop) {
        uint64_t id = r->id;
        if (!id) continue; /* before the first surface */
        tmem_surface *f;
        tmem_status st = tmem_surface_lookup(r->ctx, id, &f);
        if (st == TMEM_OK) {
            if (tmem_surface_id(f) != id || tmem_surface_lock(f, TMEM_LOCK_READ_ONLY, NULL) != TMEM_OK) r->bad++;
            else if (tmem_surface_unlock(f, TMEM_LOCK_READ_ONLY, NULL) != TMEM_OK) r->bad++;
            tmem_surface_release(f);
        } else if (st != TMEM_E_NOT_FOUND) {
            r->bad++;
        }
    }
    return NULL;
}

static void test_lookup_vs_release(void) {
    race r;
    memset(&r, 0, sizeof r);
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &r.ctx));
    int64_t fds0 = tmem__os_live_fds();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, looker, &r);
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGBA8;
    d.width = d.height = 16;
    for (int i = 0; i < 300; i++) {
        tmem_surface *s;
        if (tmem_surface_create(r.ctx, &d, &s) != TMEM_OK) {
            r.bad++;
            break;
        }
        r.id = tmem_surface_id(s);
        /* The creator shares it while lookers hold references. */
        tmem_surface_share sh;
        if (tmem_surface_export(s, i & 1 ? TMEM_SHARE_READ_ONLY : 0, &sh) != TMEM_OK) r.bad++;
        tmem_surface_share_close(&sh);
        tmem_surface_release(s);
    }
    r.stop = 1;
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(r.bad == 0);
    CHECK(tmem__os_live_fds() == fds0);
    tmem_context_destroy(r.ctx);
}

int main(void) {
    RUN(test_lock_use_lookup);
    RUN(test_lookup_vs_release);
    return tmem_test_finish();
}
