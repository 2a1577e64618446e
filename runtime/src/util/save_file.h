/* save_file.h: a file written whole or not at all (temp + fsync + rename),
 * for the runtime's suspended sessions (session/suspend.c).
 *
 * tmrt__save_begin opens PATH.tmp; writes go through a buffered FILE and
 * into a running FNV-1a 64 hash of what was written after the header;
 * tmrt__save_commit rewrites the header (which may now carry the hash),
 * flushes, fsyncs, closes, renames onto PATH and fsyncs the directory.
 * The hash runs over each write's bytes (tmrt__fnv1a): a reader must hash
 * the same spans.
 * Any failure removes the temp file: PATH is then as it was (absent, or
 * the previous complete file). A crash at any point leaves PATH complete
 * or absent, plus possibly a stale PATH.tmp that the next save replaces.
 *
 * Fault injection (tests): every fallible step (open, write, seek, flush,
 * fsync, close, rename) counts down tmrt_testing_save_fault's counter and
 * fails with EIO when it reaches zero. */
#ifndef TMRT_SAVE_FILE_H
#define TMRT_SAVE_FILE_H

#include <stdint.h>
#include <stdio.h>
#include "tmemrt/error.h"

#define TMRT_SAVE_PATH_MAX 1024

typedef struct tmrt_save {
    FILE *f;
    uint64_t hash;                  /* tmrt__fnv1a of the bytes after the header, write by write */
    uint64_t bytes;                 /* written, header included */
    char path[TMRT_SAVE_PATH_MAX], tmp[TMRT_SAVE_PATH_MAX + 8];
} tmrt_save;

/* FNV-1a 64 over the n bytes' 8-byte words (native order) then the tail
 * bytes, continuing from h (start: TMRT_FNV_INIT). */
#define TMRT_FNV_INIT 0xcbf29ce484222325ull
uint64_t tmrt__fnv1a(uint64_t h, const void *p, size_t n);

/* Open PATH.tmp and reserve header_bytes at its start (zeros). */
tmem_status tmrt__save_begin(tmrt_save *sv, const char *path, size_t header_bytes, tmrt_error *err);
/* Append n bytes (hashed). */
tmem_status tmrt__save_write(tmrt_save *sv, const void *p, size_t n, tmrt_error *err);
/* Write the header at offset 0, make the file durable and put it at PATH.
 * On failure the temp file is gone and sv closed. */
tmem_status tmrt__save_commit(tmrt_save *sv, const void *header, size_t header_bytes, tmrt_error *err);
/* Give up: close and remove the temp file. */
void tmrt__save_abort(tmrt_save *sv);

/* The fault counter (testing.h: tmrt_testing_save_fault); -1 = off. */
extern int tmrt__save_fault_countdown;

#endif
