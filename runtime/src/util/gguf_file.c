/* gguf_file.c: a GGUF in either memory mode (util/gguf_file.h). */
#include <stdio.h>
#include <stdlib.h>
#include "util/fail.h"
#include "util/gguf_file.h"

static tmem_status read_whole_file(const char *path, void **data, uint64_t *size, tmrt_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_NOT_FOUND, "cannot open '%s'", path);
    tmem_status st = TMEM_OK;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n <= 0 || fseek(f, 0, SEEK_SET) != 0) st = tmrt__fail(err, TMEM_E_IO, "cannot size '%s'", path);
    void *buf = st ? NULL : malloc((size_t)n);
    if (!st && !buf) st = tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the %ld bytes of '%s'", n, path);
    if (!st && fread(buf, 1, (size_t)n, f) != (size_t)n) st = tmrt__fail(err, TMEM_E_IO, "cannot read '%s'", path);
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    *data = buf;
    *size = (uint64_t)n;
    return TMEM_OK;
}

tmem_status tmrt__gguf_open_in(tmem_context *ctx, const char *path, tmrt_memory_mode memory, tmem_gguf **out,
                               void **naive_bytes, tmrt_error *err) {
    *out = NULL;
    *naive_bytes = NULL;
    tmem_gguf_error ge = {0};
    tmem_status st;
    if (memory == TMRT_MEMORY_TYPED) {
        tmem_gguf_desc gd = {0};
        gd.path = path;
        st = tmem_gguf_open(ctx, &gd, out, &ge);
    } else {
        uint64_t size = 0;
        if ((st = read_whole_file(path, naive_bytes, &size, err))) return st;
        st = tmem_gguf_open_memory(NULL, *naive_bytes, (size_t)size, out, &ge);
        if (st) {
            free(*naive_bytes);
            *naive_bytes = NULL;
        }
    }
    if (st) return tmrt__fail(err, st, "%s: %s", path, ge.message[0] ? ge.message : tmem_strerror(st));
    return TMEM_OK;
}
