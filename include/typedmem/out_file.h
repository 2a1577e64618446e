/**
 * @file out_file.h
 * @brief Output files written safely (layer io): a temporary file in the
 *        target's directory, fsynced and renamed over the target on commit.
 *
 * Every file the tmem tool writes goes through here or through the library
 * writers that use the same OS call (the GGUF stream writer, trace files):
 * - a reader of the old file (a process that has the model mapped) keeps
 *   running: the old inode lives on until it lets go;
 * - a failed or interrupted write (an error, SIGTERM, SIGKILL) leaves the
 *   previous file untouched and no partial file under the final name (where
 *   the kernel has O_TMPFILE, nothing at all is left behind);
 * - an output that is the same file as an input (same device and inode) is
 *   refused before anything is written, the message naming both;
 * - a target that exists and is not a regular file (directory, device, fifo,
 *   socket) is refused up front; nothing but the call's own temporary file
 *   is ever unlinked;
 * - a symlink is written through: its target is replaced atomically, in the
 *   target's directory, and the link stays; a dangling symlink is refused.
 *
 * @code
 *   tmem_out_file *f; tmem_out_error e;
 *   const char *in[] = {"model.gguf"};
 *   if (tmem_out_file_open("logits.f32", in, 1, &f, &e)) { puts(e.message); return; }
 *   fwrite(rows, 4, n, tmem_out_file_stream(f));
 *   if (tmem_out_file_commit(f, &e)) puts(e.message);   // f is freed either way
 * @endcode
 */
#ifndef TYPEDMEM_OUT_FILE_H
#define TYPEDMEM_OUT_FILE_H

#include <stdio.h>
#include "common.h"
#include "status.h"

TMEM_EXTERN_C_BEGIN

/** @brief A pending output file. */
typedef struct tmem_out_file tmem_out_file;

/** @brief Why an output was refused or failed: names the path (and the input
 *  it is the same file as). */
typedef struct tmem_out_error {
    char message[640];
} tmem_out_error;

/** @brief Refuse `path` as an output when it is the same file as any of
 *  inputs[0..n) (NULL entries skipped), or exists and is not a regular file.
 *  Writes nothing. For outputs that a library writer creates (GGUF, trace).
 *  @return TMEM_OK | TMEM_E_EXISTS (same file as an input) |
 *          TMEM_E_INVALID_ARG (NULL path, special file) | TMEM_E_NOT_FOUND
 *          (dangling symlink); err's message says which (may be NULL)
 *  @par On failure inputs are untouched; err holds the reason (when given)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_out_check(const char *path, const char *const *inputs, size_t n,
                                                   tmem_out_error *err);

/** @brief Check as tmem_out_check, then open a temporary beside the target.
 *  @param[out] out  NULL on failure
 *  @return as tmem_out_check, plus TMEM_E_NO_MEMORY and the OS's errors
 *          (TMEM_E_PERMISSION, TMEM_E_IO, ...); nothing is created on failure
 *  @par Threads safe (distinct files) */
TMEM_API TMEM_NODISCARD tmem_status tmem_out_file_open(const char *path, const char *const *inputs, size_t n,
                                                       tmem_out_file **out, tmem_out_error *err);

/** @brief The stream to write to (owned by f; do not fclose it); NULL only
 *  for NULL f or when the C library cannot make a stream.
 *  @par Threads as f */
TMEM_API FILE *tmem_out_file_stream(tmem_out_file *f);

/** @brief Flush, fsync and rename over the target; frees f either way.
 *  @return TMEM_OK | TMEM_E_IO (a write or the sync failed) | the OS's
 *          errors; on failure the target is as it was and the temporary gone
 *  @par Threads as f */
TMEM_API TMEM_NODISCARD tmem_status tmem_out_file_commit(tmem_out_file *f, tmem_out_error *err);

/** @brief Drop the output: the temporary is removed, the target untouched;
 *  frees f. NULL is a no-op. @par Threads as f */
TMEM_API void tmem_out_file_abort(tmem_out_file *f);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_OUT_FILE_H */
