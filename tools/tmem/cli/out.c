/* The tool's output files (out.h). */
#include "cli/out.h"

FILE *tool_out_open(const char *cmd, const char *path, const char *const *inputs, size_t n, tmem_out_file **f) {
    tmem_out_error e;
    if (tmem_out_file_open(path, inputs, n, f, &e) != TMEM_OK) {
        fprintf(stderr, "tmem %s: %s\n", cmd, e.message);
        return NULL;
    }
    return tmem_out_file_stream(*f);
}

bool tool_out_close(const char *cmd, tmem_out_file *f, bool ok) {
    if (!f) return ok;
    if (!ok) {
        tmem_out_file_abort(f);
        return false;
    }
    tmem_out_error e;
    if (tmem_out_file_commit(f, &e) != TMEM_OK) {
        fprintf(stderr, "tmem %s: %s\n", cmd, e.message);
        return false;
    }
    return true;
}
