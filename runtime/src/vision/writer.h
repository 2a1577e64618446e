/* The mmproj writer of runtime/src/vision (writer.c): the vision module's
 * contract with the converter (convert/convert_vision.c), which streams a
 * checkpoint's rows through it; vision_internal.h is private to vision/. */
#ifndef TMRT_VISION_WRITER_H
#define TMRT_VISION_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "tmemrt/vision.h"

/* Fills one row (n floats) of tensor `name` (the tensor's index in the
 * file, its row). `how` is the random filler's kind. TMEM_OK, or a status
 * with err's message set. */
typedef tmem_status (*tmrt__vis_row_fn)(void *user, const char *name, int how, size_t tensor, uint64_t row,
                                        float *out, uint64_t n, tmrt_error *err);
/* Write an mmproj of config c (llama.cpp's names and keys), matrices in ggml
 * type wt (F32, F16, BF16, Q8_0), every row from `rows`, streamed (no file
 * is left on failure). TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (the type)
 * | TMEM_E_NO_MEMORY | rows' status | the writer's (TMEM_E_IO, ...). */
tmem_status tmrt__vis_write_mmproj(const tmrt_vision_config *c, uint32_t wt, const char *path, tmrt__vis_row_fn rows,
                                   void *user, uint64_t *file_bytes, tmrt_error *err);

#endif
