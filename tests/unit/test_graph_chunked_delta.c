/* The library's additions for the runtime: the CHUNKED_DELTA layer graph
 * (the delta rule one 64-token chunk at a time) and the fit's scratch line. */
#include <string.h>
#include "harness.h"
#include "typedmem/typedmem.h"

static const tmem_model_buffer *find(const tmem_model_buffer *b, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(b[i].name, name)) return &b[i];
    return NULL;
}

static void test_graph(void) {
    tmem_model_desc m;
    REQUIRE_OK(tmem_model_preset("qwen3.5-0.8b", &m));
    tmem_model_buffer all[64], per[64];
    uint32_t na, np;
    REQUIRE_OK(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_DELTANET, 512, 4096, 0, all, 64, &na));
    REQUIRE_OK(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_DELTANET, 512, 4096, TMEM_MODEL_GRAPH_CHUNKED_DELTA, per,
                                      64, &np));
    uint64_t Hv = m.ssm_time_step_rank, dv = m.ssm_inner_size / Hv;
    const tmem_model_buffer *dm = find(per, np, "decay_mask"), *u = find(per, np, "u"), *core = find(per, np, "core_out");
    const tmem_model_buffer *conv = find(per, np, "conv_out"), *dm_all = find(all, na, "decay_mask");
    REQUIRE(dm && u && core && conv && dm_all);
    CHECK(dm->size == Hv * 64 * 64 * 4);               /* one chunk of every head */
    CHECK(dm_all->size == Hv * 8 * 64 * 64 * 4);       /* all 8 chunks at once */
    CHECK(u->size == 64 * Hv * dv * 4 && core->size == 512 * Hv * dv * 4);
    /* the chunk loop is one step: its buffers, its inputs and its output are alive together */
    CHECK(dm->start == core->start && u->start == core->start);
    CHECK(conv->start < core->start && conv->end > core->start);
    uint64_t lb_all = 0, lb_per = 0;
    tmem_plan_problem *p[2];
    for (int k = 0; k < 2; k++) {
        REQUIRE_OK(tmem_plan_problem_create(&p[k]));
        const tmem_model_buffer *b = k ? per : all;
        for (uint32_t i = 0; i < (k ? np : na); i++) {
            tmem_plan_buffer pb = {0};
            pb.size = b[i].size;
            pb.start = b[i].start;
            pb.end = b[i].end;
            CHECK_OK(tmem_plan_problem_add(p[k], &pb, NULL));
        }
        CHECK_OK(tmem_plan_problem_lower_bound(p[k], k ? &lb_per : &lb_all));
        tmem_plan_problem_destroy(p[k]);
    }
    CHECK_MSG(lb_per < lb_all, "per-chunk %llu vs all chunks %llu", (unsigned long long)lb_per,
              (unsigned long long)lb_all);
    /* one token: chunk buffers of one row */
    REQUIRE_OK(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_DELTANET, 1, 4096, TMEM_MODEL_GRAPH_CHUNKED_DELTA, per, 64,
                                      &np));
    dm = find(per, np, "decay_mask");
    CHECK(dm && dm->size == Hv * 4);
    CHECK_ST(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_DELTANET, 512, 4096, 1u << 5, per, 64, &np),
             TMEM_E_INVALID_ARG);
}

static void test_fit_scratch(void) {
    tmem_model_desc m;
    REQUIRE_OK(tmem_model_preset("qwen3.5-0.8b", &m));
    tmem_fit_desc f = {0};
    f.model = &m;
    f.ctx_tokens = 4096;
    f.graph_flags = TMEM_MODEL_GRAPH_CHUNKED_DELTA;
    tmem_fit_result a, b;
    REQUIRE_OK(tmem_fit(&f, &a));
    f.scratch_bytes = 3u << 20;
    REQUIRE_OK(tmem_fit(&f, &b));
    CHECK(b.total == a.total + (3u << 20) && b.total_dirty == a.total_dirty + (3u << 20));
    CHECK(b.item_count == a.item_count + 1);
    bool found = false;
    for (uint32_t i = 0; i < b.item_count; i++)
        if (!strcmp(b.items[i].what, "scratch")) found = b.items[i].bytes == (3u << 20) &&
                                                        b.items[i].role == TMEM_ROLE_SCRATCH;
    CHECK(found);
    for (uint32_t i = 0; i < a.item_count; i++) CHECK(strcmp(a.items[i].what, "scratch") != 0);
    f.graph_flags = 1u << 7;
    CHECK_ST(tmem_fit(&f, &a), TMEM_E_INVALID_ARG);
}

int main(void) {
    RUN(test_graph);
    RUN(test_fit_scratch);
    return tmem_test_finish();
}
