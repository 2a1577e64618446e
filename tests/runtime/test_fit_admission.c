/* Issue 21 item 3, as a property: the fit and the admission are one
 * arithmetic, and it holds.
 *
 * Over models (two tiny shapes made with `tmem gen`, plus any GGUF named in
 * TMEM_FIT_MODELS, colon-separated: the 0.8B shape in docs/benchmarks.md),
 * contexts, prefill chunks, prompt texts and budgets, drawn from a fixed
 * seed (TMEM_SEED replays):
 *
 *  - API: a context with the budget, the model and the tokenizer (its
 *    scratch sized for the text) in it, tmrt_session_admit. Admitted: the
 *    text encodes, tmrt_session_create succeeds, a prefill of at least one
 *    chunk and a decode step run, the context's committed dirty bytes equal
 *    tmrt_session_fit for the tokens held (less what the tokenizer's
 *    on-demand scratch gave back) and never pass the budget.
 *    Refused (TMEM_E_BUDGET): tmrt_session_create refuses too and commits
 *    nothing; its largest context, when there is one, is admitted at the
 *    same budget and runs.
 *  - CLI: `tmem fit --gguf` and `tmem run` with the same request and budget:
 *    fit's total_dirty is run's predicted_dirty_ctx byte for byte; fit FITS
 *    <=> run exits 0; DOES NOT FIT <=> run exits 3 up front, and the
 *    `--ctx N` it suggests runs at the same budget (exit 0).
 *
 * Verdicts compare typed accounting and limits, never timings: they do not
 * depend on the machine's load. (The OS-measured peak against the
 * prediction is in docs/benchmarks.md: it includes the process's own
 * malloc'd metadata.) Skips (77) without the tmem tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "harness.h"
#include "tmemrt/runtime.h"
#include "tmemrt/tokenizer.h"
#include "typedmem/typedmem.h"

#define MAX_MODELS 6
#define TEXT_CAP 1200

static const char *tool;
static char dir[400];
static char models[MAX_MODELS][600];
static uint32_t n_models;
static char text[TEXT_CAP + 1];

static int sh(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = out ? fread(out, 1, cap - 1, p) : 0;
    if (out) out[n] = 0;
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A number after "key": in a JSON text, -1 if absent. */
static double json_num(const char *json, const char *key) {
    char k[96];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    return p ? strtod(p + strlen(k), NULL) : -1;
}

static bool json_true(const char *json, const char *key) {
    char k[96];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    if (!p) return false;
    p += strlen(k);
    while (*p == ' ') p++;
    return !strncmp(p, "true", 4);
}

/* Dirty bytes committed in the context now and at its peak (clean file pages out). */
static void committed(tmem_context *ctx, uint64_t *now, uint64_t *peak) {
    uint64_t clean = 0;
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_stats ts;
        if (tmem_type_at(ctx, i, &t) == TMEM_OK && tmem_type_get_stats(t, &ts) == TMEM_OK) clean += ts.clean;
    }
    tmem_budget_info bi;
    *now = *peak = 0;
    if (tmem_context_budget(ctx, &bi) != TMEM_OK) return;
    *now = bi.committed - clean;
    *peak = bi.peak_committed - clean;
}

typedef struct request {
    uint32_t n_ctx, chunk, n_prompt;
    uint64_t budget;
    size_t text_len;   /* 0: token ids only (as --tokens) */
    bool chat, desc_budget;
} request;

/* One run through the API: 1 admitted and ran, 0 refused (and refused by
 * create), -1 failed a check. *max_ctx: the refusal's suggestion. */
