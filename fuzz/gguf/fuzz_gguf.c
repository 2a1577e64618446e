/* libFuzzer target for the GGUF reader: parse, walk everything the reader
 * exposes, derive a model descriptor from the metadata and size a request
 * with it (hostile shapes must end in an error, never a crash or a hang).
 * The input is copied to an exact-size allocation so AddressSanitizer sees a
 * read one byte past the end. Seeds: fuzz/gguf/corpus (written by the GGUF
 * writer, see tests/unit/test_gguf.c, TMEM_GGUF_CORPUS_DIR). */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "typedmem/model.h"

static uint64_t walk(const tmem_gguf *g) {
    tmem_gguf_info info;
    uint64_t h = 0;
    if (tmem_gguf_get_info(g, &info) != TMEM_OK) return 0;
    for (uint64_t i = 0; i < info.kv_count; i++) {
        tmem_gguf_str k;
        tmem_gguf_value v;
        if (tmem_gguf_kv_at(g, i, &k, &v) != TMEM_OK) continue;
        if (k.len) h += (uint8_t)k.data[k.len - 1];
        if (v.type == TMEM_GGUF_STRING && v.v.s.len) h += (uint8_t)v.v.s.data[v.v.s.len - 1];
        if (v.type == TMEM_GGUF_ARRAY) {
            tmem_gguf_array_iter it = {0};
            tmem_gguf_value e;
            uint64_t n = 0;
            while (tmem_gguf_array_next(g, i, &it, &e) == TMEM_OK) {
                h += e.v.u;
                if (e.type == TMEM_GGUF_STRING && e.v.s.len) h += (uint8_t)e.v.s.data[0];
                n++;
            }
            if (n && tmem_gguf_array_get(g, i, n - 1, &e) == TMEM_OK) h += e.offset;
        }
        /* lookups by the key just read */
        if (k.len < 256) {
            char key[256];
            memcpy(key, k.data, (size_t)k.len);
            key[k.len] = 0;
            uint64_t idx;
            if (tmem_gguf_find(g, key, &idx, &v) == TMEM_OK) h += idx;
        }
    }
    for (uint64_t i = 0; i < info.tensor_count; i++) {
        tmem_gguf_tensor t, u;
        if (tmem_gguf_tensor_at(g, i, &t) != TMEM_OK) continue;
        const uint8_t *p = t.data;
        h += p[0] + p[t.size - 1];
        char name[80];
        memcpy(name, t.name.data, (size_t)t.name.len);
        name[t.name.len] = 0;
        if (!memchr(name, 0, (size_t)t.name.len) && tmem_gguf_tensor_find(g, name, &u) == TMEM_OK) h += u.offset;
    }
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    tmem_gguf *g;
    tmem_gguf_error e;
    if (tmem_gguf_open_memory(NULL, copy, size, &g, &e) == TMEM_OK) {
        volatile uint64_t sink = walk(g);
        (void)sink;
        tmem_model_desc m;
        tmem_status st = tmem_model_from_gguf(g, &m, &e);
        if (st != TMEM_OK && tmem_model_preset("qwen3.5-0.8b", &m) == TMEM_OK) /* maybe an mmproj */
            st = tmem_model_add_mmproj(g, &m, &e);
        if (st == TMEM_OK) {
            tmem_fit_desc f = {0};
            f.model = &m;
            f.ctx_tokens = 4096;
            if (m.vis_depth) f.image_width = f.image_height = 256;
            tmem_fit_result r;
            uint64_t b = 0;
            /* results are checked by the unit tests; here only "no crash" */
            if (tmem_fit(&f, &r) == TMEM_OK) b += r.total;
            if (tmem_model_kv_bytes_per_token(&m, TMEM_KV_DTYPE_Q8_0, &b) == TMEM_OK) b++;
            if (tmem_model_recurrent_bytes(&m, TMEM_KV_DTYPE_F16, &b) == TMEM_OK) b++;
            sink = b;
        }
        tmem_gguf_close(g);
    }
    free(copy);
    return 0;
}
