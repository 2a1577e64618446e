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

tmem_status tmem_gguf_open(tmem_context *ctx, const tmem_gguf_desc *desc, tmem_gguf **out, tmem_gguf_error *err) {
    if (out) *out = NULL;
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    if (!ctx || !desc || !desc->path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    char *msg = err ? err->message : NULL;
    size_t cap = err ? sizeof err->message : 0;
    tmem_type *type = NULL;
    tmem_status st = tmem__model_pick_type(ctx, desc->type, &type);
    if (st) {
        tmem__model_file_msg(msg, cap, st == TMEM_E_NOT_FOUND ? "no /memory/weights type to map into"
                                                              : "type is not a FILE type of this context", desc->path);
        return st;
    }
    tmem__model_file f;
    if ((st = tmem__model_map_file(desc->path, (desc->flags & TMEM_GGUF_WILLNEED) != 0, &f, msg, cap))) return st;
    tmem_gguf *g = NULL;
    if ((st = tmem__gguf_parse(ctx, f.map, f.file_size, &g, err))) {
        tmem__model_unmap(f.map, f.map_size);
        return st;
    }
    if ((st = tmem__model_file_adopt(ctx, type, &f, g, gguf_destroy_owned, desc->path, msg, cap))) {
        tmem__model_unmap(f.map, f.map_size);
        tmem__gguf_free(g);
        return st;
    }
    g->file = f;
    *out = g;
    return TMEM_OK;
}
