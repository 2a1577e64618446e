/* The mmproj writer of runtime/src/vision (writer.c): the vision module's
 * contract with the converter (convert/convert_vision.c), which streams a
 * checkpoint's rows through it; vision_internal.h is private to vision/. */
#ifndef TMRT_VISION_WRITER_H
#define TMRT_VISION_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "tmemrt/vision.h"

/* ---- writer.c ---- */
/* Fills one row (n floats) of tensor `name` (the tensor's index in the
 * file, its row). `how` is the random filler's kind. 0 or -1 (err set). */
typedef int (*vis_row_fn)(void *user, const char *name, int how, size_t tensor, uint64_t row, float *out, uint64_t n,
                          char *err, size_t cap);
/* Write an mmproj of config c (llama.cpp's names and keys), matrices in ggml
 * type wt, every row from `rows`, streamed. */
int tmrt__vis_write_mmproj(const tmrt_vision_config *c, uint32_t wt, const char *path, vis_row_fn rows, void *user,
                     uint64_t *file_bytes, char *err, size_t cap);

#endif
