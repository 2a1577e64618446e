/* The server (tmemrt/server.h): sessions on one model and one run.
 *
 * - batched greedy decode of N sessions (prompts of different lengths, one
 *   longer than several chunks) gives each the tokens and the logits bits
 *   of a session run alone with the same chunk; the decode really is one
 *   batch, and a long prompt never holds the others' decode back for more
 *   than one chunk per step;
 * - suspend / resume: a conversation suspended between turns continues with
 *   the bits of one never suspended; its memory is given back; the file is
 *   complete or absent under a fault at every write step;
 * - a budget hit suspends idle conversations through the reclaim step. */
#include <sys/stat.h>
#include "tiny_model.h"
#include "tmemrt/server.h"
#include "tmemrt/testing.h"

static char path[600], dir[400];

enum { N = 4, PREDICT = 10, CHUNK = 16, CTX = 160 };
static const uint32_t prompt_len[N] = {5, 57, 16, 1};

static void make_prompt(uint32_t i, uint32_t turn, int32_t *out, uint32_t n, uint32_t vocab) {
    for (uint32_t t = 0; t < n; t++) out[t] = (int32_t)((i * 31 + turn * 17 + t * 7 + 3) % vocab);
}

typedef struct outcome {
    int32_t tokens[2][PREDICT];
    float *logits; /* after the last turn */
} outcome;

typedef struct env {
    tmem_context *ctx;
    tmrt_model *m;
    uint32_t vocab;
} env;

static bool env_open(env *v, uint64_t budget) {
    tmem_context_desc cd = {.budget = budget};
    tmrt_error e;
    if (tmem_context_create(&cd, &v->ctx)) return false;
    tmrt_model_desc md = {.path = path};
    if (tmrt_model_open(v->ctx, &md, &v->m, &e)) {
        tmem_context_destroy(v->ctx);
        return false;
    }
    v->vocab = tmrt_model_hparams(v->m)->n_vocab;
    return true;
}

static void env_close(env *v) {
    tmrt_model_close(v->m);
    tmem_context_destroy(v->ctx);
}

/* Session i alone: `turns` turns, each the turn's prompt after the last
 * sampled token of the previous turn, then PREDICT greedy tokens. */
static bool run_alone(uint32_t i, uint32_t turns, outcome *o) {
    env v;
    if (!env_open(&v, 1ull << 30)) return false;
    tmrt_session_desc sd = {.n_ctx = CTX, .chunk = CHUNK};
    tmrt_session *s;
    tmrt_error e;
    bool ok = tmrt_session_create(v.m, &sd, &s, NULL, &e) == TMEM_OK;
    CHECK_MSG(ok, "alone: %.200s", e.message);
    int32_t carry = -1;
    for (uint32_t turn = 0; ok && turn < turns; turn++) {
        int32_t p[80];
        uint32_t n = 0;
        if (carry >= 0) p[n++] = carry;
        make_prompt(i, turn, p + n, prompt_len[i], v.vocab);
        n += prompt_len[i];
        tmrt_batch b = {.tokens = p, .n_tokens = n, .logits = TMRT_LOGITS_LAST};
        ok = tmrt_session_eval(s, &b, NULL, NULL, &e) == TMEM_OK;
        tmrt_sampler sp;
        tmrt_sampler_init(&sp, NULL);
        for (uint32_t k = 0; ok && k < PREDICT; k++) {
            int32_t tok;
            ok = tmrt_session_sample(s, &sp, &tok) == TMEM_OK;
            o->tokens[turn][k] = tok;
            if (k + 1 == PREDICT) {
                carry = tok;
                break;
            }
            tmrt_batch d = {.tokens = &tok, .n_tokens = 1, .logits = TMRT_LOGITS_LAST};
            ok = ok && tmrt_session_eval(s, &d, NULL, NULL, &e) == TMEM_OK;
        }
    }
    if (ok) {
        o->logits = malloc((size_t)v.vocab * sizeof(float));
        memcpy(o->logits, tmrt_session_logits(s), (size_t)v.vocab * sizeof(float));
    }
    tmrt_session_destroy(s);
    env_close(&v);
    return ok;
}

static tmrt_server *server_new_flags(env *v, const char *sdir, uint32_t flags) {
    tmrt_server_desc d = {0};
    d.flags = flags;
    d.session.n_ctx = CTX;
    d.session.chunk = CHUNK;
    d.max_sessions = N;
    d.suspend_dir = sdir;
    tmrt_server *srv;
    tmrt_error e;
    tmem_status st = tmrt_server_create(v->m, &d, &srv, &e);
    CHECK_MSG(st == TMEM_OK, "server: %s %.200s", tmem_status_name(st), e.message);
    return st ? NULL : srv;
}

