/*
 * Private to src/stats/: the reports over a whole context (JSON and the human
 * table). The layer sits above core, heap and the device spans and reads each
 * of them through its own functions; nothing below knows it exists.
 */
#ifndef TMEM_STATS_INTERNAL_H
#define TMEM_STATS_INTERNAL_H

#include "base/text.h"
#include "core/internal.h"
#include "heap/internal.h"

#endif /* TMEM_STATS_INTERNAL_H */
