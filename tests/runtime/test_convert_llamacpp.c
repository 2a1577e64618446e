/* The decisive test of tmem convert: on the committed Hugging Face
 * checkpoints (tests/data/qwen35-tiny-{a,b,vlm}), our output equals what
 * llama.cpp's own convert_hf_to_gguf.py wrote from the same checkpoints
 * (the GGUFs in tests/data/llamacpp), tensor by tensor -- the same names, types,
 * shapes and bytes (f32 and f16 files: every byte; q8_0: every block, see
 * below) -- and key by key for every metadata pair except general.*
 * provenance (name, size label: derived by llama.cpp from the directory and
 * the parameter count). Skips (77) when the reference data is absent. */
#include "harness.h"
#include "tmemrt/convert.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char src_dir[1024], tmp[400];

typedef struct file {
    uint8_t *b;
    size_t n;
    tmem_gguf *g;
} file;

static bool load(const char *path, file *f) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    fseek(fp, 0, SEEK_END);
    f->n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->b = malloc(f->n ? f->n : 1);
    bool ok = fread(f->b, 1, f->n, fp) == f->n;
    fclose(fp);
    tmem_gguf_error e;
    return ok && tmem_gguf_open_memory(NULL, f->b, f->n, &f->g, &e) == TMEM_OK;
}

static void unload(file *f) {
    tmem_gguf_close(f->g);
    free(f->b);
}

/* Provenance keys llama.cpp derives from the directory name and the model
 * card; everything else must match. */
static bool provenance(const tmem_gguf_str *k) {
    static const char *const keep[] = {"general.architecture", "general.type", "general.file_type",
                                       "general.quantization_version", "general.alignment"};
    if (k->len < 8 || memcmp(k->data, "general.", 8)) return false;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (k->len == strlen(keep[i]) && !memcmp(k->data, keep[i], k->len)) return false;
    return true;
}

static bool same_scalar(const tmem_gguf_value *a, const tmem_gguf_value *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case TMEM_GGUF_STRING: return a->v.s.len == b->v.s.len && !memcmp(a->v.s.data, b->v.s.data, a->v.s.len);
    case TMEM_GGUF_FLOAT32: case TMEM_GGUF_FLOAT64: return a->v.f == b->v.f;
    case TMEM_GGUF_BOOL: return a->v.b == b->v.b;
    case TMEM_GGUF_INT8: case TMEM_GGUF_INT16: case TMEM_GGUF_INT32: case TMEM_GGUF_INT64: return a->v.i == b->v.i;
    default: return a->v.u == b->v.u;
    }
}

