/*
 * Opening a Vulkan device for typedmem: create an instance and a device
 * with one compute queue (or adopt the application's), enable the memory
 * extensions present (VK_EXT_memory_budget, VK_KHR_external_memory_fd,
 * VK_EXT_external_memory_host), and choose one memory type per placement:
 *   DEVICE              DEVICE_LOCAL, preferring one that is not host visible
 *   DEVICE_HOST_VISIBLE HOST_VISIBLE | HOST_COHERENT, preferring DEVICE_LOCAL;
 *                       HOST_CACHED for TMEM_TYPE_HOST_CACHED types
 * among the types a storage buffer may use (memoryTypeBits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"

#define NO_TYPE UINT32_MAX

static bool has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return true;
    return false;
}

static bool listed(const char *const *names, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (names[i] && !strcmp(names[i], name)) return true;
    return false;
}

/* Best type with all of `need`, scored by `prefer` bits present and `avoid` absent. */
static uint32_t pick_type(const tmem__vk *vk, VkMemoryPropertyFlags need, VkMemoryPropertyFlags prefer,
                          VkMemoryPropertyFlags avoid) {
    uint32_t best = NO_TYPE;
    int best_score = -1;
    for (uint32_t i = 0; i < vk->mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = vk->mem.memoryTypes[i].propertyFlags;
        if (!(vk->buffer_type_bits & (1u << i)) || (f & need) != need) continue;
        if (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) continue;
        int score = __builtin_popcount(f & prefer) * 2 + !(f & avoid);
        if (score > best_score) best = i, best_score = score;
    }
    return best;
}

/* The features compute shaders want (8/16-bit storage, small integer and
 * half types, subgroup size control), each enabled where supported; the
 * chain for VkDeviceCreateInfo::pNext is in out->chain (NULL: none). */
typedef struct compute_features {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceVulkan13Features v13;
    VkPhysicalDevice16BitStorageFeatures s16; /* Vulkan 1.1 devices */
    void *chain;
} compute_features;

static void keep_compute_features(tmem__vk *vk, compute_features *c, uint32_t api) {
    VkPhysicalDeviceFeatures all = c->f2.features;
    memset(&c->f2.features, 0, sizeof c->f2.features);
    c->f2.features.shaderInt16 = all.shaderInt16;
    c->f2.features.shaderInt64 = all.shaderInt64;
    tmem_vk_features *f = &vk->features;
    f->shader_int16 = all.shaderInt16, f->shader_int64 = all.shaderInt64;
    if (api >= VK_API_VERSION_1_2) {
        VkBool32 b16 = c->v11.storageBuffer16BitAccess, b8 = c->v12.storageBuffer8BitAccess;
        VkBool32 h = c->v12.shaderFloat16, i8 = c->v12.shaderInt8;
        VkBool32 sc = c->v13.subgroupSizeControl && c->v13.computeFullSubgroups;
        void *n11 = c->v11.pNext, *n12 = c->v12.pNext, *n13 = c->v13.pNext;
        memset(&c->v11, 0, sizeof c->v11), memset(&c->v12, 0, sizeof c->v12), memset(&c->v13, 0, sizeof c->v13);
        c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, c->v11.pNext = n11;
        c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, c->v12.pNext = n12;
        c->v13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, c->v13.pNext = n13;
        c->v11.storageBuffer16BitAccess = b16, c->v12.storageBuffer8BitAccess = b8;
        c->v12.shaderFloat16 = h, c->v12.shaderInt8 = i8;
        if (api >= VK_API_VERSION_1_3) c->v13.subgroupSizeControl = c->v13.computeFullSubgroups = sc;
        f->storage_buffer_16bit = b16, f->storage_buffer_8bit = b8, f->shader_float16 = h, f->shader_int8 = i8;
        f->subgroup_size_control = api >= VK_API_VERSION_1_3 && sc;
    } else {
        VkBool32 b16 = c->s16.storageBuffer16BitAccess;
        memset(&c->s16, 0, sizeof c->s16);
        c->s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
        c->s16.storageBuffer16BitAccess = f->storage_buffer_16bit = b16;
    }
}

