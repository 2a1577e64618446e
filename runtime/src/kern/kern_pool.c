/* kern_pool.c: the kernels' thread pool.
 *
 * Workers are created once (tmrt__kern_pool_init) and live in caller memory. A
 * tmrt__kern_pool_for call publishes one job (fn, arg, n, chunk) by bumping a
 * generation counter; workers spin on it for a while and then sleep on a
 * condition variable, so a burst of small ops costs no syscalls while an idle
 * session costs no CPU. Chunks are fixed by (n, grain, threads) and handed out
 * through an atomic counter: which thread runs a chunk may vary, what a chunk
 * covers does not, so a kernel whose items are independent gives the same bits
 * for any thread count. The caller's thread is worker 0 and takes chunks too;
 * it returns once every worker has checked in (the same spin-then-sleep).
 * Nothing here allocates after init. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include "kern_impl.h"

#define POOL_MAX_THREADS 256
/* Spin iterations before sleeping: about 50 us of pause instructions (25 ns
 * each on Zen 3), longer than the gap between two ops of a forward pass and
 * short enough not to burn a shared core when the session idles. */
#define POOL_SPIN 2000

typedef struct pool_worker {
    pthread_t thread;
    struct kern_pool *pool;
    int index;
    bool started;
} pool_worker;

struct kern_pool {
    int n_threads;
    /* the current job, written by the caller before the generation bump */
    kern_task_fn fn;
    void *arg;
    int64_t n, chunk, n_chunks;
    _Atomic int64_t next_chunk;
    _Atomic uint64_t generation;   /* bumped once per job */
    _Atomic int done;              /* workers (not the caller) finished */
    _Atomic int sleepers;          /* workers waiting on `wake` */
    _Atomic bool caller_sleeping;
    _Atomic bool stop;
    pthread_mutex_t lock;
    pthread_cond_t wake;           /* a new job or stop */
    pthread_cond_t finished;       /* the last worker checked in */
    pool_worker workers[];         /* n_threads - 1 of them */
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

size_t tmrt__kern_pool_bytes(int n_threads) {
    if (n_threads < 1 || n_threads > POOL_MAX_THREADS) return 0;
    size_t bytes = sizeof(struct kern_pool) + (size_t)(n_threads - 1) * sizeof(pool_worker);
    return (bytes + 63) & ~(size_t)63;
}

int tmrt__kern_pool_threads(const kern_pool *pool) { return pool ? pool->n_threads : 1; }

/* Take chunks until none is left. */
static void run_chunks(kern_pool *pool, int thread) {
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&pool->next_chunk, 1, memory_order_relaxed);
        if (c >= pool->n_chunks) return;
        int64_t begin = c * pool->chunk;
        int64_t end = begin + pool->chunk < pool->n ? begin + pool->chunk : pool->n;
        pool->fn(pool->arg, begin, end, thread);
    }
}

/* Wait until `*gen` differs from `seen` (or stop): spin, then sleep. */
static uint64_t wait_for_job(kern_pool *pool, uint64_t seen) {
    for (int i = 0; i < POOL_SPIN; i++) {
        uint64_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&pool->stop, memory_order_acquire)) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->sleepers, 1);
    uint64_t g;
    while ((g = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop))
        pthread_cond_wait(&pool->wake, &pool->lock);
    atomic_fetch_sub(&pool->sleepers, 1);
    pthread_mutex_unlock(&pool->lock);
    return g;
}

static void *worker_main(void *p) {
    pool_worker *self = p;
    kern_pool *pool = self->pool;
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_job(pool, seen);
        if (atomic_load_explicit(&pool->stop, memory_order_acquire)) return NULL;
        run_chunks(pool, self->index);
        /* seq_cst: either the caller sees done complete, or we see it asleep */
        if (atomic_fetch_add(&pool->done, 1) + 1 == pool->n_threads - 1 &&
            atomic_load(&pool->caller_sleeping)) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->finished);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

int tmrt__kern_pool_init(void *mem, int n_threads, kern_pool **out) {
    if (!out) return EINVAL;
    *out = NULL;
    if (!mem || n_threads < 1 || n_threads > POOL_MAX_THREADS || ((uintptr_t)mem & 63))
        return EINVAL;
    kern_pool *pool = mem;
    memset(pool, 0, tmrt__kern_pool_bytes(n_threads));
    pool->n_threads = n_threads;
    int err = pthread_mutex_init(&pool->lock, NULL);
    if (err) return err;
    if ((err = pthread_cond_init(&pool->wake, NULL))) {
        pthread_mutex_destroy(&pool->lock);
        return err;
    }
    if ((err = pthread_cond_init(&pool->finished, NULL))) {
        pthread_cond_destroy(&pool->wake);
        pthread_mutex_destroy(&pool->lock);
        return err;
    }
    for (int i = 0; i < n_threads - 1; i++) {
        pool_worker *w = &pool->workers[i];
        w->pool = pool;
        w->index = i + 1;
        if ((err = pthread_create(&w->thread, NULL, worker_main, w))) {
            tmrt__kern_pool_fini(pool);
            return err;
        }
        w->started = true;
    }
    *out = pool;
    return 0;
}

void tmrt__kern_pool_fini(kern_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stop, true);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->n_threads - 1; i++)
        if (pool->workers[i].started) pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->finished);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
}

int64_t tmrt__kern_pool_chunk(int n_threads, int64_t n, int64_t grain) {
    if (grain < 1) grain = 1;
    if (n_threads < 1) n_threads = 1;
    /* about 4 chunks per thread (some balance on a loaded machine), each a
     * whole number of grains */
    int64_t want = (n + 4 * (int64_t)n_threads - 1) / (4 * (int64_t)n_threads);
    int64_t chunk = (want + grain - 1) / grain * grain;
    return chunk < grain ? grain : chunk;
}

void tmrt__kern_pool_for(kern_pool *pool, int64_t n, int64_t grain, kern_task_fn fn, void *arg) {
    if (n <= 0) return;
    int threads = tmrt__kern_pool_threads(pool);
    int64_t chunk = tmrt__kern_pool_chunk(threads, n, grain);
    int64_t n_chunks = (n + chunk - 1) / chunk;
    if (threads == 1 || n_chunks == 1) {
        for (int64_t b = 0; b < n; b += chunk) fn(arg, b, b + chunk < n ? b + chunk : n, 0);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->chunk = chunk;
    pool->n_chunks = n_chunks;
    atomic_store_explicit(&pool->next_chunk, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_fetch_add(&pool->generation, 1); /* seq_cst: publishes the job */
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }
    run_chunks(pool, 0);
    for (int i = 0; i < POOL_SPIN; i++) {
        if (atomic_load_explicit(&pool->done, memory_order_acquire) == threads - 1) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->caller_sleeping, true);
    while (atomic_load(&pool->done) != threads - 1) pthread_cond_wait(&pool->finished, &pool->lock);
    atomic_store(&pool->caller_sleeping, false);
    pthread_mutex_unlock(&pool->lock);
}
