/*
 * Mapping a model file (GGUF, safetensors) read-only into a FILE type: the
 * steps both readers share (tmem__model_file_open). Order of effects, undone
 * in reverse on failure: open -> map -> close fd (the mapping keeps the
 * file) -> parse (the reader's) -> charge -> register -> account + trace.
 */
#include "model_internal.h"
#include "os/os.h"
#include <stdio.h>
#include <string.h>

static void file_msg(char *msg, size_t cap, const char *what, const char *path) {
    if (msg && cap) snprintf(msg, cap, "%s: %.120s", what, path);
}

static tmem_status pick_type(tmem_context *ctx, tmem_type *given, tmem_type **out) {
    tmem_type *t = given;
    if (!t && tmem_type_find(ctx, "/memory/weights", &t) != TMEM_OK) t = NULL;
    if (!t && tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &t) != TMEM_OK) return tmem__err(TMEM_E_NOT_FOUND);
    if (tmem__type_context(t) != ctx) return tmem__err(TMEM_E_INVALID_ARG);
    if (tmem__type_placement(t) != TMEM_PLACEMENT_FILE) return tmem__err(TMEM_E_INVALID_ARG);
    *out = t;
    return TMEM_OK;
}

static void unmap(void *addr, size_t size) {
    /* Nothing useful to do if the OS refuses to unmap our own mapping. */
    (void)tmem__os_unmap(addr, size);
}

static tmem_status map_file(const char *path, bool willneed, tmem__model_file *f, char *msg, size_t cap) {
    memset(f, 0, sizeof *f);
    int fd = -1;
    uint64_t fsize = 0;
    tmem_status st = tmem__os_file_open(path, &fd, &fsize);
    if (st) {
        file_msg(msg, cap, "cannot open", path);
        return st;
    }
    if (fsize == 0 || fsize > SIZE_MAX - tmem__os_page_size()) {
        (void)tmem__os_close(fd);
        file_msg(msg, cap, fsize ? "file too large to map" : "empty file", path);
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
        file_msg(msg, cap, "cannot map", path);
        return st;
    }
    (void)cst;
    if (willneed) {
        tmem__os_benign_begin();
        (void)tmem__os_advise(map, map_size, TMEM__OS_ADVISE_WILLNEED);
        tmem__os_benign_end();
    }
    f->map = map;
    f->map_size = map_size;
    f->file_size = fsize;
    return TMEM_OK;
}

/* Charge the mapping (clean) to type, register owner with the context
 * (destroy closes it at context destroy), account and trace it. On failure
 * nothing is charged or registered (the mapping stays, the caller unmaps). */
static tmem_status adopt(tmem_context *ctx, tmem_type *type, tmem__model_file *f, void *owner,
                         tmem__destroy_fn destroy, const char *path, char *msg, size_t cap) {
    tmem_status st = tmem__type_charge(type, f->map_size, true);
    if (st) {
        file_msg(msg, cap, "mapping would cross the budget", path);
        return st;
    }
    if ((st = tmem__context_add_owned(ctx, owner, destroy))) {
        tmem__type_uncharge(type, f->map_size, true);
        return st;
    }
    f->type = type;
    f->ctx = ctx;
    f->registered = true;
    tmem__account_alloc(type, TMEM_ROLE_WEIGHTS, f->map_size);
    /* a file mapping has no pool offset: its address keys it in the trace,
     * so two files mapped into one type are two allocations, not one */
    tmem__trace(ctx, TMEM__TRACE_ALLOC, type, TMEM_ROLE_WEIGHTS, f->map_size, (uint64_t)(uintptr_t)f->map, path);
    return TMEM_OK;
}

void *tmem__model_file_open(tmem_context *ctx, tmem_type *given, const char *path, bool willneed,
                            const tmem__model_reader *reader, void *err, char *msg, size_t cap, tmem_status *st) {
    tmem_type *type = NULL;
    if ((*st = pick_type(ctx, given, &type))) {
        file_msg(msg, cap, *st == TMEM_E_NOT_FOUND ? "no /memory/weights type to map into"
                                                   : "type is not a FILE type of this context", path);
        return NULL;
    }
    tmem__model_file f;
    if ((*st = map_file(path, willneed, &f, msg, cap))) return NULL;
    void *object = NULL;
    if ((*st = reader->parse(ctx, f.map, f.file_size, &object, err))) {
        unmap(f.map, f.map_size);
        return NULL;
    }
    if ((*st = adopt(ctx, type, &f, object, reader->destroy_owned, path, msg, cap))) {
        unmap(f.map, f.map_size);
        reader->free_parsed(object);
        return NULL;
    }
    *reader->file_of(object) = f;
    return object;
}

void tmem__model_file_release(tmem__model_file *f, void *owner) {
    if (!f->map) return;
    if (f->type) {
        if (f->registered) tmem__context_remove_owned(f->ctx, owner);
        tmem__account_free(f->type, TMEM_ROLE_WEIGHTS, f->map_size);
        tmem__trace(f->ctx, TMEM__TRACE_FREE, f->type, TMEM_ROLE_WEIGHTS, f->map_size,
                    (uint64_t)(uintptr_t)f->map, NULL);
        tmem__type_uncharge(f->type, f->map_size, true);
    }
    unmap(f->map, f->map_size);
    memset(f, 0, sizeof *f);
}
