/*
 * Loading Vulkan at run time: dlopen libvulkan.so.1 (the loader) and fetch
 * every entry point through it, so the library links no Vulkan and a
 * program without a Vulkan driver still runs (attach answers UNSUPPORTED).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"

tmem_status tmem__vk_load(tmem__vk *vk) {
    vk->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!vk->lib) vk->lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (!vk->lib) return tmem__err(TMEM_E_UNSUPPORTED);
    void *sym = dlsym(vk->lib, "vkGetInstanceProcAddr");
    if (!sym) {
        dlclose(vk->lib);
        tmem__vk_unload(vk);
        return tmem__err(TMEM_E_UNSUPPORTED);
    }
    memcpy(&vk->fn.vkGetInstanceProcAddr, &sym, sizeof sym);
    vk->fn.vkCreateInstance = (PFN_vkCreateInstance)vk->fn.vkGetInstanceProcAddr(NULL, "vkCreateInstance");
    vk->fn.vkEnumerateInstanceVersion =
        (PFN_vkEnumerateInstanceVersion)vk->fn.vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (!vk->fn.vkCreateInstance) {
        dlclose(vk->lib);
        tmem__vk_unload(vk);
        return tmem__err(TMEM_E_UNSUPPORTED);
    }
    return TMEM_OK;
}

void tmem__vk_load_instance(tmem__vk *vk) {
#define TMEM__VK_LOAD_I(name) vk->fn.name = (PFN_##name)vk->fn.vkGetInstanceProcAddr(vk->instance, #name);
    TMEM__VK_INSTANCE_FNS(TMEM__VK_LOAD_I)
#undef TMEM__VK_LOAD_I
    if (!vk->fn.vkGetPhysicalDeviceMemoryProperties2)
        vk->fn.vkGetPhysicalDeviceMemoryProperties2 =
            (PFN_vkGetPhysicalDeviceMemoryProperties2)vk->fn.vkGetInstanceProcAddr(
                vk->instance, "vkGetPhysicalDeviceMemoryProperties2KHR");
}

void tmem__vk_load_device(tmem__vk *vk) {
#define TMEM__VK_LOAD_D(name) vk->fn.name = (PFN_##name)vk->fn.vkGetDeviceProcAddr(vk->device, #name);
    TMEM__VK_DEVICE_FNS(TMEM__VK_LOAD_D)
#undef TMEM__VK_LOAD_D
}

/* ---- keeping the driver mapped ----
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

size_t tmem__vk_objects_loaded(void) {
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

void tmem__vk_pin_objects_since(size_t before) {
    new_objects o = {before, 0, 0, {0}};
    dl_iterate_phdr(collect_new, &o);
    /* dlopen outside the iteration: it holds the dynamic linker's lock */
    for (size_t i = 0; i < o.n; i++) {
        (void)dlopen(o.names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        free(o.names[i]);
    }
}

/* The loader stays mapped: Vulkan drivers (Mesa's LLVM, ICU, libxml2 under
 * it) are not unload-safe, and dlopen is reference counted, so a later
 * attach finds it again without growing anything. */
void tmem__vk_unload(tmem__vk *vk) { vk->lib = NULL; }

tmem_status tmem__vk_status(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return TMEM_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_FRAGMENTATION: return tmem__err(TMEM_E_NO_MEMORY);
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return tmem__err(TMEM_E_UNSUPPORTED);
    default: return tmem__err(TMEM_E_OS);
    }
}