static int api_run(const char *path, const request *rq, uint64_t *max_ctx) {
    *max_ctx = 0;
    tmem_context *ctx = NULL;
    tmrt_model *m = NULL;
    tmrt_tokenizer *tok = NULL;
    tmrt_session *s = NULL;
    int verdict = -1;
    tmem_context_desc cd = {0};
    cd.budget = rq->budget;
    tmrt_error e = {""};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return -1;
    tmrt_model_desc md = {0};
    md.path = path;
    tmem_status st = tmrt_model_open(ctx, &md, &m, &e);
    CHECK_MSG(st == TMEM_OK, "%s: %s", path, e.message);
    if (st) goto out;
    tmrt_tokenizer_desc tkd = {0};
    tkd.flags = TMRT_TOKENIZER_SCRATCH_EXACT;
    tkd.scratch_bytes = tmrt_tokenizer_scratch_bytes(rq->text_len, rq->chat);
    tmrt_session_desc sd = {0};
    sd.n_ctx = rq->n_ctx;
    sd.chunk = rq->chunk;
    sd.budget = rq->desc_budget ? rq->budget : 0;
    st = tmrt_tokenizer_memory_bytes(ctx, tmrt_model_gguf(m), &tkd, &sd.tokenizer_bytes, &e);
    CHECK_MSG(st == TMEM_OK, "tokenizer bytes: %s", e.message);
    if (st) goto out;
    tmrt_session_info adm;
    tmem_status ad = tmrt_session_admit(m, &sd, &adm, &e);
    CHECK_MSG(ad == TMEM_OK || ad == TMEM_E_BUDGET, "admit: %s (%s)", tmem_status_name(ad), e.message);
    CHECK(tmem_fit_bytes(&adm.fit, TMEM_FIT_ITEM_TOKENIZER) == sd.tokenizer_bytes);
    /* the tokenizer first, as tmem run does: it shares the budget */
    st = tmrt_tokenizer_load_ex(ctx, tmrt_model_gguf(m), &tkd, &tok, &e);
    if (st != TMEM_OK) {
        /* only a budget too small for the tokenizer alone, which the admission refuses too */
        CHECK_MSG((st == TMEM_E_BUDGET || st == TMEM_E_FULL) && ad == TMEM_E_BUDGET,
                  "tokenizer load: %s (%s) with admission %s", tmem_status_name(st), e.message, tmem_status_name(ad));
        verdict = 0;
        *max_ctx = adm.fit.max_ctx_tokens;
        goto out;
    }
    uint64_t now0, peak0;
    committed(ctx, &now0, &peak0);
    tmrt_session_info info;
    st = tmrt_session_create(m, &sd, &s, &info, &e);
    if (ad == TMEM_E_BUDGET) {
        CHECK_MSG(st == TMEM_E_BUDGET && !s, "refused by admission, create says %s", tmem_status_name(st));
        uint64_t now1, peak1;
        committed(ctx, &now1, &peak1);
        CHECK_MSG(now1 == now0, "a refused create left %llu bytes", (unsigned long long)(now1 - now0));
        CHECK(info.fit.total_dirty == adm.fit.total_dirty && info.fit.max_ctx_tokens == adm.fit.max_ctx_tokens);
        *max_ctx = adm.fit.max_ctx_tokens;
        verdict = 0;
        goto out;
    }
    CHECK_MSG(st == TMEM_OK, "admitted (%llu of %llu bytes) but create failed: %s (%s)",
              (unsigned long long)adm.fit.total_dirty, (unsigned long long)rq->budget, tmem_status_name(st),
              e.message);
    if (st) goto out;
    CHECK(info.chunk == adm.chunk && info.fit.total_dirty == adm.fit.total_dirty);
    /* the text (its scratch was counted), then a prefill of at least one chunk and a decode step */
    static int32_t ids[4096];
    size_t n_ids = 0;
    if (rq->text_len) {
        st = rq->chat ? tmrt_tokenizer_chat(tok, NULL, text, rq->text_len, 0, ids, 4096, &n_ids)
                      : tmrt_tokenizer_encode(tok, text, rq->text_len, 0, ids, 4096, &n_ids);
        CHECK_MSG(st == TMEM_OK || st == TMEM_E_FULL, "encode %zu bytes: %s", rq->text_len, tmem_status_name(st));
        if (st != TMEM_OK && st != TMEM_E_FULL) goto out;
    }
    uint32_t n_vocab = tmrt_model_hparams(m)->n_vocab;
    for (uint32_t i = 0; i < rq->n_prompt; i++) ids[i] = (int32_t)((i < n_ids ? (uint32_t)ids[i] : i * 7 + 1) % n_vocab);
    tmrt_batch b = {0};
    b.tokens = ids;
    b.n_tokens = rq->n_prompt;
    b.logits = TMRT_LOGITS_LAST;
    st = tmrt_session_eval(s, &b, NULL, NULL, &e);
    CHECK_MSG(st == TMEM_OK, "prefill of %u at chunk %u: %s", rq->n_prompt, info.chunk, e.message);
    tmrt_sampler sp;
    tmrt_sampler_desc spd = {0};
    tmrt_sampler_init(&sp, &spd);
    int32_t next = 0;
    if (st == TMEM_OK) st = tmrt_session_sample(s, &sp, &next);
    b.tokens = &next;
    b.n_tokens = 1;
    if (st == TMEM_OK) st = tmrt_session_eval(s, &b, NULL, NULL, &e);
    CHECK_MSG(st == TMEM_OK, "decode: %s", e.message);
    if (st) goto out;
    uint64_t now, peak;
    committed(ctx, &now, &peak);
    tmem_fit_result used;
    st = tmrt_session_fit(s, rq->n_prompt + 1, &used);
    CHECK(st == TMEM_OK);
    if (st) goto out;
    /* every line is what its heap holds committed, but the tokenizer's
     * scratch, which commits on demand and gives back what the encode freed */
    CHECK_MSG(now <= used.total_dirty && now + tkd.scratch_bytes >= used.total_dirty,
              "committed %llu, the fit for %u tokens %llu (tokenizer scratch %llu)", (unsigned long long)now,
              rq->n_prompt + 1, (unsigned long long)used.total_dirty, (unsigned long long)tkd.scratch_bytes);
    if (!tkd.scratch_bytes)
        CHECK_MSG(now == used.total_dirty, "committed %llu, the fit %llu", (unsigned long long)now,
                  (unsigned long long)used.total_dirty);
    CHECK_MSG(peak <= info.fit.total_dirty && peak <= rq->budget, "peak %llu, admitted %llu, budget %llu",
              (unsigned long long)peak, (unsigned long long)info.fit.total_dirty, (unsigned long long)rq->budget);
    verdict = 1;
out:
    tmrt_session_destroy(s);
    tmrt_tokenizer_destroy(tok);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
    return verdict;
}

