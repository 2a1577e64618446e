/* tmem convert --mmproj against llama.cpp's own converter on the committed
 * tiny Qwen3.5 VLM: tmrt_convert(..., mmproj_path, F32) must write every
 * tensor llama.cpp's mmproj has, with the same name, type, shape and bytes,
 * and the same clip.* / general.architecture values; the file loads in
 * tmrt_vision_open. Then tmrt_gen with --mmproj for the tiny preset: a
 * random tower that opens and projects to the text model's width.
 * Skips (77) without the reference data. */
#include "harness.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tmemrt/convert.h"
#include "tmemrt/runtime.h"
#include "tmemrt/vision.h"

static bool same_value(const tmem_gguf *a, uint64_t ia, const tmem_gguf_value *va, const tmem_gguf *b,
                       const char *key) {
    uint64_t ib;
    tmem_gguf_value vb;
    if (tmem_gguf_find(b, key, &ib, &vb) != TMEM_OK) return false;
    if (va->type == TMEM_GGUF_STRING)
        return vb.type == TMEM_GGUF_STRING && va->v.s.len == vb.v.s.len && !memcmp(va->v.s.data, vb.v.s.data, vb.v.s.len);
    if (va->type == TMEM_GGUF_ARRAY) {
        if (vb.type != TMEM_GGUF_ARRAY || va->v.array.count != vb.v.array.count) return false;
        for (uint64_t i = 0; i < va->v.array.count; i++) {
            tmem_gguf_value ea, eb;
            if (tmem_gguf_array_get(a, ia, i, &ea) || tmem_gguf_array_get(b, ib, i, &eb) || ea.type != eb.type ||
                ea.v.u != eb.v.u)
                return false;
        }
        return true;
    }
    if (va->type == TMEM_GGUF_FLOAT32 || va->type == TMEM_GGUF_FLOAT64)
        return (vb.type == TMEM_GGUF_FLOAT32 || vb.type == TMEM_GGUF_FLOAT64) && fabs(va->v.f - vb.v.f) <= 1e-12;
    return va->type == vb.type && va->v.u == vb.v.u;
}

int main(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    char ref_path[512], hf[512], dir[256], out[600], mm[600];
    if (!src) {
        printf("SKIP: run through ctest (TMEM_SOURCE_DIR)\n");
        return 77;
    }
    snprintf(ref_path, sizeof ref_path, "%s/tests/data/llamacpp/mmproj-qwen35-tiny-vlm-f32.gguf", src);
    snprintf(hf, sizeof hf, "%s/tests/data/qwen35-tiny-vlm", src);
    FILE *probe = fopen(ref_path, "rb");
    if (!probe) {
        printf("SKIP: %s missing\n", ref_path);
        return 77;
    }
    fclose(probe);
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    snprintf(out, sizeof out, "%s/text.gguf", dir);
    snprintf(mm, sizeof mm, "%s/mmproj.gguf", dir);
    tmrt_convert_desc d = {0};
    d.hf_dir = hf, d.out_path = out, d.mmproj_path = mm, d.dtype = TMEM_WEIGHT_F32;
    tmrt_convert_result res;
    tmrt_error e = {{0}};
    printf("-- convert --mmproj vs llama.cpp\n");
    CHECK_MSG(tmrt_convert(ctx, &d, &res, &e) == TMEM_OK, "%.200s", e.message);
    CHECK(res.mmproj_bytes > 0);
    tmem_gguf *ours = NULL, *ref = NULL;
    tmem_gguf_desc gd = {0};
    gd.path = mm;
    CHECK_OK(tmem_gguf_open(ctx, &gd, &ours, NULL));
    gd.path = ref_path;
    CHECK_OK(tmem_gguf_open(ctx, &gd, &ref, NULL));
    if (ours && ref) {
        tmem_gguf_info ri, oi;
        CHECK_OK(tmem_gguf_get_info(ref, &ri));
        CHECK_OK(tmem_gguf_get_info(ours, &oi));
        uint32_t same = 0;
        for (uint64_t i = 0; i < ri.tensor_count; i++) {
            tmem_gguf_tensor a, b;
            CHECK_OK(tmem_gguf_tensor_at(ref, i, &a));
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)a.name.len, a.name.data);
            bool ok = tmem_gguf_tensor_find(ours, name, &b) == TMEM_OK && a.type == b.type && a.n_dims == b.n_dims &&
                      !memcmp(a.dims, b.dims, sizeof a.dims) && a.size == b.size && !memcmp(a.data, b.data, a.size);
            CHECK_MSG(ok, "tensor %s differs from llama.cpp's", name);
            same += ok;
        }
        CHECK(oi.tensor_count == ri.tensor_count);
        printf("   %u of %llu tensors identical (name, type, shape, bytes)\n", same, (unsigned long long)ri.tensor_count);
        uint32_t keys = 0;
        for (uint64_t i = 0; i < ri.kv_count; i++) {
            tmem_gguf_str k;
            tmem_gguf_value v;
            CHECK_OK(tmem_gguf_kv_at(ref, i, &k, &v));
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)k.len, k.data);
            if (strncmp(key, "clip.", 5) && strcmp(key, "general.architecture") && strcmp(key, "general.type") &&
                strcmp(key, "general.file_type"))
                continue;
            CHECK_MSG(same_value(ref, i, &v, ours, key), "key %s differs from llama.cpp's", key);
            keys++;
        }
        printf("   %u clip.* / general keys equal\n", keys);
    }
    tmem_gguf_close(ours);
    tmem_gguf_close(ref);
    tmrt_error err = {""};
    tmrt_vision *v = NULL;
    tmrt_vision_desc vd = {mm, TMRT_MEMORY_TYPED, NULL};
    CHECK_MSG(tmrt_vision_open(ctx, &vd, &v, &err) == TMEM_OK, "%s", err.message);
    if (v) CHECK(tmrt_vision_get_config(v)->min_pixels == 1024); /* from preprocessor_config.json */
    tmrt_vision_close(v);

    printf("-- gen --mmproj\n");
    const char *tool = getenv("TMEM_TOOL");
    char cmd[1400];
    if (tool) {
        snprintf(cmd, sizeof cmd, "'%s' gen --preset tiny '%s' --mmproj '%s' > /dev/null", tool, out, mm);
        CHECK(system(cmd) == 0);
        CHECK_MSG(tmrt_vision_open(ctx, &vd, &v, &err) == TMEM_OK, "%s", err.message);
        tmrt_model *tm = NULL;
        tmrt_model_desc md = {0};
        tmrt_error te = {{0}};
        md.path = out;
        CHECK_OK(tmrt_model_open(ctx, &md, &tm, &te));
        if (v && tm) CHECK(tmrt_vision_get_config(v)->out_hidden == tmrt_model_hparams(tm)->n_embd);
        tmrt_model_close(tm);
        tmrt_vision_close(v);
    }
    tmrt_vision_config vc;
    tmem_model_desc m;
    CHECK_OK(tmem_model_preset("qwen3.5-0.8b", &m));
    CHECK(tmrt_vision_preset("qwen3.5-0.8b", &vc) == TMEM_OK);
    CHECK(vc.depth == m.vis_depth && vc.hidden == m.vis_hidden && vc.ff == m.vis_ff && vc.heads == m.vis_heads &&
          vc.out_hidden == m.n_embd);
    tmem_context_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tmem_test_finish();
}
