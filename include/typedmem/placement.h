/**
 * @file placement.h
 * @brief The vocabulary of a memory type: placement, lifetime class, flags,
 *        and their names (the one table: config files, stats, `tmem info`).
 *
 * Types only and two pure functions; no context. Included by context.h.
 */
#ifndef TYPEDMEM_PLACEMENT_H
#define TYPEDMEM_PLACEMENT_H

#include "common.h"

TMEM_EXTERN_C_BEGIN

/** @brief Where memory lives and how it can be shared. */
typedef enum tmem_placement {
    TMEM_PLACEMENT_HOST = 0,        /**< anonymous private memory */
    TMEM_PLACEMENT_HOST_SHARED,     /**< sealed memfd, passable to another process */
    TMEM_PLACEMENT_FILE,            /**< read-only mapping of a file: clean pages */
    TMEM_PLACEMENT_PINNED,          /**< locked (mlock), optionally huge pages, populated */
    TMEM_PLACEMENT_DEVICE,          /**< a GPU backend's memory (reserved for backends) */
    TMEM_PLACEMENT_DEVICE_HOST_VISIBLE,
    TMEM_PLACEMENT_COUNT
} tmem_placement;

/** @brief How long memory lives and when it can be reused. */
typedef enum tmem_lifetime {
    TMEM_LIFETIME_PERSISTENT = 0, /**< as long as the model is loaded */
    TMEM_LIFETIME_GROWING,        /**< persistent, grows with the work (KV cache) */
    TMEM_LIFETIME_TRANSIENT,      /**< inside one step; aliasable */
    TMEM_LIFETIME_SHARED,         /**< reference-counted, several users */
    TMEM_LIFETIME_COUNT
} tmem_lifetime;

/** @brief Flags of a type (tmem_type_desc::flags). */
typedef enum tmem_type_flag {
    TMEM_TYPE_POPULATE = 1u << 0,   /**< commit and touch the whole reserve at creation */
    TMEM_TYPE_LOCKED = 1u << 1,     /**< mlock committed memory */
    TMEM_TYPE_HUGE_PAGES = 1u << 2, /**< MAP_HUGETLB, else THP advice */
    TMEM_TYPE_CONTIGUOUS = 1u << 3, /**< one physically-contiguous-style block, no growth */
    TMEM_TYPE_HOST_CACHED = 1u << 4, /**< DEVICE_HOST_VISIBLE: a host-cached memory type
                                          (fast CPU reads of GPU results); ignored elsewhere */
    TMEM_TYPE_FLAG_MASK = 0x1Fu
} tmem_type_flag;

/** @brief Name of a placement: "host", "host_shared", "file", "pinned",
 *  "device", "device_host_visible" (the spelling config files use).
 *  @return the name, or NULL for a value outside [0, TMEM_PLACEMENT_COUNT).
 *  @par Threads safe (a static string) */
TMEM_API const char *tmem_placement_name(tmem_placement placement);

/** @brief Name of a lifetime class: "persistent", "growing", "transient",
 *  "shared". @return the name, or NULL for a value out of range.
 *  @par Threads safe (a static string) */
TMEM_API const char *tmem_lifetime_name(tmem_lifetime lifetime);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_PLACEMENT_H */
