/*
 * Output files written safely (out_file.h): the checks against the inputs
 * and the messages; the temporary, the sync and the rename are the OS
 * layer's (os_afile.c).
 */
#include <stdlib.h>
#include "core/internal.h"
#include "os/os.h"
#include "typedmem/out_file.h"

struct tmem_out_file {
    tmem__os_afile af;
    char path[1024]; /* as the caller named it, for messages */
};

static void say(tmem_out_error *err, const char *fmt, const char *a, const char *b) {
    if (err) snprintf(err->message, sizeof err->message, fmt, a, b ? b : "");
}

tmem_status tmem_out_check(const char *path, const char *const *inputs, size_t n, tmem_out_error *err) {
    if (err) err->message[0] = 0;
    if (!path || !*path || (n && !inputs)) return tmem__err(TMEM_E_INVALID_ARG);
    const char *why = "";
    tmem_status st = tmem__os_afile_check(path, &why);
    if (st) {
        say(err, "cannot write '%.300s': %.300s", path, *why ? why : tmem_strerror(st));
        return tmem__err(st);
    }
    for (size_t i = 0; i < n; i++)
        if (inputs[i] && tmem__os_same_file(path, inputs[i])) {
            say(err, "output '%.300s' is the same file as the input '%.300s': refused, nothing written", path,
                inputs[i]);
            return tmem__err(TMEM_E_EXISTS);
        }
    return TMEM_OK;
}

tmem_status tmem_out_file_open(const char *path, const char *const *inputs, size_t n, tmem_out_file **out,
                               tmem_out_error *err) {
    if (out) *out = NULL;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem_out_check(path, inputs, n, err);
    if (st) return st;
    tmem_out_file *f = calloc(1, sizeof *f);
    if (!f) return tmem__err(TMEM_E_NO_MEMORY);
    snprintf(f->path, sizeof f->path, "%s", path);
    const char *why = "";
    if ((st = tmem__os_afile_create(path, &f->af, &why))) {
        if (*why) say(err, "cannot write '%.300s': %.300s", path, why);
        else say(err, "cannot write '%.300s': %.300s", path, tmem_strerror(st));
        free(f);
        return st;
    }
    if (!tmem__os_afile_stream(&f->af)) {
        tmem__os_afile_abort(&f->af);
        free(f);
        say(err, "cannot write '%.300s': %.300s", path, "no stream");
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    *out = f;
    return TMEM_OK;
}

FILE *tmem_out_file_stream(tmem_out_file *f) {
    return f ? f->af.stream : NULL;
}

tmem_status tmem_out_file_commit(tmem_out_file *f, tmem_out_error *err) {
    if (err) err->message[0] = 0;
    if (!f) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem__os_afile_commit(&f->af);
    if (st) say(err, "cannot write '%.300s': %.300s (the previous file, if any, is unchanged)", f->path,
                tmem_strerror(st));
    free(f);
    return st ? tmem__err(st) : TMEM_OK;
}

void tmem_out_file_abort(tmem_out_file *f) {
    if (!f) return;
    tmem__os_afile_abort(&f->af);
    free(f);
}