static tmrt_server *server_new(env *v, const char *sdir) { return server_new_flags(v, sdir, 0); }

static void submit_turn(env *v, tmrt_server *srv, uint32_t id, uint32_t i, uint32_t turn) {
    tmrt_server_request rq = {0};
    int32_t p[80];
    make_prompt(i, turn, p, prompt_len[i], v->vocab);
    rq.tokens = p;
    rq.n_tokens = prompt_len[i];
    rq.n_predict = PREDICT;
    tmrt_error e;
    tmem_status st = tmrt_server_submit(srv, id, &rq, &e);
    CHECK_MSG(st == TMEM_OK, "submit %u: %s %.200s", i, tmem_status_name(st), e.message);
}

/* Step until idle; the steps' shape checked on the way. */
static void run_until_idle(tmrt_server *srv, uint32_t *max_rows) {
    for (uint32_t steps = 0; steps < 1000; steps++) {
        tmrt_server_step_info si;
        tmrt_error e;
        REQUIRE_OK(tmrt_server_step(srv, &si, &e));
        CHECK(si.prefill_tokens <= CHUNK);
        if (si.decode_rows > *max_rows) *max_rows = si.decode_rows;
        if (si.idle) return;
    }
    CHECK_MSG(false, "the server did not go idle in 1000 steps");
}

static void read_tokens(tmrt_server *srv, uint32_t id, int32_t *out) {
    uint32_t n;
    tmrt_server_slot_info in;
    CHECK_OK(tmrt_server_read(srv, id, out, PREDICT, &n, &in));
    CHECK_MSG(n == PREDICT && in.finish == TMRT_SERVER_LENGTH, "read %u tokens, finish %d status %s", n,
              (int)in.finish, tmem_status_name(in.status));
}

static void check_same(const outcome *alone, int32_t got[2][PREDICT], const float *logits, uint32_t vocab,
                       uint32_t turns, uint32_t i) {
    for (uint32_t t = 0; t < turns; t++)
        CHECK_MSG(!memcmp(alone->tokens[t], got[t], sizeof got[t]), "session %u turn %u: tokens differ from alone", i,
                  t);
    CHECK_MSG(logits && alone->logits && !memcmp(alone->logits, logits, vocab * sizeof(float)),
              "session %u: final logits not bit for bit those of the session alone", i);
}

static void test_batched_equals_alone(void) {
    outcome alone[N];
    for (uint32_t i = 0; i < N; i++) REQUIRE(run_alone(i, 1, &alone[i]));
    env v;
    REQUIRE(env_open(&v, 1ull << 30));
    tmrt_server *srv = server_new(&v, NULL);
    REQUIRE(srv);
    uint32_t id[N];
    tmrt_error e;
    for (uint32_t i = 0; i < N; i++) REQUIRE_OK(tmrt_server_open(srv, &id[i], &e));
    for (uint32_t i = 0; i < N; i++) submit_turn(&v, srv, id[i], i, 0);
    /* while the 57-token prompt prefills (4 chunks), the short ones already
     * decode: every step runs at most one chunk and every generating session */
    uint32_t max_rows = 0;
    tmrt_server_step_info si;
    uint32_t steps_with_both = 0;
    for (int k = 0; k < 6; k++) {
        REQUIRE_OK(tmrt_server_step(srv, &si, &e));
        if (si.prefill_tokens && si.decode_rows) steps_with_both++;
    }
    CHECK_MSG(steps_with_both >= 2, "a long prefill interleaved with decode in %u steps", steps_with_both);
    run_until_idle(srv, &max_rows);
    CHECK_MSG(max_rows == N, "the decode batch reached %u rows, want %u", max_rows, N);
    for (uint32_t i = 0; i < N; i++) {
        int32_t got[2][PREDICT];
        read_tokens(srv, id[i], got[0]);
        check_same(&alone[i], got, tmrt_server_logits(srv, id[i]), v.vocab, 1, i);
        free(alone[i].logits);
    }
    tmrt_server_stats st;
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK(st.sessions == N && st.active == N && st.suspended == 0 && st.busy == 0);
    CHECK(st.decode_tokens == N * (PREDICT - 1));
    /* misuse: unknown id, busy conversation, tokens out of range */
    tmrt_server_request rq = {0};
    int32_t bad = (int32_t)v.vocab;
    rq.tokens = &bad;
    rq.n_tokens = 1;
    CHECK_ST(tmrt_server_submit(srv, id[0], &rq, &e), TMEM_E_INVALID_ARG);
    CHECK_ST(tmrt_server_submit(srv, 12345, &rq, &e), TMEM_E_INVALID_ARG);
    CHECK_ST(tmrt_server_suspend(srv, id[0], &e), TMEM_E_UNSUPPORTED);
    uint32_t extra;
    CHECK_ST(tmrt_server_open(srv, &extra, &e), TMEM_E_FULL);
    tmrt_server_close(srv, id[1]);
    CHECK_ST(tmrt_server_read(srv, id[1], NULL, 0, &extra, NULL), TMEM_E_INVALID_ARG);
    tmrt_server_destroy(srv);
    CHECK_OK(tmem_context_check(v.ctx));
    env_close(&v);
}

