/* Device bytes in traces: a context with a device type (the fake backend of
 * fake_device.h) and a host type, one role allocating in both. The trace
 * records the device type's placement (ring snapshot, streamed file, saved
 * file), the replay counts device bytes per role, and the peak analysis and
 * the exports (summary JSON, Chrome JSON, peak text, HTML) show the device
 * peak and what was alive at it by role, host bytes excluded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "fake_device.h"
#include "harness.h"
#include "trace/trace_internal.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

typedef struct world {
    tmem_context *ctx;
    fake_dev dev;
    tmem_type *vram, *host;
    tmem_heap *hv, *hh;
} world;

static bool world_make(world *w) {
    memset(w, 0, sizeof *w);
    tmem_context_desc cd = {0};
    cd.budget = 64 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &w->ctx) != TMEM_OK) return false;
    w->dev = fake_dev_make();
    w->dev.be.user = &w->dev;
    if (tmem__context_set_backend(w->ctx, TMEM_PLACEMENT_DEVICE, &w->dev.be) != TMEM_OK)
        return false;
    tmem_type_desc td = {0};
    td.name = "/memory/host";
    td.reserve = 16 * MiB;
    if (tmem_type_create(w->ctx, &td, &w->host) != TMEM_OK) return false;
    td.name = "/memory/vram";
    td.placement = TMEM_PLACEMENT_DEVICE;
    if (tmem_type_create(w->ctx, &td, &w->vram) != TMEM_OK) return false;
    tmem_heap_desc hd = {0};
    hd.type = w->vram;
    hd.size = 8 * MiB;
    if (tmem_heap_create(w->ctx, &hd, &w->hv) != TMEM_OK) return false;
    hd.type = w->host;
    return tmem_heap_create(w->ctx, &hd, &w->hh) == TMEM_OK;
}

static tmem_status alloc(tmem_heap *h, uint64_t size, tmem_role role, uint64_t *offset) {
    tmem_alloc_desc ad = {0};
    ad.size = size;
    ad.role = role;
    tmem_alloc_info ai;
    tmem_status st = tmem_heap_alloc_ex(h, &ad, &ai);
    *offset = ai.offset;
    return st;
}

/* The session: the device peak (1.5 MiB: activation 1 MiB + kv 512 KiB) comes
 * before the overall peak (a 4 MiB host allocation late). */
static void run_session(world *w) {
    uint64_t act_dev, act_host, kv_dev, act2, big;
    REQUIRE_OK(alloc(w->hv, 1 * MiB, TMEM_ROLE_ACTIVATION, &act_dev));
    REQUIRE_OK(alloc(w->hh, 64 * KiB, TMEM_ROLE_ACTIVATION, &act_host));
    REQUIRE_OK(alloc(w->hv, 512 * KiB, TMEM_ROLE_KV_CACHE, &kv_dev));
    REQUIRE_OK(tmem_heap_free_offset(w->hv, act_dev));
    REQUIRE_OK(alloc(w->hv, 256 * KiB, TMEM_ROLE_ACTIVATION, &act2));
    REQUIRE_OK(alloc(w->hh, 4 * MiB, TMEM_ROLE_SCRATCH, &big));
    REQUIRE_OK(tmem_heap_free_offset(w->hh, big));
    (void)act_host, (void)kv_dev, (void)act2;
}

static void check_peak(const tmem_trace_data *d, const world *w) {
    CHECK(tmem_trace_data_type_placement(d, (int32_t)w->vram->index) == TMEM_PLACEMENT_DEVICE);
    CHECK(tmem_trace_data_type_placement(d, (int32_t)w->host->index) == TMEM_PLACEMENT_HOST);
    CHECK(tmem_trace_data_type_placement(d, -1) == TMEM_PLACEMENT_HOST);
    CHECK(tmem_trace_data_type_placement(NULL, 0) == TMEM_PLACEMENT_HOST);
    tmem_trace_peak_info p;
    REQUIRE_OK(tmem_trace_peak(d, &p));
    CHECK(p.peak_bytes == 64 * KiB + 512 * KiB + 256 * KiB + 4 * MiB);
    CHECK_MSG(p.device_peak_bytes == 1536 * KiB, "device peak %llu",
              (unsigned long long)p.device_peak_bytes);
    CHECK(p.device_live_count == 2 && p.device_peak_event < p.peak_event);
    REQUIRE(p.device_by_role_count == 2);
    CHECK(!strcmp(p.device_by_role[0].label, "activation") && p.device_by_role[0].bytes == 1 * MiB);
    CHECK(p.device_by_role[0].count == 1 && p.device_by_role[0].id == TMEM_ROLE_ACTIVATION);
    CHECK(!strcmp(p.device_by_role[1].label, "kv_cache") && p.device_by_role[1].bytes == 512 * KiB);
}

