/* Soak: several threads run runtime sessions (prefill, greedy decode, a
 * snapshot and a rollback that decodes again) and a library-level KV worker
 * (forks, copy-on-write, snapshots, rollbacks, frees: tests/soak/soak_kv.h)
 * against ONE context under a tight budget, while a sampler reads the OS
 * footprint every millisecond and a watchdog fails the test on a stall. An
 * image worker (tests/soak/soak_image.h) writes NV12 camera frames into
 * surfaces of /memory/images and encodes them with the committed tiny vision
 * tower (fused conversion into the patch tensor, then the encoder), in the
 * same context under the same budget.
 *
 * Asserts: every job's logits equal, bitwise, those of the same job run solo
 * before the soak (one kernel thread per session, so threads never change a
 * summation order), and so does every frame's embeddings; a rollback
 * decodes the same logits again; the footprint never passes the budget +
 * the fixed overhead measured before the load (not asserted under a
 * sanitizer: its shadow memory grows with every byte touched); every
 * eviction and snapshot drop came through the callback, and
 * the callbacks equal the cache's counters; some evictions happened; at the
 * end each pool's resident bytes (mincore) are within a page of what it
 * accounts as committed, either way, and the context and cache checks pass.
 *
 * Duration: TMEM_SOAK_SECONDS (default 20: the `make test` variant, label
 * tsan). The long run: TMEM_SOAK_SECONDS=600 ./build/soak_test_soak. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/core.h"
#include "harness.h"
#include "soak_image.h"
#include "soak_kv.h"
#include "tmemrt/runtime.h"
#include "typedmem/typedmem.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifndef SOAK_SANITIZED
#define SOAK_SANITIZED 0
#endif

#define N_JOBS 6
#define N_WORKERS 3
#define N_CTX 64
#define STALL_SECONDS 120 /* no progress for this long: a deadlock */
#define MiB (1024.0 * 1024.0)

typedef struct job {
    uint32_t prompt, decode, chunk;
    uint64_t seed;
} job;

typedef struct job_result {
    uint64_t all, decode, redecode; /* FNV-1a of the logits rows' bytes */
    uint32_t tokens;
} job_result;

static const job k_jobs[N_JOBS] = {
    {9, 6, 16, 11},  {17, 5, 16, 12}, {24, 8, 8, 13},
    {31, 4, 16, 14}, {40, 6, 32, 15}, {12, 10, 4, 16},
};

static tmem_context *ctx;
static tmrt_model *model;
static job_result refs[N_JOBS];
static atomic_int stop;
static atomic_uint_fast64_t progress, failures, sessions_done, tokens_done, create_refusals;
static atomic_uint_fast64_t session_snap_drops, session_snap_drops_met;
static atomic_uint_fast64_t peak_footprint, peak_over_dirty, samples;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Hashes each row; keeps the last one (the next token comes from it). */
typedef struct row_sink {
    uint64_t h;
    float last[1024];
    bool have_last;
} row_sink;

static tmem_status hash_row(void *user, uint32_t index, const float *logits, uint32_t n_vocab) {
    (void)index;
    row_sink *r = user;
    r->h = fnv(r->h, logits, (size_t)n_vocab * sizeof *logits);
    if (n_vocab > sizeof r->last / sizeof r->last[0]) return TMEM_E_FULL;
    memcpy(r->last, logits, (size_t)n_vocab * sizeof *logits);
    r->have_last = true;
    return TMEM_OK;
}

