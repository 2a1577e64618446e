/* The GPU part of `tmem info` (info_gpu.c). */
#ifndef TMEM_INFO_GPU_H
#define TMEM_INFO_GPU_H

#include <stdbool.h>

/* Attach each GPU API built into typedmem_gpu and describe what it found:
 * a text section, or (json) a JSON array value. */
void tmem_info_gpu(bool json);

#endif
