/* The names of the public vocabulary (typedmem/placement.h): one table each,
 * used by config files, stats, tables and the command line. */
#include "base/base.h"
#include "typedmem/placement.h"

static const char *const placement_names[TMEM_PLACEMENT_COUNT] = {
    "host", "host_shared", "file", "pinned", "device", "device_host_visible",
};
static const char *const lifetime_names[TMEM_LIFETIME_COUNT] = {
    "persistent", "growing", "transient", "shared",
};

const char *tmem_placement_name(tmem_placement placement) {
    return (unsigned)placement < TMEM_PLACEMENT_COUNT ? placement_names[placement] : NULL;
}

const char *tmem_lifetime_name(tmem_lifetime lifetime) {
    return (unsigned)lifetime < TMEM_LIFETIME_COUNT ? lifetime_names[lifetime] : NULL;
}
