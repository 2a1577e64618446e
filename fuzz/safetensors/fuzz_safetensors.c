/* libFuzzer target for the safetensors reader (and the strict JSON reader
 * under it): parse, then walk everything it exposes (every tensor's first
 * and last byte, lookups by the names just read, the metadata). The input
 * is copied to an exact-size allocation so AddressSanitizer sees a read one
 * byte past the end. Seeds: fuzz/safetensors/corpus (small valid files and
 * near misses; tests/misuse/test_safetensors_hostile.c builds the same
 * kinds). */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "typedmem/json.h"
#include "typedmem/safetensors.h"

static uint64_t walk(const tmem_safetensors *st) {
    tmem_safetensors_info info;
    uint64_t h = 0;
    if (tmem_safetensors_get_info(st, &info) != TMEM_OK) return 0;
    for (uint64_t i = 0; i < info.tensor_count; i++) {
        tmem_safetensors_tensor t, u;
        if (tmem_safetensors_tensor_at(st, i, &t) != TMEM_OK) continue;
        const uint8_t *p = t.data;
        if (t.size) h += p[0] + p[t.size - 1];
        h += t.n_elements + t.name_len;
        if (tmem_safetensors_find(st, t.name, &u) == TMEM_OK) h += u.offset;
    }
    const char *k, *v;
    for (uint64_t i = 0; tmem_safetensors_metadata_at(st, i, &k, &v) == TMEM_OK; i++) h += strlen(k) + strlen(v);
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    tmem_safetensors *st;
    tmem_safetensors_error e;
    if (tmem_safetensors_open_memory(NULL, copy, size, &st, &e) == TMEM_OK) {
        volatile uint64_t sink = walk(st);
        (void)sink;
        tmem_safetensors_close(st);
    }
    /* the same bytes as a JSON document (config.json, tokenizer.json) */
    tmem_json *j;
    tmem_json_error je;
    if (tmem_json_parse(NULL, (const char *)copy, size, &j, &je) == TMEM_OK) {
        tmem_json_ref r;
        double d;
        if (tmem_json_first(j, TMEM_JSON_ROOT, &r) == TMEM_OK) {
            volatile double x = tmem_json_number(j, r, &d) == TMEM_OK ? d : 0;
            (void)x;
        }
        tmem_json_free(j);
    }
    free(copy);
    return 0;
}