static void enable_compute_features(tmem__vk *vk, compute_features *c) {
    memset(c, 0, sizeof *c);
    memset(&vk->features, 0, sizeof vk->features);
    if (!vk->fn.vkGetPhysicalDeviceFeatures2) return;
    VkPhysicalDeviceProperties p;
    vk->fn.vkGetPhysicalDeviceProperties(vk->physical, &p);
    /* the version both the instance and the device speak */
    uint32_t api = p.apiVersion < vk->api_version ? p.apiVersion : vk->api_version;
    c->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    if (api >= VK_API_VERSION_1_2) {
        c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
        c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
        c->v13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
        c->f2.pNext = &c->v11, c->v11.pNext = &c->v12;
        if (api >= VK_API_VERSION_1_3) c->v12.pNext = &c->v13;
    } else {
        c->s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
        c->f2.pNext = &c->s16;
    }
    vk->fn.vkGetPhysicalDeviceFeatures2(vk->physical, &c->f2);
    keep_compute_features(vk, c, api);
    c->chain = &c->f2;
}

static tmem_status create_own(tmem__vk *vk, uint32_t index, bool no_f64) {
    uint32_t version = VK_API_VERSION_1_1;
    if (vk->fn.vkEnumerateInstanceVersion) (void)vk->fn.vkEnumerateInstanceVersion(&version);
    vk->api_version = version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : version;
    if (vk->api_version < VK_API_VERSION_1_1) return tmem__err(TMEM_E_UNSUPPORTED);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "typedmem",
                             .pEngineName = "typedmem", .apiVersion = vk->api_version};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = vk->fn.vkCreateInstance(&ici, NULL, &vk->instance);
    if (r != VK_SUCCESS) return r == VK_ERROR_INCOMPATIBLE_DRIVER ? tmem__err(TMEM_E_UNSUPPORTED) : tmem__vk_status(r);
    vk->own_instance = true;
    tmem__vk_load_instance(vk);
    uint32_t n = 0;
    if (vk->fn.vkEnumeratePhysicalDevices(vk->instance, &n, NULL) != VK_SUCCESS || n == 0)
        return tmem__err(TMEM_E_NOT_FOUND);
    if (index >= n) return tmem__err(TMEM_E_NOT_FOUND);
    VkPhysicalDevice *devs = calloc(n, sizeof *devs);
    if (!devs) return tmem__err(TMEM_E_NO_MEMORY);
    r = vk->fn.vkEnumeratePhysicalDevices(vk->instance, &n, devs);
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) vk->physical = index < n ? devs[index] : VK_NULL_HANDLE;
    free(devs);
    if (!vk->physical) return tmem__err(TMEM_E_NOT_FOUND);
    /* a compute queue */
    uint32_t nq = 0;
    vk->fn.vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16) nq = 16;
    vk->fn.vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &nq, qf);
    vk->queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < nq && vk->queue_family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) vk->queue_family = i;
    if (vk->queue_family == UINT32_MAX) return tmem__err(TMEM_E_UNSUPPORTED);
    /* the memory extensions present */
    uint32_t ne = 0;
    if (vk->fn.vkEnumerateDeviceExtensionProperties(vk->physical, NULL, &ne, NULL) != VK_SUCCESS) ne = 0;
    VkExtensionProperties *ext = calloc(ne ? ne : 1, sizeof *ext);
    if (!ext) return tmem__err(TMEM_E_NO_MEMORY);
    if (ne && vk->fn.vkEnumerateDeviceExtensionProperties(vk->physical, NULL, &ne, ext) != VK_SUCCESS) ne = 0;
    const char *want[3];
    uint32_t nw = 0;
    if ((vk->has_budget = has_ext(ext, ne, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME)))
        want[nw++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    if ((vk->has_fd = has_ext(ext, ne, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME)))
        want[nw++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    if ((vk->has_host_import = has_ext(ext, ne, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)))
        want[nw++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    free(ext);
    compute_features cf;
    enable_compute_features(vk, &cf);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = vk->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    /* core features: float64 for the NV12 shader's exact division (in the
     * features2 chain when there is one, else pEnabledFeatures) */
    VkPhysicalDeviceFeatures have = {0}, on = {0};
    vk->fn.vkGetPhysicalDeviceFeatures(vk->physical, &have);
    on.shaderFloat64 = vk->has_f64 = have.shaderFloat64 && !no_f64;
    if (cf.chain) cf.f2.features.shaderFloat64 = on.shaderFloat64;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = cf.chain,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci, .enabledExtensionCount = nw,
                              .ppEnabledExtensionNames = want, .pEnabledFeatures = cf.chain ? NULL : &on};
    r = vk->fn.vkCreateDevice(vk->physical, &dci, NULL, &vk->device);
    if (r != VK_SUCCESS) return tmem__vk_status(r);
    vk->own_device = true;
    return TMEM_OK;
}

static tmem_status adopt(tmem__vk *vk, const tmem_vk_native *nat) {
    if (!nat->instance || !nat->physical_device || !nat->device) return tmem__err(TMEM_E_INVALID_ARG);
    vk->instance = nat->instance;
    vk->physical = nat->physical_device;
    vk->device = nat->device;
    vk->queue_family = nat->queue_family;
    vk->api_version = nat->api_version ? nat->api_version : VK_API_VERSION_1_1;
    tmem__vk_load_instance(vk);
    const char *const *e = nat->enabled_extensions;
    uint32_t n = e ? nat->enabled_extension_count : 0;
    vk->has_budget = listed(e, n, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    vk->has_fd = listed(e, n, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
    vk->has_host_import = listed(e, n, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    vk->features = nat->features;
    vk->has_f64 = nat->shader_float64;
    return TMEM_OK;
}

static void vk_close(tmem__vk *vk) {
    if (vk->device && vk->fn.vkDeviceWaitIdle) (void)vk->fn.vkDeviceWaitIdle(vk->device);
    if (vk->device) tmem__vk_convert_destroy(vk);
    if (vk->own_device && vk->device) vk->fn.vkDestroyDevice(vk->device, NULL);
    if (vk->own_instance && vk->instance) vk->fn.vkDestroyInstance(vk->instance, NULL);
    tmem__vk_unload(vk);
    tmem__os_mutex_destroy(&vk->submit_lock);
    free(vk);
}

static void vk_destroy(tmem_gpu *gpu) { vk_close(tmem__vk_of(gpu)); }

/* Which memory types a storage/transfer buffer may live in. */
static tmem_status probe_buffer_types(tmem__vk *vk) {
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 4096,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT};
    VkBuffer b;
    VkResult r = vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &b);
    if (r != VK_SUCCESS) return tmem__vk_status(r);
    VkMemoryRequirements req;
    vk->fn.vkGetBufferMemoryRequirements(vk->device, b, &req);
    vk->fn.vkDestroyBuffer(vk->device, b, NULL);
    vk->buffer_type_bits = req.memoryTypeBits;
    return TMEM_OK;
}

/* Heap budget and usage of memory type `t`: the driver's with
 * VK_EXT_memory_budget, else the heap size and our own allocations. */
void tmem__vk_heap_budget(tmem_gpu *gpu, uint32_t t, tmem_device_memory_info *out);
void tmem__vk_heap_budget(tmem_gpu *gpu, uint32_t t, tmem_device_memory_info *out) {
    tmem__vk *vk = tmem__vk_of(gpu);
    uint32_t h = vk->mem.memoryTypes[t].heapIndex;
    snprintf(out->backend, sizeof out->backend, "vulkan");
    snprintf(out->device, sizeof out->device, "%.63s", vk->props.deviceName);
    out->memory_type = t;
    out->property_flags = vk->mem.memoryTypes[t].propertyFlags;
    out->heap_index = h;
    out->heap_size = vk->mem.memoryHeaps[h].size;
    out->budget = out->heap_size;
    out->backend_bytes = tmem__gpu_device_bytes(gpu);
    out->usage = out->backend_bytes;
    if (vk->has_budget && vk->fn.vkGetPhysicalDeviceMemoryProperties2) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 p2 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &b};
        vk->fn.vkGetPhysicalDeviceMemoryProperties2(vk->physical, &p2);
        out->budget = b.heapBudget[h];
        out->usage = b.heapUsage[h];
        out->budget_from_driver = true;
    }
}