static char *export_text(const tmem_trace_data *d, tmem_trace_format f) {
    char *text = NULL;
    size_t len = 0;
    if (tmem_trace_export(d, f, NULL, &text, &len) != TMEM_OK) return NULL;
    return text;
}

/* No line of the Chrome JSON's device counter holds a host byte: the
 * activation role's device value is 1 MiB while its total is 1 MiB + 64 KiB. */
static void check_chrome(const char *json) {
    uint32_t device_lines = 0;
    for (const char *l = json; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
        if (strstr(line, "\"name\":\"device in use by role\"")) {
            device_lines++;
            CHECK_MSG(!strstr(line, "\"activation\":1114112"), "host bytes in %.160s", line);
            CHECK(!strstr(line, "\"scratch\"")); /* scratch never allocated on the device */
        }
        l = e ? e + 1 : NULL;
    }
    CHECK(device_lines == 7); /* one per alloc/free, as the other in-use counters */
    CHECK(strstr(json, "\"kv_cache\":524288,\"activation\":1048576") != NULL); /* role order */
}

static void test_device_trace(void) {
    world w;
    REQUIRE(world_make(&w));
    char dir[256], path[300], saved[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/dev.tmtrace", dir);
    snprintf(saved, sizeof saved, "%s/dev-saved.tmtrace", dir);
    tmem_trace_desc td = {0};
    td.capacity = 1024;
    td.path = path;
    td.flags = TMEM_TRACE_NO_COMMITS;
    REQUIRE_OK(tmem_trace_start(w.ctx, &td));
    run_session(&w);
    tmem_trace_data *snap;
    REQUIRE_OK(tmem_trace_snapshot(w.ctx, &snap));
    REQUIRE_OK(tmem_trace_stop(w.ctx));
    check_peak(snap, &w);
    /* The streamed file and a saved copy carry the placement too. */
    REQUIRE_OK(tmem_trace_data_save(snap, saved));
    const char *files[] = {path, saved};
    for (int i = 0; i < 2; i++) {
        tmem_trace_data *r;
        REQUIRE_OK(tmem_trace_load(files[i], &r));
        check_peak(r, &w);
        tmem_trace_data_destroy(r);
        remove(files[i]);
    }
    CHECK(remove(dir) == 0); /* the temporary directory goes too: empty, or this fails (issue 21) */
    char *js = export_text(snap, TMEM_TRACE_FORMAT_SUMMARY_JSON);
    REQUIRE(js);
    CHECK(strstr(js, "\"name\":\"/memory/vram\",\"budget\":0,\"device\":true") != NULL);
    CHECK(strstr(js, "\"name\":\"/memory/host\",\"budget\":0,\"device\":false") != NULL);
    CHECK(strstr(js, "\"device\":{\"peak\":{\"bytes\":1572864,") != NULL);
    CHECK(strstr(js,
                 "\"by_role\":[{\"label\":\"activation\",\"id\":4,\"bytes\":1048576,\"count\":1},"
                 "{\"label\":\"kv_cache\",\"id\":2,\"bytes\":524288,\"count\":1}]}}") != NULL);
    tmem_trace_string_free(js);
    char *chrome = export_text(snap, TMEM_TRACE_FORMAT_CHROME_JSON);
    REQUIRE(chrome);
    check_chrome(chrome);
    tmem_trace_string_free(chrome);
    char *text = export_text(snap, TMEM_TRACE_FORMAT_PEAK_TEXT);
    REQUIRE(text);
    CHECK(strstr(text, "device peak in use: 1.50 MiB") != NULL);
    CHECK(strstr(text, "device bytes alive at the device peak:") != NULL);
    tmem_trace_string_free(text);
    char *html = export_text(snap, TMEM_TRACE_FORMAT_HTML);
    REQUIRE(html);
    CHECK(strstr(html, "id=\"tmem-device-role\"") != NULL);
    tmem_trace_string_free(html);
    tmem_trace_data_destroy(snap);
    tmem_heap_destroy(w.hv);
    tmem_heap_destroy(w.hh);
    tmem_context_destroy(w.ctx);
}

/* A host-only trace has no PLACE record, no device counter and an empty
 * device section: the file reads as before. */
static void test_host_only(void) {
    tmem_trace_data *d;
    REQUIRE_OK(tmem__trace_data_new(&d));
    REQUIRE_OK(tmem__trace_data_set_type(d, 0, "/memory/host", 0));
    tmem_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = TMEM_TRACE_ALLOC;
    ev.role = TMEM_ROLE_ACTIVATION;
    ev.size = 4096;
    ev.time_ns = 1;
    REQUIRE_OK(tmem__trace_data_push(d, &ev));
    tmem__text sb;
    tmem__text_init(&sb);
    tmem__trace_write_all(d, &sb);
    char *bytes = NULL;
    size_t len = 0;
    REQUIRE_OK(tmem__text_take(&sb, &bytes, &len));
    bool place = false;
    for (size_t pos = TMEM__TRACE_HEADER_SIZE; pos + 2 <= len; pos += 2u + (uint8_t)bytes[pos + 1])
        if (bytes[pos] == TMEM__REC_PLACEMENT) place = true;
    CHECK(!place);
    free(bytes);
    tmem_trace_peak_info p;
    REQUIRE_OK(tmem_trace_peak(d, &p));
    CHECK(p.peak_bytes == 4096 && p.device_peak_bytes == 0 && p.device_by_role_count == 0);
    char *chrome = export_text(d, TMEM_TRACE_FORMAT_CHROME_JSON);
    REQUIRE(chrome);
    CHECK(!strstr(chrome, "device in use by role"));
    tmem_trace_string_free(chrome);
    tmem_trace_data_destroy(d);
}

/* PLACE records the reader refuses: a host placement (never written), an
 * out-of-range one, a type placed twice, a wrong length. */
static void test_hostile_placement(void) {
    tmem_trace_data *d;
    REQUIRE_OK(tmem__trace_data_new(&d));
    REQUIRE_OK(tmem__trace_data_set_type(d, 3, "/memory/vram", 0));
    REQUIRE_OK(tmem__trace_data_set_placement(d, 3, TMEM_PLACEMENT_DEVICE_HOST_VISIBLE));
    CHECK_ST(tmem__trace_data_set_placement(d, 64, TMEM_PLACEMENT_DEVICE), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__trace_data_set_placement(d, 3, TMEM_PLACEMENT_COUNT), TMEM_E_INVALID_ARG);
    tmem__text sb;
    tmem__text_init(&sb);
    tmem__trace_write_all(d, &sb);
    tmem_trace_data_destroy(d);
    char *good = NULL;
    size_t len = 0;
    REQUIRE_OK(tmem__text_take(&sb, &good, &len));
    size_t at = 0;
    for (size_t pos = TMEM__TRACE_HEADER_SIZE; pos + 2 <= len; pos += 2u + (uint8_t)good[pos + 1])
        if (good[pos] == TMEM__REC_PLACEMENT) at = pos;
    REQUIRE(at && (uint8_t)good[at + 1] == 2 && good[at + 2] == 3);
    tmem_trace_data *r;
    REQUIRE_OK(tmem_trace_load_memory(good, len, &r));
    CHECK(tmem_trace_data_type_placement(r, 3) == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE);
    tmem_trace_data_destroy(r);
    uint8_t *bad = malloc(len + 4);
    REQUIRE(bad);
    const uint8_t placements[] = {TMEM_PLACEMENT_HOST, TMEM_PLACEMENT_PINNED, TMEM_PLACEMENT_COUNT,
                                  0xff};
    for (size_t i = 0; i < sizeof placements; i++) {
        memcpy(bad, good, len);
        bad[at + 3] = placements[i];
        CHECK_ST(tmem_trace_load_memory(bad, len, &r), TMEM_E_CORRUPT);
    }
    memcpy(bad, good, len);
    bad[at + 2] = 64; /* type index out of range */
    CHECK_ST(tmem_trace_load_memory(bad, len, &r), TMEM_E_CORRUPT);
    /* the record twice */
    memcpy(bad, good, at + 4);
    memcpy(bad + at + 4, good + at, len - at);
    CHECK_ST(tmem_trace_load_memory(bad, len + 4, &r), TMEM_E_CORRUPT);
    /* a length of 3 (one stray byte): the payload must be exactly 2 */
    memcpy(bad, good, at + 4);
    bad[at + 1] = 3;
    bad[at + 4] = 0;
    memcpy(bad + at + 5, good + at + 4, len - at - 4);
    CHECK_ST(tmem_trace_load_memory(bad, len + 1, &r), TMEM_E_CORRUPT);
    free(bad);
    free(good);
}

int main(void) {
    RUN(test_device_trace);
    RUN(test_host_only);
    RUN(test_hostile_placement);
    return tmem_test_finish();
}