static void compare_metadata(const char *label, const file *ours, const file *ref) {
    tmem_gguf_info ir, io;
    REQUIRE_OK(tmem_gguf_get_info(ref->g, &ir));
    REQUIRE_OK(tmem_gguf_get_info(ours->g, &io));
    uint64_t compared = 0;
    for (uint64_t i = 0; i < ir.kv_count; i++) {
        tmem_gguf_str k;
        tmem_gguf_value vr, vo;
        REQUIRE_OK(tmem_gguf_kv_at(ref->g, i, &k, &vr));
        if (provenance(&k)) continue;
        char key[96];
        snprintf(key, sizeof key, "%.*s", (int)(k.len < 95 ? k.len : 95), k.data);
        uint64_t ko, kr;
        if (tmem_gguf_find(ours->g, key, &ko, &vo) != TMEM_OK) {
            CHECK_MSG(false, "%s: key %s missing from our file", label, key);
            continue;
        }
        if (tmem_gguf_find(ref->g, key, &kr, &vr)) continue;
        compared++;
        if (vr.type != TMEM_GGUF_ARRAY) {
            CHECK_MSG(same_scalar(&vo, &vr), "%s: key %s differs (type %d vs %d, %g vs %g)", label, key, vo.type,
                      vr.type, vo.type == TMEM_GGUF_FLOAT32 ? vo.v.f : (double)vo.v.u,
                      vr.type == TMEM_GGUF_FLOAT32 ? vr.v.f : (double)vr.v.u);
            continue;
        }
        bool same = vo.type == TMEM_GGUF_ARRAY && vo.v.array.type == vr.v.array.type &&
                    vo.v.array.count == vr.v.array.count;
        tmem_gguf_array_iter a = {0}, b = {0};
        tmem_gguf_value ea, eb;
        uint64_t at = 0;
        while (same && tmem_gguf_array_next(ours->g, ko, &a, &ea) == TMEM_OK &&
               tmem_gguf_array_next(ref->g, kr, &b, &eb) == TMEM_OK) {
            same = same_scalar(&ea, &eb);
            if (same) at++;
        }
        CHECK_MSG(same, "%s: array %s differs (types %d/%d, counts %llu/%llu, first difference at %llu)", label, key,
                  vo.v.array.type, vr.v.array.type, (unsigned long long)vo.v.array.count,
                  (unsigned long long)vr.v.array.count, (unsigned long long)at);
    }
    /* nothing of ours that llama.cpp does not write either */
    for (uint64_t i = 0; i < io.kv_count; i++) {
        tmem_gguf_str k;
        tmem_gguf_value v;
        REQUIRE_OK(tmem_gguf_kv_at(ours->g, i, &k, &v));
        if (provenance(&k)) continue;
        char key[96];
        snprintf(key, sizeof key, "%.*s", (int)(k.len < 95 ? k.len : 95), k.data);
        CHECK_MSG(tmem_gguf_find(ref->g, key, NULL, &v) == TMEM_OK, "%s: our key %s is not in llama.cpp's file", label,
                  key);
    }
    printf("%s: %llu metadata keys equal\n", label, (unsigned long long)compared);
}

/* Q8_0 block: f16 scale d, 32 int8. Blocks equal, or (ties rounded the other
 * way) within one quantisation step of the same dequantised values. */
static uint64_t q8_blocks_differing(const uint8_t *a, const uint8_t *b, uint64_t size, double *max_step) {
    uint64_t n = size / 34, bad = 0;
    *max_step = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!memcmp(a + 34 * i, b + 34 * i, 34)) continue;
        bad++;
        for (int k = 0; k < 32; k++) {
            double s = fabs((double)(int8_t)a[34 * i + 2 + k] - (double)(int8_t)b[34 * i + 2 + k]);
            if (s > *max_step) *max_step = s;
        }
    }
    return bad;
}