static tmem_status vk_info(tmem_gpu *gpu, tmem_gpu_info *out) {
    tmem__vk *vk = tmem__vk_of(gpu);
    snprintf(out->device, sizeof out->device, "%.63s", vk->props.deviceName);
    snprintf(out->driver, sizeof out->driver, "Vulkan %u.%u.%u, driver 0x%x",
             VK_API_VERSION_MAJOR(vk->props.apiVersion), VK_API_VERSION_MINOR(vk->props.apiVersion),
             VK_API_VERSION_PATCH(vk->props.apiVersion), vk->props.driverVersion);
    snprintf(out->features, sizeof out->features, "%s%s%s%s%s", vk->has_budget ? "memory_budget " : "",
             vk->has_host_import ? "external_memory_host " : "", vk->has_fd ? "external_memory_fd " : "",
             vk->has_f64 ? "shader_float64 " : "", (gpu->flags & TMEM_GPU_EXPORTABLE) ? "export_fd" : "");
    size_t len = strlen(out->features);
    if (len && out->features[len - 1] == ' ') out->features[len - 1] = 0;
    uint32_t seen[TMEM_GPU_MAX_TYPES], n = 0;
    const uint32_t visible = 1u << TMEM_PLACEMENT_DEVICE_HOST_VISIBLE;
    uint32_t order[] = {vk->type_of[TMEM_PLACEMENT_DEVICE],
                        vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE], vk->type_cached};
    const uint32_t serves[] = {1u << TMEM_PLACEMENT_DEVICE, visible,
                               TMEM_DEVICE_SERVES_HOST_CACHED};
    for (unsigned i = 0; i < 3; i++) {
        uint32_t t = order[i];
        if (t == NO_TYPE) continue;
        /* a placement not registered (TMEM_GPU_DEVICE_ONLY) is served by none */
        if (i && !(gpu->placements & visible)) continue;
        uint32_t k = 0;
        while (k < n && seen[k] != t) k++;
        if (k == n) {
            if (n >= TMEM_GPU_MAX_TYPES) continue;
            seen[n] = t;
            tmem__vk_heap_budget(gpu, t, &out->types[n++]);
        }
        out->types[k].placements |= serves[i];
    }
    out->type_count = n;
    return TMEM_OK;
}

