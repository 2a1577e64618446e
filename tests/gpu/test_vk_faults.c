/* The runtime's Vulkan compute layer under injected failures
 * (tmrt__vk_fault_set): every Vulkan call the layer makes to build its
 * pipelines and layouts, create a recorder (with its timestamp queries),
 * record (descriptor sets), end, submit, wait and read the timestamps fails
 * in turn; each gives a clean status and a message
 * naming the call, nothing runs half-recorded, and after the fault the same
 * context and recorder record and run correctly (checked on the results).
 * Device loss at the wait: TMEM_E_OS, "device lost", no crash, every later
 * submission refused. Under the validation layer (gpu/test_vk_faults_
 * validation) no object is leaked or misused on any of these paths.
 * Skips (77) without a Vulkan device. */
#include "vk_test_util.h"
#include "typedmem/model.h"

static vkt g;

/* A small graph: y = W x (F16), then RMS norm of y in place, then y += y. */
typedef struct graph {
    vkt_buf w, x, y;
} graph;

static bool graph_make(graph *gr) {
    if (!vkt_buf_new(&g, 64 * 64 * 2, &gr->w) || !vkt_buf_new(&g, 64 * 4, &gr->x) || !vkt_buf_new(&g, 64 * 4, &gr->y))
        return false;
    uint16_t *w = gr->w.host;
    for (int i = 0; i < 64 * 64; i++) w[i] = i % 65 == 0 ? 0x3C00 : 0; /* identity in f16 */
    for (int i = 0; i < 64; i++) ((float *)gr->x.host)[i] = (float)(i + 1);
    return true;
}

static void graph_free(graph *gr) {
    vkt_buf_free(&g, &gr->w), vkt_buf_free(&g, &gr->x), vkt_buf_free(&g, &gr->y);
}

/* Timestamp slots of the sweep's recorders (0 where the queue has none). */
static uint32_t g_ts;

static tmem_status graph_record(tmrt_vk_rec *rec, graph *gr) {
    tmem_status st = tmrt__vk_begin(rec);
    if (st != TMEM_OK) return st;
    if (g_ts) tmrt__vk_timestamp(rec, 0);
    tmrt_vk_matmul m = {{gr->w.b, TMEM_GGML_F16, 64, 64, 128}, gr->x.b, gr->y.b, {0}, 0, 0, 1, 0, NULL};
    tmrt__vk_matmul(rec, &m);
    tmrt__vk_barrier(rec);
    tmrt_vk_rmsnorm r = {0};
    r.x = r.out = gr->y.b, r.eps = 1e-6f, r.n = 64, r.n_tok = 1, r.n_head = 1;
    tmrt__vk_rmsnorm(rec, &r);
    tmrt__vk_barrier(rec);
    tmrt__vk_add(rec, gr->y.b, gr->y.b, gr->y.b, 64);
    if (g_ts) tmrt__vk_timestamp(rec, 1);
    tmrt__vk_barrier_host(rec);
    st = tmrt__vk_run(rec);
    double ns[2];
    if (st == TMEM_OK && g_ts) st = tmrt__vk_timestamps(rec, ns, 2);
    return st;
}

static bool graph_right(const graph *gr) {
    double ss = 0;
    for (int i = 0; i < 64; i++) ss += (double)(i + 1) * (i + 1);
    double inv = 1 / sqrt(ss / 64 + 1e-6);
    for (int i = 0; i < 64; i++)
        if (fabs(((float *)gr->y.host)[i] - 2 * (i + 1) * inv) > 1e-5) return false;
    return true;
}

/* Fail call n of a fresh context's first run (pipelines, layouts, the
 * recorder, the recording, the submission), then run again disarmed. */