static void compare_tensors(const char *label, const file *ours, const file *ref) {
    tmem_gguf_info ir, io;
    REQUIRE_OK(tmem_gguf_get_info(ref->g, &ir));
    REQUIRE_OK(tmem_gguf_get_info(ours->g, &io));
    CHECK_MSG(io.tensor_count == ir.tensor_count, "%s: %llu tensors, llama.cpp %llu", label,
              (unsigned long long)io.tensor_count, (unsigned long long)ir.tensor_count);
    uint64_t equal = 0, q8_bad = 0;
    double q8_step = 0;
    for (uint64_t i = 0; i < ir.tensor_count; i++) {
        tmem_gguf_tensor r, o;
        REQUIRE_OK(tmem_gguf_tensor_at(ref->g, i, &r));
        char name[80];
        snprintf(name, sizeof name, "%.*s", (int)r.name.len, r.name.data);
        if (tmem_gguf_tensor_find(ours->g, name, &o) != TMEM_OK) {
            CHECK_MSG(false, "%s: tensor %s missing from our file", label, name);
            continue;
        }
        bool shape = o.type == r.type && o.n_dims == r.n_dims && !memcmp(o.dims, r.dims, sizeof o.dims);
        CHECK_MSG(shape, "%s: %s: type %u ne {%llu,%llu,%llu}, llama.cpp type %u ne {%llu,%llu,%llu}", label, name,
                  o.type, (unsigned long long)o.dims[0], (unsigned long long)o.dims[1], (unsigned long long)o.dims[2],
                  r.type, (unsigned long long)r.dims[0], (unsigned long long)r.dims[1], (unsigned long long)r.dims[2]);
        if (!shape) continue;
        if (!memcmp(o.data, r.data, (size_t)r.size)) {
            equal++;
            continue;
        }
        if (r.type == TMEM_GGML_Q8_0) {
            double step;
            uint64_t bad = q8_blocks_differing(o.data, r.data, r.size, &step);
            q8_bad += bad;
            if (step > q8_step) q8_step = step;
            CHECK_MSG(step <= 1.0, "%s: %s: q8_0 values differ by %g steps", label, name, step);
            continue;
        }
        uint64_t first = 0;
        while (((const uint8_t *)o.data)[first] == ((const uint8_t *)r.data)[first]) first++;
        CHECK_MSG(false, "%s: %s: bytes differ (first at byte %llu of %llu)", label, name, (unsigned long long)first,
                  (unsigned long long)r.size);
    }
    printf("%s: %llu of %llu tensors byte-identical", label, (unsigned long long)equal,
           (unsigned long long)ir.tensor_count);
    if (q8_bad) printf("; q8_0: %llu blocks differ by at most %g step (rounding of ties)", (unsigned long long)q8_bad, q8_step);
    printf("\n");
}

static void run_case(const char *ckpt, const char *ref_name, tmem_weight_dtype dtype) {
    char hf[1200], ref_path[1200], out[600];
    snprintf(hf, sizeof hf, "%s/tests/data/%s", src_dir, ckpt);
    snprintf(ref_path, sizeof ref_path, "%s/tests/data/llamacpp/%s", src_dir, ref_name);
    snprintf(out, sizeof out, "%s/out.gguf", tmp);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_convert_desc d = {0};
    d.hf_dir = hf;
    d.out_path = out;
    d.dtype = dtype;
    tmrt_convert_result r;
    tmrt_error e = {{0}};
    tmem_status st = tmrt_convert(ctx, &d, &r, &e);
    tmem_context_destroy(ctx);
    CHECK_MSG(st == TMEM_OK, "%.40s: %.200s", ref_name, e.message);
    if (st) return;
    CHECK(r.tokenizer);
    file ours, ref;
    REQUIRE(load(out, &ours));
    REQUIRE(load(ref_path, &ref));
    compare_metadata(ref_name, &ours, &ref);
    compare_tensors(ref_name, &ours, &ref);
    unload(&ours);
    unload(&ref);
    unlink(out);
}

int main(void) {
    const char *s = getenv("TMEM_SOURCE_DIR");
    snprintf(src_dir, sizeof src_dir, "%s", s ? s : ".");
    char probe[1200];
    snprintf(probe, sizeof probe, "%s/tests/data/llamacpp/qwen35-tiny-a-f32.gguf", src_dir);
    if (access(probe, R_OK)) {
        printf("SKIP: %s not found (reference data from tests/data)\n", probe);
        return 77;
    }
    if (!tmem_test_tmpdir(tmp, sizeof tmp)) return 77;
    run_case("qwen35-tiny-a", "qwen35-tiny-a-f32.gguf", TMEM_WEIGHT_F32);
    run_case("qwen35-tiny-a", "qwen35-tiny-a-f16.gguf", TMEM_WEIGHT_F16);
    run_case("qwen35-tiny-a", "qwen35-tiny-a-q8_0.gguf", TMEM_WEIGHT_Q8_0);
    run_case("qwen35-tiny-b", "qwen35-tiny-b-f16.gguf", TMEM_WEIGHT_F16);
    run_case("qwen35-tiny-vlm", "qwen35-tiny-vlm-text-f16.gguf", TMEM_WEIGHT_F16);
    rmdir(tmp);
    return tmem_test_finish();
}