static uint64_t dirty(tmem_context *ctx) {
    tmem_budget_info bi;
    return tmem_context_budget(ctx, &bi) == TMEM_OK ? bi.committed - bi.committed_clean : 0;
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Two turns each; between them every conversation is suspended (a fault
 * planted at each write step first, for session 1), then resumed by its
 * next request: the same bits as never suspended. */
static void test_suspend_resume(void) {
    outcome alone[N];
    for (uint32_t i = 0; i < N; i++) REQUIRE(run_alone(i, 2, &alone[i]));
    env v;
    REQUIRE(env_open(&v, 1ull << 30));
    tmrt_server *srv = server_new(&v, dir);
    REQUIRE(srv);
    uint32_t id[N], max_rows = 0;
    int32_t got[N][2][PREDICT];
    tmrt_error e;
    for (uint32_t i = 0; i < N; i++) REQUIRE_OK(tmrt_server_open(srv, &id[i], &e));
    for (uint32_t i = 0; i < N; i++) submit_turn(&v, srv, id[i], i, 0);
    run_until_idle(srv, &max_rows);
    for (uint32_t i = 0; i < N; i++) read_tokens(srv, id[i], got[i][0]);

    /* a fault at write step k: a clean error, the conversation still in memory, no file */
    char file[700], tmp[710];
    snprintf(file, sizeof file, "%s/session-1.tmrt", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    uint32_t faults = 0;
    for (int k = 0; k < 200; k++) {
        tmrt_testing_save_fault(k);
        tmem_status st = tmrt_server_suspend(srv, id[1], &e);
        tmrt_testing_save_fault(-1);
        if (st == TMEM_OK) break;
        faults++;
        CHECK_MSG(st == TMEM_E_OS, "fault at step %d: %s", k, tmem_status_name(st));
        CHECK_MSG(!file_exists(file) && !file_exists(tmp), "fault at step %d left a file", k);
        CHECK_MSG(tmrt_server_logits(srv, id[1]) != NULL, "fault at step %d: the conversation is gone", k);
    }
    CHECK_MSG(faults >= 6, "only %u write steps could fail", faults);
    CHECK(file_exists(file) && !file_exists(tmp));

    /* the others: their memory is given back */
    uint64_t before = dirty(v.ctx);
    for (uint32_t i = 0; i < N; i++)
        if (i != 1) CHECK_OK(tmrt_server_suspend(srv, id[i], &e));
    uint64_t after = dirty(v.ctx);
    CHECK_MSG(after < before, "suspending gave back nothing (%llu -> %llu)", (unsigned long long)before,
              (unsigned long long)after);
    tmrt_server_stats st;
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK(st.suspended == N && st.active == 0 && st.suspends == N);
    CHECK_ST(tmrt_server_suspend(srv, id[0], &e), TMEM_E_STATE);
    CHECK(tmrt_server_logits(srv, id[0]) == NULL);

    /* a corrupt file is refused and the conversation stays suspended */
    char f3[700];
    snprintf(f3, sizeof f3, "%s/session-3.tmrt", dir);
    FILE *f = fopen(f3, "r+b");
    REQUIRE(f);
    fseek(f, 100, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(c ^ 0x55, f);
    fclose(f);
    CHECK_ST(tmrt_server_resume(srv, id[3], &e), TMEM_E_CORRUPT);
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK(st.suspended == N);
    f = fopen(f3, "r+b");
    REQUIRE(f);
    fseek(f, 100, SEEK_SET);
    fputc(c, f);
    fclose(f);

    /* the second turn resumes them */
    for (uint32_t i = 0; i < N; i++) submit_turn(&v, srv, id[i], i, 1);
    CHECK(!file_exists(file));
    run_until_idle(srv, &max_rows);
    for (uint32_t i = 0; i < N; i++) {
        read_tokens(srv, id[i], got[i][1]);
        check_same(&alone[i], got[i], tmrt_server_logits(srv, id[i]), v.vocab, 2, i);
        free(alone[i].logits);
    }
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK(st.resumes == N && st.suspended == 0);
    tmrt_server_destroy(srv);
    CHECK_OK(tmem_context_check(v.ctx));
    env_close(&v);
}

/* A budget hit while one conversation grows suspends the idle ones. */
static void test_budget_suspends_idle(void) {
    outcome alone[N];
    for (uint32_t i = 0; i < N; i++) REQUIRE(run_alone(i, 2, &alone[i]));
    env v;
    REQUIRE(env_open(&v, 1ull << 30));
    tmrt_server *srv = server_new(&v, dir);
    REQUIRE(srv);
    uint32_t id[N], max_rows = 0;
    int32_t got[N][2][PREDICT];
    tmrt_error e;
    for (uint32_t i = 0; i < N; i++) REQUIRE_OK(tmrt_server_open(srv, &id[i], &e));
    for (uint32_t i = 0; i < N; i++) submit_turn(&v, srv, id[i], i, 0);
    run_until_idle(srv, &max_rows);
    for (uint32_t i = 0; i < N; i++) read_tokens(srv, id[i], got[i][0]);
    /* the budget at what is committed now: session 1's next turn needs more blocks */
    tmem_budget_info bi;
    REQUIRE_OK(tmem_context_budget(v.ctx, &bi));
    REQUIRE_OK(tmem_context_set_budget(v.ctx, bi.committed - bi.committed_clean + 4096));
    submit_turn(&v, srv, id[1], 1, 1);
    run_until_idle(srv, &max_rows);
    read_tokens(srv, id[1], got[1][1]);
    tmrt_server_stats st;
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK_MSG(st.suspends >= 1 && st.suspended >= 1, "%llu suspends under the budget",
              (unsigned long long)st.suspends);
    /* memory warning: every idle one goes */
    uint64_t freed;
    CHECK_OK(tmrt_server_reclaim(srv, UINT64_MAX, &freed));
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK(st.suspended == N);
    REQUIRE_OK(tmem_context_set_budget(v.ctx, 1ull << 30));
    for (uint32_t i = 0; i < N; i++)
        if (i != 1) submit_turn(&v, srv, id[i], i, 1);
    run_until_idle(srv, &max_rows);
    for (uint32_t i = 0; i < N; i++) {
        if (i != 1) read_tokens(srv, id[i], got[i][1]);
    }
    CHECK_OK(tmrt_server_resume(srv, id[1], &e));
    for (uint32_t i = 0; i < N; i++) {
        check_same(&alone[i], got[i], tmrt_server_logits(srv, id[i]), v.vocab, 2, i);
        free(alone[i].logits);
    }
    tmrt_server_destroy(srv);
    CHECK_OK(tmem_context_check(v.ctx));
    env_close(&v);
}

/* The context's pressure callback at WARNING: the next step suspends every idle one. */
static void test_pressure_suspends_idle(void) {
    env v;
    REQUIRE(env_open(&v, 1ull << 30));
    tmrt_server *srv = server_new_flags(&v, dir, TMRT_SERVER_SUSPEND_ON_PRESSURE | TMRT_SERVER_NO_RECLAIM);
    REQUIRE(srv);
    uint32_t id[N], max_rows = 0;
    int32_t got[PREDICT];
    tmrt_error e;
    for (uint32_t i = 0; i < N; i++) REQUIRE_OK(tmrt_server_open(srv, &id[i], &e));
    for (uint32_t i = 0; i < N; i++) submit_turn(&v, srv, id[i], i, 0);
    run_until_idle(srv, &max_rows);
    for (uint32_t i = 0; i < N; i++) read_tokens(srv, id[i], got);
    tmrt_server_stats st;
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK(st.suspends == 0);
    /* committed at 85% of the budget: WARNING (0.80) */
    tmem_budget_info bi;
    REQUIRE_OK(tmem_context_budget(v.ctx, &bi));
    REQUIRE_OK(tmem_context_set_budget(v.ctx, (bi.committed - bi.committed_clean) * 100 / 85));
    submit_turn(&v, srv, id[1], 1, 1);
    run_until_idle(srv, &max_rows);
    read_tokens(srv, id[1], got);
    tmrt_server_step_info si;
    CHECK_OK(tmrt_server_step(srv, &si, &e));
    CHECK_OK(tmrt_server_get_stats(srv, &st));
    CHECK_MSG(st.suspends >= N - 1, "%llu suspends under pressure", (unsigned long long)st.suspends);
    REQUIRE_OK(tmem_context_set_budget(v.ctx, 1ull << 30));
    tmrt_server_destroy(srv);
    CHECK_OK(tmem_context_check(v.ctx));
    env_close(&v);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    tiny_config c = tiny_config_a();
    if (!tiny_model_write(&c, path)) return 1;
    RUN(test_batched_equals_alone);
    RUN(test_suspend_resume);
    RUN(test_budget_suspends_idle);
    RUN(test_pressure_suspends_idle);
    c = tiny_config_b();
    if (!tiny_model_write(&c, path)) return 1;
    RUN(test_batched_equals_alone);
    RUN(test_suspend_resume);
    remove(path);
    remove(dir);
    return tmem_test_finish();
}