static void test_sweep(void) {
    graph gr;
    REQUIRE(graph_make(&gr));
    /* disarmed: how many calls the whole path makes */
    tmrt_vk *vk;
    tmrt_vk_rec *rec;
    char err[256];
    REQUIRE_OK(tmrt__vk_create(g.gpu, NULL, &vk, err, sizeof err));
    g_ts = tmrt__vk_limits(vk)->timestamps ? 2 : 0; /* the query pool and its results in the path */
    tmrt_vk_rec_desc rd = {.max_timestamps = g_ts};
    uint64_t c0 = tmrt__vk_calls(vk);
    REQUIRE_OK(tmrt__vk_rec_create(vk, &rd, &rec));
    REQUIRE_OK(graph_record(rec, &gr));
    CHECK(graph_right(&gr));
    uint64_t n = tmrt__vk_calls(vk) - c0;
    tmrt__vk_rec_destroy(rec);
    tmrt__vk_destroy(vk);
    printf("the path makes %llu Vulkan calls that can fail\n", (unsigned long long)n);
    CHECK(n >= 15);
    static const VkResult kinds[2] = {VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_OUT_OF_DEVICE_MEMORY};
    for (uint64_t i = 1; i <= n; i++) {
        REQUIRE_OK(tmrt__vk_create(g.gpu, NULL, &vk, err, sizeof err));
        memset(gr.y.host, 0, 256);
        tmrt__vk_fault_set(vk, (int64_t)i, kinds[i % 2]);
        tmem_status st = tmrt__vk_rec_create(vk, &rd, &rec);
        if (st == TMEM_OK) {
            st = graph_record(rec, &gr);
            CHECK_MSG(st == TMEM_E_NO_MEMORY, "fault at call %llu: %s (%s)", (unsigned long long)i,
                      tmem_status_name(st), tmrt__vk_rec_error(rec));
            CHECK_MSG(tmrt__vk_rec_error(rec)[0] != 0, "fault at call %llu: no message", (unsigned long long)i);
            /* disarmed: the same recorder records and runs right */
            tmrt__vk_fault_set(vk, 0, VK_SUCCESS);
            memset(gr.y.host, 0, 256);
            CHECK_OK(graph_record(rec, &gr));
            CHECK_MSG(graph_right(&gr), "after the fault at call %llu", (unsigned long long)i);
            tmrt__vk_rec_destroy(rec);
        } else {
            CHECK_MSG(st == TMEM_E_NO_MEMORY, "recorder create, fault at %llu: %s", (unsigned long long)i,
                      tmem_status_name(st));
        }
        tmrt__vk_destroy(vk);
    }
    g_ts = 0;
    graph_free(&gr);
}

/* Device loss reported by the wait: an error, never a crash; the context
 * then refuses to submit; destroying it is clean. */
static void test_device_lost(void) {
    graph gr;
    REQUIRE(graph_make(&gr));
    tmrt_vk *vk;
    tmrt_vk_rec *rec;
    char err[256];
    REQUIRE_OK(tmrt__vk_create(g.gpu, NULL, &vk, err, sizeof err));
    REQUIRE_OK(tmrt__vk_rec_create(vk, NULL, &rec));
    REQUIRE_OK(graph_record(rec, &gr)); /* pipelines built */
    REQUIRE_OK(tmrt__vk_begin(rec));
    tmrt_vk_matmul m = {{gr.w.b, TMEM_GGML_F16, 64, 64, 128}, gr.x.b, gr.y.b, {0}, 0, 0, 1, 0, NULL};
    CHECK_OK(tmrt__vk_matmul(rec, &m));
    CHECK_OK(tmrt__vk_end(rec));
    CHECK_OK(tmrt__vk_submit(rec));
    tmrt__vk_fault_set(vk, 1, VK_ERROR_DEVICE_LOST);
    CHECK_ST(tmrt__vk_wait(rec, UINT64_MAX), TMEM_E_OS);
    CHECK(strstr(tmrt__vk_rec_error(rec), "device lost") != NULL);
    CHECK(tmrt__vk_lost(vk));
    CHECK_ST(tmrt__vk_submit(rec), TMEM_E_OS);
    CHECK_ST(tmrt__vk_begin(rec), TMEM_E_OS);
    CHECK(strstr(tmrt__vk_rec_error(rec), "lost") != NULL);
    tmrt__vk_rec_destroy(rec);
    tmrt__vk_destroy(vk);
    graph_free(&gr);
}

/* Misuse: the recorder's state machine and bad bindings give statuses and
 * record nothing. */
