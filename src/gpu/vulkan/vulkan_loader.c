/*
 * Loading Vulkan at run time: libvulkan.so.1 (the loader) opened through the
 * OS layer (tmem__os_lib_open) and every entry point fetched through it, so
 * the library links no Vulkan and a program without a Vulkan driver still
 * runs (attach answers UNSUPPORTED).
 */
#include <stdlib.h>
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"

tmem_status tmem__vk_load(tmem__vk *vk) {
    if (tmem__os_lib_open("libvulkan.so.1", &vk->lib) != TMEM_OK &&
        tmem__os_lib_open("libvulkan.so", &vk->lib) != TMEM_OK)
        return tmem__err(TMEM_E_UNSUPPORTED);
    void *sym = tmem__os_lib_symbol(vk->lib, "vkGetInstanceProcAddr");
    if (!sym) {
        tmem__os_lib_close(vk->lib);
        tmem__vk_unload(vk);
        return tmem__err(TMEM_E_UNSUPPORTED);
    }
    memcpy(&vk->fn.vkGetInstanceProcAddr, &sym, sizeof sym);
    vk->fn.vkCreateInstance = (PFN_vkCreateInstance)vk->fn.vkGetInstanceProcAddr(NULL, "vkCreateInstance");
    vk->fn.vkEnumerateInstanceVersion =
        (PFN_vkEnumerateInstanceVersion)vk->fn.vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (!vk->fn.vkCreateInstance) {
        tmem__os_lib_close(vk->lib);
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