static int32_t argmax(const float *x, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* Greedy decode of n tokens from the logits row `from`. */
static tmem_status decode(tmrt_session *s, const float *from, uint32_t n, uint32_t n_vocab,
                          uint64_t *h, tmrt_error *e) {
    row_sink *sink = malloc(sizeof *sink);
    if (!sink) return TMEM_E_NO_MEMORY;
    sink->h = *h;
    memcpy(sink->last, from, (size_t)n_vocab * sizeof *from);
    tmem_status st = TMEM_OK;
    for (uint32_t i = 0; i < n && st == TMEM_OK; i++) {
        int32_t tok = argmax(sink->last, n_vocab);
        tmrt_batch b = {.tokens = &tok, .n_tokens = 1, .logits = TMRT_LOGITS_LAST};
        st = tmrt_session_eval(s, &b, hash_row, sink, e);
    }
    *h = sink->h;
    free(sink);
    return st;
}

/* One job in a fresh session: TMEM_OK with its hashes, TMEM_E_BUDGET when the
 * budget refused it (the session or its KV growth), anything else a failure. */
static void on_session_drop(tmem_kv_cache *cache, const tmem_kv_event *ev, void *user) {
    (void)cache;
    (void)ev;
    atomic_fetch_add((atomic_uint_fast64_t *)user, 1);
    atomic_fetch_add(&session_snap_drops, 1);
}

static tmem_status run_job(const job *j, job_result *out, uint64_t *session_bytes) {
    const tmrt_hparams *hp = tmrt_model_hparams(model);
    atomic_uint_fast64_t drops = 0;
    tmrt_session_desc sd = {.n_ctx = N_CTX,
                            .chunk = j->chunk,
                            .threads = 1,
                            .flags = TMRT_SESSION_NO_CHUNK_SHRINK,
                            .on_evict = on_session_drop,
                            .evict_user = &drops};
    tmrt_session *s;
    tmrt_session_info info;
    tmrt_error e;
    tmem_status st = tmrt_session_create(model, &sd, &s, &info, &e);
    if (st != TMEM_OK) {
        if (st != TMEM_E_BUDGET)
            fprintf(stderr, "soak: session: %s (%s)\n", tmem_status_name(st), e.message);
        return st;
    }
    if (session_bytes) *session_bytes = info.fit.total_dirty;
    int32_t prompt[N_CTX];
    tmem_rng rng;
    tmem_rng_init(&rng, j->seed);
    for (uint32_t i = 0; i < j->prompt; i++)
        prompt[i] = (int32_t)tmem_rng_range(&rng, 0, hp->n_vocab - 1);
    const uint64_t fnv0 = 14695981039346656037ull;
    job_result r = {fnv0, fnv0, fnv0, 0};
    row_sink *p = calloc(1, sizeof *p);
    if (!p) {
        tmrt_session_destroy(s);
        return TMEM_E_NO_MEMORY;
    }
    p->h = fnv0;
    tmrt_batch b = {.tokens = prompt, .n_tokens = j->prompt, .logits = TMRT_LOGITS_ALL};
    st = tmrt_session_eval(s, &b, hash_row, p, &e);
    r.all = p->h;
    if (st == TMEM_OK) st = tmrt_session_snapshot(s);
    if (st == TMEM_OK) st = decode(s, p->last, j->decode, hp->n_vocab, &r.decode, &e);
    if (st == TMEM_OK) {
        st = tmrt_session_rollback(s, j->prompt);
        /* the policy may drop the snapshot under pressure: fine when reported */
        if (st == TMEM_E_NOT_FOUND && atomic_load(&drops)) {
            atomic_fetch_add(&session_snap_drops_met, 1);
            st = TMEM_E_BUDGET;
        }
    }
    if (st == TMEM_OK) st = decode(s, p->last, j->decode, hp->n_vocab, &r.redecode, &e);
    free(p);
    tmrt_session_destroy(s);
    r.tokens = j->prompt + 2 * j->decode;
    r.all = fnv(r.all, &r.decode, sizeof r.decode);
    *out = r;
    if (st != TMEM_OK && st != TMEM_E_BUDGET)
        fprintf(stderr, "soak: job failed: %s (%s)\n", tmem_status_name(st), e.message);
    return st;
}

static void *session_worker(void *arg) {
    tmem_rng rng;
    tmem_rng_init(&rng, 0x5e55u + (uintptr_t)arg);
    while (!atomic_load(&stop)) {
        uint32_t k = (uint32_t)tmem_rng_range(&rng, 0, N_JOBS - 1);
        job_result r;
        tmem_status st = run_job(&k_jobs[k], &r, NULL);
        atomic_fetch_add(&progress, 1);
        if (st == TMEM_E_BUDGET) {
            atomic_fetch_add(&create_refusals, 1);
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (st != TMEM_OK) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (r.all != refs[k].all || r.redecode != refs[k].decode) {
            fprintf(stderr,
                    "soak: job %u: logits differ from the solo run (all %016llx vs %016llx, "
                    "redecode %016llx vs %016llx)\n",
                    k, (unsigned long long)r.all, (unsigned long long)refs[k].all,
                    (unsigned long long)r.redecode, (unsigned long long)refs[k].decode);
            atomic_fetch_add(&failures, 1);
        }
        atomic_fetch_add(&sessions_done, 1);
        atomic_fetch_add(&tokens_done, r.tokens);
    }
    return NULL;
}

static void atomic_max(atomic_uint_fast64_t *a, uint64_t v) {
    uint64_t cur = atomic_load(a);
    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v)) {
    }
}