static void test_misuse(void) {
    graph gr;
    REQUIRE(graph_make(&gr));
    tmrt_vk_rec *rec = g.rec;
    CHECK_ST(tmrt__vk_create(NULL, NULL, NULL, NULL, 0), TMEM_E_INVALID_ARG);
    tmrt_vk *vk2 = (tmrt_vk *)1;
    CHECK_ST(tmrt__vk_create(g.gpu, &(tmrt_vk_desc){.flags = 0x80}, &vk2, NULL, 0), TMEM_E_INVALID_ARG);
    CHECK(vk2 == NULL);
    REQUIRE_OK(tmrt__vk_begin(rec));
    CHECK_ST(tmrt__vk_submit(rec), TMEM_E_STATE); /* not ended */
    tmrt_vk_buf bad = gr.x.b;
    bad.offset = 4; /* below the storage alignment */
    CHECK_ST(tmrt__vk_add(rec, bad, gr.x.b, gr.y.b, 16), TMEM_E_INVALID_ARG);
    CHECK(tmrt__vk_rec_dispatches(rec) == 0);
    CHECK_ST(tmrt__vk_add(rec, gr.x.b, gr.x.b, gr.y.b, 16), TMEM_E_INVALID_ARG); /* sticky */
    CHECK_ST(tmrt__vk_end(rec), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmrt__vk_begin(rec)); /* begin clears it */
    tmrt_vk_buf small = gr.x.b;
    small.range = 16;
    CHECK_ST(tmrt__vk_add(rec, small, gr.x.b, gr.y.b, 64), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmrt__vk_begin(rec));
    CHECK_OK(tmrt__vk_add(rec, gr.x.b, gr.x.b, gr.y.b, 64));
    tmrt__vk_barrier(rec);
    tmrt__vk_barrier(rec); /* two in a row: one */
    CHECK(tmrt__vk_rec_barriers(rec) == 1);
    CHECK_OK(tmrt__vk_run(rec));
    CHECK(((float *)gr.y.host)[63] == 128.0f);
    CHECK_OK(tmrt__vk_submit(rec)); /* a recording runs again */
    CHECK_OK(tmrt__vk_wait(rec, UINT64_MAX));
    tmrt__vk_add(rec, gr.x.b, gr.x.b, gr.y.b, 64); /* after end: refused */
    CHECK_ST(tmrt__vk_rec_status(rec), TMEM_E_STATE);
    /* a recorder too small for the graph */
    tmrt_vk_rec *tiny;
    REQUIRE_OK(tmrt__vk_rec_create(g.vk, &(tmrt_vk_rec_desc){.max_dispatches = 1}, &tiny));
    REQUIRE_OK(tmrt__vk_begin(tiny));
    CHECK_OK(tmrt__vk_add(tiny, gr.x.b, gr.x.b, gr.y.b, 64));
    CHECK_ST(tmrt__vk_add(tiny, gr.x.b, gr.x.b, gr.y.b, 64), TMEM_E_FULL);
    tmrt__vk_rec_destroy(tiny);
    graph_free(&gr);
}

/* Timestamps: slots in order, non-decreasing after a run. */
static void test_timestamps(void) {
    if (!tmrt__vk_limits(g.vk)->timestamps) {
        tmem_test_skip_part("the queue writes no timestamps");
        return;
    }
    graph gr;
    REQUIRE(graph_make(&gr));
    tmrt_vk_rec *rec;
    REQUIRE_OK(tmrt__vk_rec_create(g.vk, &(tmrt_vk_rec_desc){.max_timestamps = 3}, &rec));
    REQUIRE_OK(tmrt__vk_begin(rec));
    tmrt__vk_timestamp(rec, 0);
    tmrt__vk_add(rec, gr.x.b, gr.x.b, gr.y.b, 64);
    tmrt__vk_timestamp(rec, 1);
    tmrt__vk_add(rec, gr.x.b, gr.x.b, gr.y.b, 64);
    tmrt__vk_timestamp(rec, 2);
    tmrt__vk_timestamp(rec, 3); /* past the slots */
    CHECK_ST(tmrt__vk_rec_status(rec), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmrt__vk_begin(rec));
    double ns[3];
    for (uint32_t i = 0; i < 3; i++) {
        tmrt__vk_timestamp(rec, i);
        tmrt__vk_add(rec, gr.x.b, gr.x.b, gr.y.b, 64);
    }
    CHECK_OK(tmrt__vk_run(rec));
    CHECK_OK(tmrt__vk_timestamps(rec, ns, 3));
    CHECK(ns[0] == 0 && ns[1] >= ns[0] && ns[2] >= ns[1]);
    tmrt__vk_rec_destroy(rec);
    graph_free(&gr);
}

int main(void) {
    if (!vkt_open(&g, NULL)) tmem_test_skip("no Vulkan device");
    RUN(test_sweep);
    RUN(test_device_lost);
    RUN(test_misuse);
    RUN(test_timestamps);
    vkt_close(&g);
    return tmem_test_finish();
}
