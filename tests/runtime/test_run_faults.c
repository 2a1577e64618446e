/* The OS-layer fault sweep applied to a whole run of the runtime: context,
 * model open (the GGUF mapped into the FILE type), session (planned arenas,
 * paged KV cache, state slots, scratch, thread pool), a chunked prefill, a
 * few decoded tokens, a snapshot and a rollback, then everything destroyed.
 * Every OS call the run makes fails in turn, once and persistently, with
 * ENOMEM and then EIO: each run must end in a clean error (no crash, no
 * abort), leave no mapping or fd behind (LeakSanitizer covers the heap under
 * make test-asan), and the model file must be byte for byte what it was. */
#include "harness.h"
#include "tmemrt/runtime.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_state {
    const char *model;
    uint32_t threads;
    tmem_context *ctx;
    tmrt_model *m;
    tmrt_session *s;
    float first_logit;      /* of the undisturbed run, for the last check */
    bool have_first;
} run_state;

static tmem_status whole_run(void *u) {
    run_state *r = u;
    tmem_context_desc cd = {0};
    cd.budget = 256ull << 20;
    tmem_status st = tmem_context_create(&cd, &r->ctx);
    if (st) return st;
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = r->model;
    md.memory = TMRT_MEMORY_TYPED;
    if ((st = tmrt_model_open(r->ctx, &md, &r->m, &e))) return st;
    tmrt_session_desc sd = {0};
    sd.n_ctx = 64;
    sd.chunk = 8;
    sd.threads = r->threads;
    tmrt_session_info info;
    if ((st = tmrt_session_create(r->m, &sd, &r->s, &info, &e))) return st;
    int32_t prompt[20];
    for (int i = 0; i < 20; i++) prompt[i] = (i * 37 + 5) % 500;
    tmrt_batch b = {0};
    b.tokens = prompt;
    b.n_tokens = 20;
    b.logits = TMRT_LOGITS_LAST;
    if ((st = tmrt_session_eval(r->s, &b, NULL, NULL, &e))) return st;
    if ((st = tmrt_session_snapshot(r->s))) return st;
    tmrt_sampler_desc spd = {0};
    tmrt_sampler sp;
    tmrt_sampler_init(&sp, &spd);
    for (int i = 0; i < 3; i++) {
        int32_t next;
        if ((st = tmrt_session_sample(r->s, &sp, &next))) return st;
        tmrt_batch one = {0};
        one.tokens = &next;
        one.n_tokens = 1;
        one.logits = TMRT_LOGITS_LAST;
        if ((st = tmrt_session_eval(r->s, &one, NULL, NULL, &e))) return st;
    }
    if ((st = tmrt_session_rollback(r->s, 20))) return st;
    const float *lg = tmrt_session_logits(r->s);
    if (lg && !r->have_first) {
        r->first_logit = lg[0];
        r->have_first = true;
    }
    return TMEM_OK;
}

static void teardown(void *u) {
    run_state *r = u;
    tmrt_session_destroy(r->s);
    tmrt_model_close(r->m);
    tmem_context_destroy(r->ctx);
    r->s = NULL;
    r->m = NULL;
    r->ctx = NULL;
}

static uint64_t checksum(const char *path, uint64_t *size) {
    FILE *f = fopen(path, "rb");
    uint64_t h = 1469598103934665603ull;
    *size = 0;
    if (!f) return 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        h = (h ^ (uint64_t)c) * 1099511628211ull;
        (*size)++;
    }
    fclose(f);
    return h;
}

static void sweep(const char *model, uint32_t threads, int err) {
    uint64_t size0, size1;
    uint64_t sum0 = checksum(model, &size0);
    run_state r = {model, threads, NULL, NULL, NULL, 0, false};
    char label[96];
    snprintf(label, sizeof label, "tmem run (%u thread%s, errno %d)", threads, threads == 1 ? "" : "s", err);
    tmem_test_sweep_desc d = {0};
    d.label = label;
    d.scenario = whole_run;
    d.cleanup = teardown;
    d.user = &r;
    d.err = err;
    /* Hints the runtime survives (advice, huge pages) are fenced benign in
     * the library; anything else must surface as an error. */
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    printf("   %s: %llu OS calls swept, once and persistently\n", label, (unsigned long long)n);
    CHECK(n > 10);
    uint64_t sum1 = checksum(model, &size1);
    CHECK_MSG(size1 == size0 && sum1 == sum0, "the model file changed (%llu -> %llu bytes)",
              (unsigned long long)size0, (unsigned long long)size1);
}

int main(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    char model[1024];
    snprintf(model, sizeof model, "%s/tests/data/llamacpp/qwen35-tiny-a-f32.gguf", src ? src : ".");
    FILE *f = fopen(model, "rb");
    if (!f) tmem_test_skip("tests/data/llamacpp/qwen35-tiny-a-f32.gguf absent");
    fclose(f);
    printf("-- sweep 1 thread ENOMEM\n");
    sweep(model, 1, ENOMEM);
    printf("-- sweep 2 threads ENOMEM\n");
    sweep(model, 2, ENOMEM);
    printf("-- sweep 1 thread EIO\n");
    sweep(model, 1, EIO);
    return tmem_test_finish();
}