/* Footprint every millisecond; also the part above what the context
 * accounts as dirty (the overhead outside typedmem). */
static void *sampler(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        tmem_footprint f;
        uint64_t dirty, clean;
        if (tmem_footprint_read(&f) == TMEM_OK &&
            tmem_context_accounted(ctx, &dirty, &clean) == TMEM_OK) {
            atomic_max(&peak_footprint, f.footprint);
            atomic_max(&peak_over_dirty, f.footprint > dirty ? f.footprint - dirty : 0);
            atomic_fetch_add(&samples, 1);
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *watchdog(void *arg) {
    (void)arg;
    uint64_t last = atomic_load(&progress);
    double since = now_s();
    while (!atomic_load(&stop)) {
        sleep(1);
        uint64_t p = atomic_load(&progress);
        if (p != last) {
            last = p;
            since = now_s();
        } else if (now_s() - since > STALL_SECONDS) {
            fprintf(stderr, "soak: no progress for %d s: deadlock\n", STALL_SECONDS);
            abort();
        }
    }
    return NULL;
}

/* Resident bytes of each host pool vs what it accounts as committed. */
static void check_pools(void) {
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), worst = 0;
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_info ti;
        REQUIRE_OK(tmem_type_at(ctx, i, &t));
        REQUIRE_OK(tmem_type_get_info(t, &ti));
        if (ti.placement == TMEM_PLACEMENT_FILE || !t->pool.region.size) continue;
        uint64_t resident, committed = t->pool.committed_pages << t->pool.granule_shift;
        tmem_status st = tmem__pool_residency(t, 0, t->pool.region.size, &resident);
        if (st == TMEM_E_UNSUPPORTED) continue;
        REQUIRE_OK(st);
        /* Both ways: nothing resident the pool does not account, and nothing
         * accounted that is not resident (every slot handed out was written). */
        uint64_t gap = resident > committed ? resident - committed : committed - resident;
        CHECK_MSG(gap <= page, "%s: %llu bytes resident, %llu accounted", ti.name,
                  (unsigned long long)resident, (unsigned long long)committed);
        if (gap > worst) worst = gap;
        printf("   pool %-22s committed %8.2f MiB  resident %8.2f MiB\n", ti.name,
               (double)committed / MiB, (double)resident / MiB);
    }
    printf(
        "   largest gap between a pool's committed and resident bytes: %llu\n",
        (unsigned long long)worst);
}