/* The admitted dirty bytes of a request with an unlimited budget (the scale budgets are drawn around). */
static uint64_t need(const char *path, const request *rq) {
    request r = *rq;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 0;
    tmrt_model *m;
    tmrt_model_desc md = {0};
    md.path = path;
    tmrt_error e;
    uint64_t total = 0;
    if (tmrt_model_open(ctx, &md, &m, &e) == TMEM_OK) {
        tmrt_tokenizer_desc tkd = {0};
        tkd.flags = TMRT_TOKENIZER_SCRATCH_EXACT;
        tkd.scratch_bytes = tmrt_tokenizer_scratch_bytes(r.text_len, r.chat);
        tmrt_session_desc sd = {0};
        sd.n_ctx = r.n_ctx;
        sd.chunk = r.chunk;
        sd.budget = UINT64_MAX / 4;
        tmrt_session_info si;
        if (tmrt_tokenizer_memory_bytes(ctx, tmrt_model_gguf(m), &tkd, &sd.tokenizer_bytes, &e) == TMEM_OK &&
            tmrt_session_admit(m, &sd, &si, &e) == TMEM_OK)
            total = si.fit.total_dirty;
        tmrt_model_close(m);
    }
    tmem_context_destroy(ctx);
    return total;
}

static uint32_t train_ctx(const char *path) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    uint32_t n = 0;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 0;
    tmrt_model *m;
    tmrt_model_desc md = {0};
    md.path = path;
    tmrt_error e;
    if (tmrt_model_open(ctx, &md, &m, &e) == TMEM_OK) {
        n = tmrt_model_hparams(m)->n_ctx_train;
        tmrt_model_close(m);
    }
    tmem_context_destroy(ctx);
    return n ? n : 4096;
}

/* A request drawn around the model: contexts up to its trained length,
 * chunks from 1 (the odd ones issue 21 measured) to 96, budgets from 0.6 to
 * 1.4 times the need, plus the need itself and one byte less. */
