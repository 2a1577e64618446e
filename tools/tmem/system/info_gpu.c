/* `tmem info`: the GPU backends typedmem_gpu was built with, and for each
 * one found on this machine its device, features, the memory type chosen
 * per placement, and the heap's size, budget and usage. */
#include <stdio.h>
#include <string.h>
#include "system/info_gpu.h"
#include "typedmem/gpu.h"

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
    putchar('"');
}

/* The placements of `bits` (and host_cached for TMEM_DEVICE_SERVES_HOST_CACHED). */
static void placements(uint32_t bits, bool json) {
    bool first = true;
    for (unsigned p = 0; p <= TMEM_PLACEMENT_COUNT; p++) {
        uint32_t bit = p < TMEM_PLACEMENT_COUNT ? 1u << p : TMEM_DEVICE_SERVES_HOST_CACHED;
        if (!(bits & bit)) continue;
        const char *name = p < TMEM_PLACEMENT_COUNT ? tmem_placement_name((tmem_placement)p)
                                                    : "device_host_visible+host_cached";
        printf(json ? "%s\"%s\"" : "%s%s", first ? "" : json ? "," : " ", name);
        first = false;
    }
}

/* The devices of an API by index (what `tmem run --device vulkan:N` takes):
 * a JSON array of names, or one text line each. */
static void devices(tmem_gpu_api api, bool json) {
    if (json) printf(",\"devices\":[");
    for (uint32_t idx = 0; idx < 16; idx++) {
        tmem_context *ctx = NULL;
        tmem_context_desc cd = {0};
        cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
        tmem_gpu *gpu = NULL;
        tmem_gpu_desc gd = {0};
        gd.api = api;
        gd.device_index = idx;
        tmem_gpu_info gi;
        tmem_status st = tmem_context_create(&cd, &ctx);
        if (st == TMEM_OK) st = tmem_gpu_attach(ctx, &gd, &gpu);
        if (st == TMEM_OK) st = tmem_gpu_get_info(gpu, &gi);
        if (st == TMEM_OK && json) {
            if (idx) printf(",");
            json_str(gi.device);
        } else if (st == TMEM_OK) {
            printf("          device %s:%u  %s\n", tmem_gpu_api_name(api), idx, gi.device);
        }
        tmem_gpu_release(gpu);
        tmem_context_destroy(ctx);
        if (st != TMEM_OK) break;
    }
    if (json) printf("]");
}

void tmem_info_gpu(bool json) {
    if (json) printf("[");
    else printf("\ngpu backends (typedmem_gpu)\n");
    for (int api = 0; api < TMEM_GPU_API_COUNT; api++) {
        const char *name = tmem_gpu_api_name((tmem_gpu_api)api);
        tmem_context *ctx = NULL;
        tmem_context_desc cd = {0};
        cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
        tmem_status st = tmem_gpu_api_built((tmem_gpu_api)api) ? tmem_context_create(&cd, &ctx) : TMEM_E_UNSUPPORTED;
        tmem_gpu *gpu = NULL;
        tmem_gpu_desc gd = {0};
        gd.api = (tmem_gpu_api)api;
        if (st == TMEM_OK) st = tmem_gpu_attach(ctx, &gd, &gpu);
        tmem_gpu_info gi;
        if (st == TMEM_OK) st = tmem_gpu_get_info(gpu, &gi);
        const char *why = !tmem_gpu_api_built((tmem_gpu_api)api) ? "not built (headers not found at build time)"
                          : st == TMEM_E_UNSUPPORTED                ? "driver library not found or device unsuitable"
                          : st == TMEM_E_NOT_FOUND                  ? "no device"
                                                                    : tmem_status_name(st);
        if (json) {
            printf("%s{\"api\":\"%s\",\"built\":%s,\"available\":%s", api ? "," : "", name,
                   tmem_gpu_api_built((tmem_gpu_api)api) ? "true" : "false", st == TMEM_OK ? "true" : "false");
            if (st != TMEM_OK) {
                printf(",\"reason\":");
                json_str(why);
            } else {
                printf(",\"device\":");
                json_str(gi.device);
                printf(",\"driver\":");
                json_str(gi.driver);
                printf(",\"features\":");
                json_str(gi.features);
                printf(",\"chunk_size\":%llu,\"placements\":[", (unsigned long long)gi.chunk_size);
                placements(gi.placements, true);
                printf("],\"memory_types\":[");
                for (uint32_t i = 0; i < gi.type_count; i++) {
                    const tmem_device_memory_info *m = &gi.types[i];
                    printf("%s{\"index\":%u,\"property_flags\":%u,\"heap\":%u,\"heap_size\":%llu,\"budget\":%llu,"
                           "\"usage\":%llu,\"budget_from_driver\":%s,\"serves\":[",
                           i ? "," : "", m->memory_type, m->property_flags, m->heap_index,
                           (unsigned long long)m->heap_size, (unsigned long long)m->budget,
                           (unsigned long long)m->usage, m->budget_from_driver ? "true" : "false");
                    placements(m->placements, true);
                    printf("]}");
                }
                printf("]");
                devices((tmem_gpu_api)api, true);
            }
            printf("}");
        } else if (st != TMEM_OK) {
            printf("  %-7s %s\n", name, why);
        } else {
            printf("  %-7s %s (%s), chunk %llu KiB\n          features: %s\n          placements: ", name, gi.device,
                   gi.driver, (unsigned long long)(gi.chunk_size >> 10), gi.features[0] ? gi.features : "-");
            placements(gi.placements, false);
            printf("\n");
            for (uint32_t i = 0; i < gi.type_count; i++) {
                const tmem_device_memory_info *m = &gi.types[i];
                printf("          memory type %u flags 0x%x heap %u: %.1f MiB, budget %.1f MiB, "
                       "usage %.1f MiB%s\n"
                       "            serves: ",
                       m->memory_type, m->property_flags, m->heap_index,
                       (double)m->heap_size / 1048576.0, (double)m->budget / 1048576.0,
                       (double)m->usage / 1048576.0,
                       m->budget_from_driver ? " (driver)" : " (heap size; usage = ours)");
                placements(m->placements, false);
                printf("\n");
            }
            devices((tmem_gpu_api)api, false);
        }
        tmem_gpu_release(gpu);
        tmem_context_destroy(ctx);
    }
    if (json) printf("]");
}