static void test_soak(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/llamacpp/qwen35-tiny-a-f16.gguf", src ? src : ".");
    if (access(path, R_OK) != 0) {
        char why[1100];
        snprintf(why, sizeof why, "soak: %s not found (set TMEM_SOURCE_DIR)", path);
        tmem_test_skip(why);
        return;
    }
    const char *secs_env = getenv("TMEM_SOAK_SECONDS");
    double seconds = secs_env ? atof(secs_env) : 20.0;
    tmem_footprint f0;
    bool have_fp = tmem_footprint_read(&f0) == TMEM_OK;

    tmem_context_desc cd = {.budget = 1ull << 30};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model_desc md = {.path = path, .memory = TMRT_MEMORY_TYPED};
    tmrt_error e;
    REQUIRE_OK(tmrt_model_open(ctx, &md, &model, &e));

    /* The solo references, one job at a time on an idle context. */
    uint64_t session_bytes = 0, sb;
    for (int k = 0; k < N_JOBS; k++) {
        REQUIRE_OK(run_job(&k_jobs[k], &refs[k], &sb));
        CHECK_MSG(refs[k].redecode == refs[k].decode, "job %d: the rollback decoded other logits",
                  k);
        if (sb > session_bytes) session_bytes = sb;
    }

    /* The image worker: the committed tiny vision tower, its solo references. */
    static soak_image img;
    memset(&img, 0, sizeof img);
    img.ctx = ctx;
    img.stop = &stop;
    img.progress = &progress;
    snprintf(path, sizeof path, "%s/tests/data/llamacpp/mmproj-qwen35-tiny-vlm-f32.gguf",
             src ? src : ".");
    tmrt_error verr = {""};
    tmrt_vision_desc vd = {path, TMRT_MEMORY_TYPED, NULL};
    tmem_status vrc = tmrt_vision_open(ctx, &vd, &img.vision, &verr);
    if (vrc != TMEM_OK) printf("   vision tower: %s\n", verr.message);
    REQUIRE(vrc == TMEM_OK);
    double v0 = now_s();
    REQUIRE(soak_image_references(&img));
    printf("   image worker: %d solo frames encoded in %.1f ms each; share %.2f MiB\n",
           SOAK_IMAGE_FRAMES, (now_s() - v0) * 1e3 / SOAK_IMAGE_FRAMES,
           (double)img.share / MiB);

    /* The KV worker's cache: tiny rows, a pool for 64 blocks, snapshots
     * bounded to a few, so its own admission evicts too. */
    static soak_kv w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.events_lock, NULL);
    w.progress = &progress;
    w.stop = &stop;
    tmem_kv_cache_desc kd = {0};
    kd.kv = (tmem_kv_layout){.layers = 1, .kv_heads = 2, .head_dim = 32};
    kd.recurrent = (tmem_recurrent_layout){
        .layers = 1, .key_heads = 1, .value_heads = 1, .key_dim = 32, .value_dim = 32};
    uint64_t block_bytes;
    REQUIRE_OK(tmem_kv_layout_block_bytes(&kd.kv, &block_bytes));
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), slot = (block_bytes + page - 1) / page * page;
    kd.kv_pool_bytes = 48 * slot; /* the worker wants up to 12 x 192 tokens: 144 blocks */
    uint64_t state_bytes;
    REQUIRE_OK(tmem_recurrent_layout_bytes(&kd.recurrent, &state_bytes));
    kd.state_pool_bytes = 16 * ((state_bytes + page - 1) / page * page);
    /* its own snapshot type (the sessions' one is sized for them), 6 slots */
    uint64_t snap_slot = (state_bytes + page - 1) / page * page;
    tmem_type_desc sd = {
        .name = "/memory/soak-snapshots", .reserve = 6 * snap_slot, .budget = 6 * snap_slot};
    REQUIRE_OK(tmem_type_create(ctx, &sd, &kd.snapshot_type));
    kd.max_sequences = 64;
    kd.max_tokens = SOAK_KV_TOKENS;
    kd.on_evict = soak_kv_on_evict;
    kd.user = &w;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &kd, &w.cache));

    /* The budget: what the context holds dirty now (the weights map clean),
     * two sessions, half the KV worker's pool and one frame of the
     * image worker (its largest: surface + patch heap + arena + scratch), so
     * three session threads, the KV worker and the image worker cannot all
     * get what they want at once. */
    tmem_budget_info bi;
    REQUIRE_OK(tmem_context_budget(ctx, &bi));
    uint64_t base_dirty = bi.committed - bi.committed_clean;
    uint64_t budget = base_dirty + 2 * session_bytes + kd.kv_pool_bytes / 2 + img.share;
    REQUIRE_OK(tmem_context_set_budget(ctx, budget));
    tmem_footprint f1;
    uint64_t overhead = 0;
    if (have_fp && tmem_footprint_read(&f1) == TMEM_OK)
        overhead = f1.footprint > base_dirty ? f1.footprint - base_dirty : 0;
    /* Threads' stacks and malloc arenas come after this reading: allowed on top. */
    const uint64_t slack = 4u << 20;
    printf("   budget %.2f MiB (context %.2f + 2 x session %.2f + KV worker %.2f + image "
           "%.2f); overhead measured %.2f MiB + %.0f MiB slack (threads)\n",
           (double)budget / MiB, (double)base_dirty / MiB, (double)session_bytes / MiB,
           (double)kd.kv_pool_bytes / 2 / MiB, (double)img.share / MiB, (double)overhead / MiB,
           slack / MiB);

    pthread_t th[N_WORKERS + 4];
    double t0 = now_s();
    for (uintptr_t i = 0; i < N_WORKERS; i++)
        REQUIRE(pthread_create(&th[i], NULL, session_worker, (void *)i) == 0);
    REQUIRE(pthread_create(&th[N_WORKERS], NULL, soak_kv_main, &w) == 0);
    REQUIRE(pthread_create(&th[N_WORKERS + 1], NULL, sampler, NULL) == 0);
    REQUIRE(pthread_create(&th[N_WORKERS + 2], NULL, watchdog, NULL) == 0);
    REQUIRE(pthread_create(&th[N_WORKERS + 3], NULL, soak_image_main, &img) == 0);
    while (now_s() - t0 < seconds) sleep(1);
    atomic_store(&stop, 1);
    for (int i = 0; i < N_WORKERS + 4; i++) pthread_join(th[i], NULL);
    double took = now_s() - t0;

    tmem_kv_cache_stats ks;
    REQUIRE_OK(tmem_kv_cache_get_stats(w.cache, &ks));
    printf("   %.0f s: %llu sessions, %llu tokens, %llu session refusals; KV worker %llu ops, %llu "
           "forks, "
           "%llu snapshots, %llu rollbacks, %llu rows verified\n",
           took, (unsigned long long)sessions_done, (unsigned long long)tokens_done,
           (unsigned long long)create_refusals, (unsigned long long)w.ops,
           (unsigned long long)w.forks, (unsigned long long)w.snapshots,
           (unsigned long long)w.rollbacks, (unsigned long long)w.verified_rows);
    printf("   evictions: %llu sequences, %llu snapshots (cache counters); callbacks %llu + %llu; "
           "met %llu "
           "evicted, %llu dropped; %llu KV refusals\n",
           (unsigned long long)ks.seqs_evicted, (unsigned long long)ks.snaps_dropped,
           (unsigned long long)w.n_seq_events, (unsigned long long)w.n_snap_events,
           (unsigned long long)w.met_evicted, (unsigned long long)w.met_dropped,
           (unsigned long long)w.budget_refusals);
    printf("   image worker: %llu frames written, %llu converted + encoded (bitwise = solo), "
           "refusals %llu surface + %llu encoder\n",
           (unsigned long long)img.frames, (unsigned long long)img.encodes,
           (unsigned long long)img.surface_refusals, (unsigned long long)img.encode_refusals);
    printf("   session snapshots dropped: %llu reported by callback, %llu met by a rollback\n",
           (unsigned long long)session_snap_drops, (unsigned long long)session_snap_drops_met);
    printf("   footprint: peak %.2f MiB vs budget %.2f MiB + overhead %.2f MiB; peak above the "
           "context's dirty "
           "%.2f MiB; %llu samples (%.0f Hz)\n",
           (double)peak_footprint / MiB, (double)budget / MiB, (double)overhead / MiB,
           (double)peak_over_dirty / MiB, (unsigned long long)samples, (double)samples / took);

    CHECK_MSG(atomic_load(&failures) == 0, "%llu session failures", (unsigned long long)failures);
    CHECK_MSG(atomic_load(&w.failures) == 0, "%llu KV worker failures",
              (unsigned long long)w.failures);
    CHECK_MSG(atomic_load(&img.failures) == 0, "%llu image worker failures",
              (unsigned long long)img.failures);
    CHECK(sessions_done > 0 && w.ops > 0 && img.encodes > 0);
    CHECK_MSG(w.n_seq_events == ks.seqs_evicted && w.n_snap_events == ks.snaps_dropped,
              "callbacks %llu + %llu, counters %llu + %llu", (unsigned long long)w.n_seq_events,
              (unsigned long long)w.n_snap_events, (unsigned long long)ks.seqs_evicted,
              (unsigned long long)ks.snaps_dropped);
    CHECK_MSG(ks.seqs_evicted + ks.snaps_dropped > 0, "no eviction: the budget is not tight");
    if (have_fp && !SOAK_SANITIZED)
        CHECK_MSG(peak_footprint <= budget + overhead + slack, "footprint %.2f MiB above %.2f MiB",
                  (double)peak_footprint / MiB, (double)(budget + overhead + slack) / MiB);
    else
        printf("   footprint bound not asserted (%s)\n",
               have_fp ? "sanitizer shadow memory" : "no smaps_rollup");
    CHECK_OK(tmem_kv_cache_check(w.cache));
    CHECK_OK(tmem_context_check(ctx));
    check_pools();
    tmem_kv_cache_destroy(w.cache);
    pthread_mutex_destroy(&w.events_lock);
    tmrt_vision_close(img.vision);
    tmrt_model_close(model);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_soak);
    return tmem_test_finish();
}