static tmem_status vk_export(tmem_gpu *gpu, const tmem_device_span *span, int *fd) {
    tmem__vk *vk = tmem__vk_of(gpu);
    if (!vk->fn.vkGetMemoryFdKHR) return tmem__err(TMEM_E_UNSUPPORTED);
    VkMemoryGetFdInfoKHR gi = {.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
                               .memory = (VkDeviceMemory)span->memory,
                               .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkResult r = vk->fn.vkGetMemoryFdKHR(vk->device, &gi, fd);
    if (r != VK_SUCCESS) *fd = -1;
    return tmem__vk_status(r);
}

static const tmem__gpu_ops vk_ops = {vk_destroy, vk_info, vk_export};

tmem_status tmem__vk_open(tmem_gpu *gpu, const tmem_gpu_desc *desc) {
    tmem__vk *vk = calloc(1, sizeof *vk);
    if (!vk) return tmem__err(TMEM_E_NO_MEMORY);
    if (tmem__os_mutex_init(&vk->submit_lock, 0)) {
        free(vk);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    size_t objects_before = tmem__os_lib_count();
    tmem_status st = tmem__vk_load(vk);
    if (st == TMEM_OK)
        st = desc->native ? adopt(vk, desc->native)
                          : create_own(vk, desc->device_index, desc->flags & TMEM_GPU_NO_FLOAT64);
    tmem__os_lib_pin_since(objects_before); /* the loader and the driver stay mapped */
    if (st != TMEM_OK) {
        vk_close(vk);
        return st;
    }
    tmem__vk_load_device(vk);
    vk->fn.vkGetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
    vk->fn.vkGetPhysicalDeviceProperties(vk->physical, &vk->props);
    vk->fn.vkGetPhysicalDeviceMemoryProperties(vk->physical, &vk->mem);
    if (vk->has_host_import && vk->fn.vkGetPhysicalDeviceProperties2) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &hp};
        vk->fn.vkGetPhysicalDeviceProperties2(vk->physical, &p2);
        vk->host_import_align = hp.minImportedHostPointerAlignment;
    }
    if (!vk->has_host_import || !vk->fn.vkGetMemoryHostPointerPropertiesEXT) vk->has_host_import = false;
    if (!vk->fn.vkGetMemoryFdKHR) vk->has_fd = false;
    if ((desc->flags & TMEM_GPU_EXPORTABLE) && !vk->has_fd) st = tmem__err(TMEM_E_UNSUPPORTED);
    if ((desc->flags & TMEM_GPU_HOST_IMPORT) && !vk->has_host_import) st = tmem__err(TMEM_E_UNSUPPORTED);
    if (st == TMEM_OK) st = probe_buffer_types(vk);
    if (st != TMEM_OK) {
        vk_close(vk);
        return st;
    }
    for (unsigned p = 0; p < TMEM_PLACEMENT_COUNT; p++) vk->type_of[p] = NO_TYPE;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    vk->type_of[TMEM_PLACEMENT_DEVICE] = pick_type(vk, local, 0, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE] = pick_type(vk, visible, local, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    vk->type_cached = pick_type(vk, visible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0, 0);
    if (vk->type_of[TMEM_PLACEMENT_DEVICE] == NO_TYPE) {
        vk_close(vk);
        return tmem__err(TMEM_E_UNSUPPORTED);
    }
    gpu->impl = vk;
    gpu->ops = &vk_ops;
    /* chunks: a power of two no larger than the driver allows in one object */
    uint64_t chunk = desc->chunk_size ? desc->chunk_size : 64ull << 20;
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    if (vk->fn.vkGetPhysicalDeviceProperties2) vk->fn.vkGetPhysicalDeviceProperties2(vk->physical, &p2);
    vk->max_alloc = m3.maxMemoryAllocationSize;
    while (m3.maxMemoryAllocationSize && chunk > m3.maxMemoryAllocationSize) chunk >>= 1;
    if (chunk < 65536) chunk = 65536;
    gpu->chunk = chunk;
    tmem__vk_backend_init(gpu);
    gpu->placements = 1u << TMEM_PLACEMENT_DEVICE;
    if (!(desc->flags & TMEM_GPU_DEVICE_ONLY) && vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE] != NO_TYPE)
        gpu->placements |= 1u << TMEM_PLACEMENT_DEVICE_HOST_VISIBLE;
    return TMEM_OK;
}

tmem_status tmem_vk_get_native(tmem_gpu *gpu, tmem_vk_native *out, VkQueue *queue) {
    if (out) memset(out, 0, sizeof *out);
    if (queue) *queue = VK_NULL_HANDLE;
    if (!gpu || gpu->magic != TMEM__GPU_MAGIC || gpu->api != TMEM_GPU_VULKAN || !out)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__vk *vk = tmem__vk_of(gpu);
    out->instance = vk->instance;
    out->physical_device = vk->physical;
    out->device = vk->device;
    out->queue_family = vk->queue_family;
    out->api_version = vk->api_version;
    out->features = vk->features;
    out->shader_float64 = vk->has_f64;
    out->get_instance_proc_addr = vk->fn.vkGetInstanceProcAddr;
    out->get_device_proc_addr = vk->fn.vkGetDeviceProcAddr;
    if (queue) *queue = vk->queue;
    return TMEM_OK;
}
