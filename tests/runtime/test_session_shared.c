/* Sessions sharing one context (found by tests/soak): the first session's KV
 * cache used to create the shared "/memory/snapshots" type sized for itself
 * alone, so a second live session failed with TMEM_E_FULL. Now several
 * sessions live at once, each with its own range of snapshots; a session
 * that takes more snapshots than TMRT_SESSION_SNAPSHOTS has the oldest
 * dropped, reported through desc.on_evict, and rollback to a dropped one is
 * TMEM_E_NOT_FOUND. */
#include "tiny_model.h"
#include "tmemrt/runtime.h"

static char path[600];

typedef struct drops {
    uint32_t n;
    uint64_t tokens[16];
} drops;

static void on_drop(tmem_kv_cache *cache, const tmem_kv_event *ev, void *user) {
    (void)cache;
    drops *d = user;
    if (ev->kind == TMEM_KV_EVENT_SNAPSHOT_DROPPED && d->n < 16) d->tokens[d->n] = ev->tokens;
    d->n++;
}

static void eval_tokens(tmrt_session *s, uint32_t n, int32_t first) {
    int32_t toks[16];
    for (uint32_t i = 0; i < n; i++) toks[i] = (first + (int32_t)i * 7) % 90;
    tmrt_batch b = {.tokens = toks, .n_tokens = n, .logits = TMRT_LOGITS_LAST};
    tmrt_error e;
    CHECK_MSG(tmrt_session_eval(s, &b, NULL, NULL, &e) == TMEM_OK, "eval: %.200s", e.message);
}

static void test_sessions_share_a_context(void) {
    tmem_context_desc cd = {.budget = 1ull << 30};
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model_desc md = {.path = path};
    tmrt_model *m;
    tmrt_error e;
    REQUIRE_OK(tmrt_model_open(ctx, &md, &m, &e));
    enum { N = 4 };
    tmrt_session *s[N];
    drops d[N];
    memset(d, 0, sizeof d);
    for (int i = 0; i < N; i++) {
        tmrt_session_desc sd = {.n_ctx = 64, .chunk = 16, .on_evict = on_drop, .evict_user = &d[i]};
        tmem_status st = tmrt_session_create(m, &sd, &s[i], NULL, &e);
        CHECK_MSG(st == TMEM_OK, "session %d of %d alive at once: %s (%.160s)", i + 1, N,
                  tmem_status_name(st), e.message);
        if (st != TMEM_OK) s[i] = NULL;
    }
    /* each takes one snapshot more than it has room for, at 4, 8, ... tokens */
    for (int i = 0; i < N; i++) {
        if (!s[i]) continue;
        for (uint32_t k = 1; k <= TMRT_SESSION_SNAPSHOTS + 1; k++) {
            eval_tokens(s[i], 4, (int32_t)(i * 10 + k));
            CHECK_OK(tmrt_session_snapshot(s[i]));
        }
        CHECK_MSG(d[i].n == 1 && d[i].tokens[0] == 4,
                  "session %d: %u drops reported (first at %llu)", i, d[i].n,
                  (unsigned long long)d[i].tokens[0]);
        CHECK_ST(tmrt_session_rollback(s[i], 4), TMEM_E_NOT_FOUND);
        CHECK_OK(tmrt_session_rollback(s[i], 8)); /* the oldest kept */
    }
    for (int i = 0; i < N; i++) tmrt_session_destroy(s[i]);
    CHECK_OK(tmem_context_check(ctx));
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}

int main(void) {
    char dir[400];
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    tiny_config c = tiny_config_a();
    if (!tiny_model_write(&c, path)) return 1;
    RUN(test_sessions_share_a_context);
    remove(path);
    remove(dir);
    return tmem_test_finish();
}
