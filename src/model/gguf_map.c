/*
 * tmem_gguf_open: map a model file read-only and private (clean pages the OS
 * may drop and re-read from the file, which phones do not count against the
 * app's limit), validate it with the parser, charge the mapped bytes as clean
 * to a FILE type, and register the handle with the context so
 * tmem_context_destroy closes what the caller forgot (file_map.c does the
 * mapping and the charging, shared with the safetensors reader).
 */
#include "model_internal.h"
#include <string.h>

static void gguf_destroy_owned(void *object) {
    tmem_gguf *g = object;
    g->file.registered = false; /* the context is dropping its list */
    tmem_gguf_close(g);
}

static tmem_status gguf_parse(tmem_context *ctx, const uint8_t *base, uint64_t size, void **out, void *err) {
    tmem_gguf *g = NULL;
    tmem_status st = tmem__gguf_parse(ctx, base, size, &g, err);
    *out = g;
    return st;
}

static void gguf_free_parsed(void *object) { tmem__gguf_free(object); }

static tmem__model_file *gguf_file_of(void *object) { return &((tmem_gguf *)object)->file; }

static const tmem__model_reader gguf_reader = {gguf_parse, gguf_free_parsed, gguf_file_of, gguf_destroy_owned};

tmem_status tmem_gguf_open(tmem_context *ctx, const tmem_gguf_desc *desc, tmem_gguf **out, tmem_gguf_error *err) {
    if (out) *out = NULL;
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    if (!ctx || !desc || !desc->path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st;
    *out = tmem__model_file_open(ctx, desc->type, desc->path, (desc->flags & TMEM_GGUF_WILLNEED) != 0, &gguf_reader,
                                 err, err ? err->message : NULL, err ? sizeof err->message : 0, &st);
    return st;
}
