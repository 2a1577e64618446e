/* A loaded tokenizer is shared by threads: four threads encode and decode
 * the same texts at once (short pieces on their stacks, long ones through
 * the shared THREAD_SAFE scratch heap) and get the single-threaded ids.
 * Labelled tsan (tests/tokenizer.cmake). */
#include <pthread.h>
#include "tok_test_util.h"

enum { N_THREADS = 4, ROUNDS = 40, TEXT = 3000 };

typedef struct shared {
    const tmrt_tokenizer *tok;
    const char *text;
    size_t len;
    const int32_t *want;
    size_t n_want;
    int failures;
} shared;

static void *worker(void *arg) {
    shared *s = arg;
    int32_t *ids = malloc((s->len + 1) * sizeof *ids);
    char *back = malloc(s->len + 1);
    int bad = 0;
    for (int r = 0; ids && back && r < ROUNDS; r++) {
        size_t n = 0, o = 0, m;
        if (tmrt_tokenizer_encode(s->tok, s->text, s->len, 0, ids, s->len + 1, &n) != TMEM_OK || n != s->n_want ||
            memcmp(ids, s->want, n * sizeof *ids))
            bad++;
        for (size_t i = 0; i < n && o <= s->len; i++) {
            if (tmrt_tokenizer_decode(s->tok, ids[i], back + o, s->len + 1 - o, &m) != TMEM_OK) bad++;
            o += m;
        }
        if (o != s->len || memcmp(back, s->text, s->len)) bad++;
    }
    free(ids);
    free(back);
    s->failures = bad; /* each thread has its own shared copy */
    return NULL;
}

static void test_threads_share_a_tokenizer(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    mini m;
    mini_init(&m);
    void *img;
    tmem_gguf *g;
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    REQUIRE_OK(mini_load(ctx, &m, &img, &g, &tok, &err));
    char *text = malloc(TEXT);
    REQUIRE(text);
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(3));
    for (size_t i = 0; i < TEXT; i++) {
        uint64_t x = tmem_rng_next(&r);
        /* runs of letters up to ~600 bytes (long pieces), spaces, bytes */
        text[i] = (x % 701) == 0 ? ' ' : (x % 97) == 0 ? (char)(x >> 8) : "hello"[(x >> 16) % 5];
    }
    int32_t *want = malloc((TEXT + 1) * sizeof *want);
    size_t n_want;
    REQUIRE(want);
    CHECK_OK(tmrt_tokenizer_encode(tok, text, TEXT, 0, want, TEXT + 1, &n_want));
    shared s[N_THREADS];
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        s[i] = (shared){tok, text, TEXT, want, n_want, 0};
        CHECK(pthread_create(&th[i], NULL, worker, &s[i]) == 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_MSG(s[i].failures == 0, "thread %d: %d mismatches", i, s[i].failures);
    }
    CHECK_OK(tmem_context_check(ctx));
    free(want);
    free(text);
    tmrt_tokenizer_destroy(tok);
    tmem_gguf_close(g);
    free(img);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_threads_share_a_tokenizer);
    return tmem_test_finish();
}