static request draw(tmem_rng *r, const char *path, uint32_t n_train, uint32_t k) {
    request q = {0};
    static const uint32_t ctxs[] = {17, 64, 255, 256, 1000, 4096};
    q.n_ctx = ctxs[tmem_rng_range(r, 0, 5)];
    if (q.n_ctx > n_train) q.n_ctx = n_train;
    static const uint32_t chunks[] = {1, 2, 3, 5, 7, 16, 31, 64, 96};
    q.chunk = chunks[tmem_rng_range(r, 0, 8)];
    if (q.chunk > q.n_ctx - 1) q.chunk = q.n_ctx - 1;
    q.n_prompt = q.chunk + (uint32_t)tmem_rng_range(r, 0, 3);
    if (q.n_prompt > q.n_ctx - 1) q.n_prompt = q.n_ctx - 1;
    uint32_t t = (uint32_t)tmem_rng_range(r, 0, 3);
    q.text_len = t == 0 ? 0 : t == 1 ? tmem_rng_range(r, 1, 200) : tmem_rng_range(r, 257, TEXT_CAP);
    q.chat = tmem_rng_range(r, 0, 3) == 0;
    q.desc_budget = tmem_rng_range(r, 0, 1);
    uint64_t n = need(path, &q);
    q.budget = k % 7 == 0 ? n : k % 7 == 1 ? n - 1 : n * tmem_rng_range(r, 60, 140) / 100;
    if (q.budget < 4096) q.budget = 4096;
    return q;
}

static void test_api(tmem_rng *rng, uint32_t per_model) {
    for (uint32_t mi = 0; mi < n_models; mi++) {
        uint32_t n_train = train_ctx(models[mi]), admitted = 0, refused = 0;
        for (uint32_t k = 0; k < per_model; k++) {
            request q = draw(rng, models[mi], n_train, k);
            uint64_t max_ctx;
            int v = api_run(models[mi], &q, &max_ctx);
            if (v < 0) {
                printf("FAILED case: model %s ctx %u chunk %u prompt %u text %zu%s budget %llu\n", models[mi],
                       q.n_ctx, q.chunk, q.n_prompt, q.text_len, q.chat ? " chat" : "",
                       (unsigned long long)q.budget);
                continue;
            }
            if (v == 1) {
                admitted++;
                if (k % 7 == 0) CHECK_MSG(v == 1, "a budget of exactly the need must be admitted");
                continue;
            }
            refused++;
            CHECK_MSG(k % 7 != 0, "refused at a budget of exactly its need: ctx %u chunk %u", q.n_ctx, q.chunk);
            if (!max_ctx) continue;
            /* the suggestion: the largest context at the same budget (and chunk) */
            request s = q;
            s.n_ctx = (uint32_t)max_ctx;
            if (s.n_prompt > s.n_ctx - 1) s.n_prompt = s.n_ctx - 1;
            uint64_t again;
            int v2 = api_run(models[mi], &s, &again);
            CHECK_MSG(v2 == 1, "the suggested ctx %u at budget %llu (chunk %u) was %s", s.n_ctx,
                      (unsigned long long)q.budget, q.chunk, v2 == 0 ? "refused" : "a failure");
        }
        printf("api %s: %u cases, %u admitted and ran, %u refused\n", models[mi], per_model, admitted, refused);
        CHECK(admitted > 0 && refused > 0);
    }
}

