/*
 * Shared libraries loaded at run time (os.h): the GPU backends dlopen their
 * drivers (libvulkan.so.1, libcuda.so.1) so that nothing links them. A load
 * is not counted as a live resource (a driver stays loaded for the process).
 */
#include "os/os_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

tmem_status tmem__os_lib_open(const char *name, void **out) {
    if (out) *out = NULL;
    if (!name || !*name || !out) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_LIB_OPEN);
    if (st != TMEM_OK) return st;
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return TMEM_E_NOT_FOUND;
    *out = lib;
    return TMEM_OK;
}

void *tmem__os_lib_symbol(void *lib, const char *symbol) { return lib && symbol ? dlsym(lib, symbol) : NULL; }

void tmem__os_lib_close(void *lib) {
    if (lib) (void)dlclose(lib);
}

/* ---- keeping a driver mapped ----
 * The Vulkan loader unloads the driver (ICD) at vkDestroyInstance. Drivers
 * are not unload-safe (Mesa's lavapipe leaves LLVM, ICU and libxml2 state
 * behind), and a driver unmapped under LeakSanitizer turns its one-time
 * allocations into anonymous reports. So every shared object that appeared
 * while the instance was created is pinned (RTLD_NODELETE). */
static int count_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info, (void)size;
    (*(size_t *)data)++;
    return 0;
}

size_t tmem__os_lib_count(void) {
    size_t n = 0;
    dl_iterate_phdr(count_object, &n);
    return n;
}

typedef struct new_objects {
    size_t skip, seen, n;
    char *names[32];
} new_objects;

static int collect_new(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    new_objects *o = data;
    if (o->seen++ >= o->skip && info->dlpi_name && info->dlpi_name[0] && o->n < 32) {
        size_t len = strlen(info->dlpi_name) + 1;
        char *copy = malloc(len);
        if (copy) memcpy(copy, info->dlpi_name, len), o->names[o->n++] = copy;
    }
    return 0;
}

void tmem__os_lib_pin_since(size_t before) {
    new_objects o = {before, 0, 0, {0}};
    dl_iterate_phdr(collect_new, &o);
    /* dlopen outside the iteration: it holds the dynamic linker's lock */
    for (size_t i = 0; i < o.n; i++) {
        (void)dlopen(o.names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        free(o.names[i]);
    }
}
