/*
 * tmem_gguf_open: map a model file read-only and private (clean pages the OS
 * may drop and re-read from the file, which phones do not count against the
 * app's limit), validate it with the parser, charge the mapped bytes as clean
 * to a FILE type, and register the handle with the context so
 * tmem_context_destroy closes what the caller forgot.
 *
 * Order of effects, undone in reverse on any failure: open -> map -> close fd
 * (the mapping keeps the file) -> parse -> charge -> register.
 */
#include "model_internal.h"
#include "os/os.h"
#include <stdio.h>
#include <string.h>

static void set_err(tmem_gguf_error *err, const char *msg, const char *path) {
    if (!err) return;
    err->offset = 0;
    snprintf(err->message, sizeof err->message, "%s: %.120s", msg, path);
}

/* Resolve the FILE type to charge: the caller's, else /memory/weights, else
 * whatever the WEIGHTS role maps to. */
static tmem_status pick_type(tmem_context *ctx, tmem_type *given, tmem_type **out) {
    tmem_type *t = given;
    if (!t && tmem_type_find(ctx, "/memory/weights", &t) != TMEM_OK) t = NULL;
    if (!t && tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &t) != TMEM_OK) return tmem__err(TMEM_E_NOT_FOUND);
    if (tmem__type_context(t) != ctx) return tmem__err(TMEM_E_INVALID_ARG);
    if (tmem__type_placement(t) != TMEM_PLACEMENT_FILE) return tmem__err(TMEM_E_INVALID_ARG);
    *out = t;
    return TMEM_OK;
}

static void unmap_quietly(void *addr, size_t size) {
    /* Nothing useful to do if the OS refuses to unmap our own mapping. */
    (void)tmem__os_unmap(addr, size);
}

/* Undo what tmem_gguf_open added on top of the parse (called by close). */
static void gguf_release(tmem_gguf *g) {
    tmem_context *ctx = g->ctx;
    if (g->registered) tmem__context_remove_owned(ctx, g);
    tmem__account_free(g->type, TMEM_ROLE_WEIGHTS, g->map_size);
    tmem__trace(ctx, TMEM__TRACE_FREE, g->type, TMEM_ROLE_WEIGHTS, g->map_size, (uint64_t)(uintptr_t)g->map, NULL);
    tmem__type_uncharge(g->type, g->map_size, true);
    unmap_quietly(g->map, g->map_size);
}

static void gguf_destroy_owned(void *object) {
    tmem_gguf *g = object;
    g->registered = false; /* the context is dropping its list */
    tmem_gguf_close(g);
}

tmem_status tmem_gguf_open(tmem_context *ctx, const tmem_gguf_desc *desc, tmem_gguf **out, tmem_gguf_error *err) {
    if (out) *out = NULL;
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    if (!ctx || !desc || !desc->path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_type *type = NULL;
    tmem_status st = pick_type(ctx, desc->type, &type);
    if (st) {
        set_err(err, st == TMEM_E_NOT_FOUND ? "no /memory/weights type to map into" : "type is not a FILE type of this context", desc->path);
        return st;
    }

    int fd = -1;
    uint64_t fsize = 0;
    if ((st = tmem__os_file_open(desc->path, &fd, &fsize))) {
        set_err(err, "cannot open", desc->path);
        return st;
    }
    if (fsize == 0 || fsize > SIZE_MAX - tmem__os_page_size()) {
        (void)tmem__os_close(fd);
        set_err(err, fsize ? "file too large to map" : "empty file", desc->path);
        return tmem__err(fsize ? TMEM_E_OVERFLOW : TMEM_E_PARSE);
    }
    size_t page = tmem__os_page_size();
    size_t map_size = (size_t)((fsize + page - 1) / page * page);
    void *map = NULL;
    st = tmem__os_map_fd(fd, 0, map_size, false, false, &map);
    /* The mapping holds the file open; the descriptor is no longer needed. A
     * failed close leaves nothing we could retry safely, so it only matters
     * when mapping failed too. */
    tmem_status cst = tmem__os_close(fd);
    if (st) {
        set_err(err, "cannot map", desc->path);
        return st;
    }
    (void)cst;
    if (desc->flags & TMEM_GGUF_WILLNEED) {
        tmem__os_benign_begin();
        (void)tmem__os_advise(map, map_size, TMEM__OS_ADVISE_WILLNEED);
        tmem__os_benign_end();
    }

    tmem_gguf *g = NULL;
    if ((st = tmem__gguf_parse(ctx, map, fsize, &g, err))) {
        unmap_quietly(map, map_size);
        return st;
    }
    g->map = map;
    g->map_size = map_size;
    if ((st = tmem__type_charge(type, map_size, true))) {
        set_err(err, "mapping would cross the budget", desc->path);
        unmap_quietly(map, map_size);
        tmem__gguf_free(g);
        return st;
    }
    g->type = type;
    if ((st = tmem__context_add_owned(ctx, g, gguf_destroy_owned))) {
        tmem__type_uncharge(type, map_size, true);
        unmap_quietly(map, map_size);
        tmem__gguf_free(g);
        return st;
    }
    g->registered = true;
    g->release = gguf_release;
    tmem__account_alloc(type, TMEM_ROLE_WEIGHTS, map_size);
    /* a file mapping has no pool offset: its address keys it in the trace,
     * so two files mapped into one type are two allocations, not one */
    tmem__trace(ctx, TMEM__TRACE_ALLOC, type, TMEM_ROLE_WEIGHTS, map_size, (uint64_t)(uintptr_t)map, desc->path);
    *out = g;
    return TMEM_OK;
}