/* tmem fit --gguf and tmem run with the same request. */
static void test_cli(tmem_rng *rng, uint32_t per_model) {
    static char out[1 << 16], cmd[4096], toks[2048];
    for (uint32_t mi = 0; mi < n_models; mi++) {
        uint32_t n_train = train_ctx(models[mi]), agree = 0;
        for (uint32_t k = 0; k < per_model; k++) {
            request q = draw(rng, models[mi], n_train, k);
            size_t o = 0;
            for (uint32_t i = 0; i < q.n_prompt && o + 8 < sizeof toks; i++)
                o += (size_t)snprintf(toks + o, sizeof toks - o, "%s%u", i ? "," : "", 1 + i % 50);
            snprintf(cmd, sizeof cmd, "'%s' fit --gguf '%s' --ctx %u --chunk %u --budget %lluB --json 2>&1", tool,
                     models[mi], q.n_ctx, q.chunk, (unsigned long long)q.budget);
            int frc = sh(cmd, out, sizeof out);
            bool fits = json_true(out, "fits");
            double fit_dirty = json_num(out, "total_dirty");
            CHECK_MSG((frc == 0 && fits) || (frc == 3 && !fits), "fit: exit %d, %.300s", frc, out);
            CHECK_MSG(strstr(out, "\"source\":\"runtime\""), "fit did not use the runtime's admission: %.200s", out);
            snprintf(cmd, sizeof cmd, "'%s' run '%s' --tokens %s -n 1 --ctx %u --chunk %u --budget %lluB --json 2>&1",
                     tool, models[mi], toks, q.n_ctx, q.chunk, (unsigned long long)q.budget);
            int rrc = sh(cmd, out, sizeof out);
            CHECK_MSG(rrc == (fits ? 0 : 3), "fit says %s at ctx %u chunk %u budget %llu, run exits %d: %.300s",
                      fits ? "FITS" : "DOES NOT FIT", q.n_ctx, q.chunk, (unsigned long long)q.budget, rrc, out);
            if (rrc == 0) {
                double pred = json_num(out, "predicted_dirty_ctx");
                CHECK_MSG(pred == fit_dirty, "run predicted %.0f, fit said %.0f", pred, fit_dirty);
                agree++;
                continue;
            }
            if (rrc != 3) continue;
            CHECK_MSG(json_num(out, "total_dirty") == fit_dirty, "refusal %.0f, fit %.0f",
                      json_num(out, "total_dirty"), fit_dirty);
            double sug = json_num(out, "max_ctx_tokens");
            agree++;
            if (sug <= 0) continue;
            uint32_t n_prompt = q.n_prompt < (uint32_t)sug ? q.n_prompt : (uint32_t)sug - 1;
            o = 0;
            for (uint32_t i = 0; i < n_prompt && o + 8 < sizeof toks; i++)
                o += (size_t)snprintf(toks + o, sizeof toks - o, "%s%u", i ? "," : "", 1 + i % 50);
            snprintf(cmd, sizeof cmd,
                     "'%s' run '%s' --tokens %s -n 1 --ctx %.0f --chunk %u --budget %lluB --json > /dev/null 2>&1",
                     tool, models[mi], toks, sug, q.chunk, (unsigned long long)q.budget);
            int src = sh(cmd, NULL, 0);
            CHECK_MSG(src == 0, "the suggested --ctx %.0f at budget %llu exits %d", sug, (unsigned long long)q.budget,
                      src);
        }
        printf("cli %s: %u cases, fit and run agreed on %u\n", models[mi], per_model, agree);
    }
}

int main(void) {
    tool = getenv("TMEM_TOOL");
    if (!tool) {
        printf("SKIP: TMEM_TOOL is not set (run through ctest)\n");
        return 77;
    }
    if (!tmem_test_tmpdir(dir, sizeof dir)) {
        CHECK(!"no temporary directory");
        return tmem_test_finish();
    }
    /* the tiny preset (1 attention + 3 DeltaNet layers) and a wider shape with 2 attention layers */
    const char *shapes[] = {"--preset tiny", "--preset tiny --layers 6 --interval 3 --embd 128 --vocab 1024"};
    for (uint32_t i = 0; i < 2; i++) {
        char cmd[1400];
        snprintf(models[n_models], sizeof models[0], "%s/m%u.gguf", dir, i);
        snprintf(cmd, sizeof cmd, "'%s' gen %s '%s' 2>&1", tool, shapes[i], models[n_models]);
        char out[2048];
        int rc = sh(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "gen: %.400s", out);
        if (rc == 0) n_models++;
    }
    const char *extra = getenv("TMEM_FIT_MODELS");
    for (const char *p = extra; p && *p && n_models < MAX_MODELS;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n && n < sizeof models[0]) {
            memcpy(models[n_models], p, n);
            models[n_models++][n] = 0;
        }
        p = c ? c + 1 : p + n;
    }
    /* a text with long pieces (a run of letters), spaces and punctuation */
    for (uint32_t i = 0; i < TEXT_CAP; i++) text[i] = i < 700 ? (char)('a' + i % 26) : " ,.xyz"[i % 6];
    tmem_rng rng;
    tmem_rng_init(&rng, tmem_test_seed(21));
    const char *cases = getenv("TMEM_FIT_CASES");
    uint32_t per = cases ? (uint32_t)strtoul(cases, NULL, 10) : 40;
    test_api(&rng, per);
    test_cli(&rng, per / 2);
    for (uint32_t i = 0; i < 2; i++) remove(models[i]);
    remove(dir);
    return tmem_test_finish();
}
