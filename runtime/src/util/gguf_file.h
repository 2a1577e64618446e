/* A GGUF opened in one of the runtime's two memory modes, for the text model
 * (model/model.c) and the vision tower (vision/mmproj.c) alike. */
#ifndef TMRT_GGUF_FILE_H
#define TMRT_GGUF_FILE_H

#include "tmemrt/runtime.h"

/* TYPED: tmem_gguf_open maps `path` read-only into ctx's WEIGHTS FILE type
 * (clean pages, charged). NAIVE: the whole file read into one malloc'd
 * buffer (*naive_bytes, the caller frees it after tmem_gguf_close), the
 * baseline's dirty copy; ctx unused. Both parse with the same validating
 * reader. On failure *out and *naive_bytes are NULL and err names the file:
 * TMEM_E_NOT_FOUND (cannot open) | TMEM_E_IO | TMEM_E_NO_MEMORY | the
 * errors of tmem_gguf_open / tmem_gguf_open_memory. */
tmem_status tmrt__gguf_open_in(tmem_context *ctx, const char *path, tmrt_memory_mode memory, tmem_gguf **out,
                               void **naive_bytes, tmrt_error *err);

#endif
