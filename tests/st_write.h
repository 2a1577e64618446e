/* Test helper: build safetensors images in C (header JSON + data), the way
 * the reference writer lays them out: tensors in the order added, data
 * packed back to back, header padded with spaces to a multiple of 8.
 *
 *   st_build b; st_init(&b);
 *   st_add(&b, "w", "F32", 2, (uint64_t[]){2, 3}, data, 24);
 *   st_meta(&b, "format", "pt");
 *   uint8_t *img; size_t n; st_finish(&b, &img, &n);   // malloc'd, exact size
 *   free(img);
 * Header-only and static: every test that includes it gets its own copy. */
#ifndef TMEM_TEST_ST_WRITE_H
#define TMEM_TEST_ST_WRITE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

typedef struct st_build {
    char *hdr;
    size_t hlen, hcap;
    uint8_t *data;
    size_t dlen, dcap;
    char *meta;
    size_t mlen, mcap;
    int n;
} st_build;

static void st__grow(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    *p = realloc(*p, c);
    *cap = c;
}

static void st__cat(char **p, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s);
    st__grow(p, cap, *len + n + 1);
    memcpy(*p + *len, s, n + 1);
    *len += n;
}

static inline void st_init(st_build *b) { memset(b, 0, sizeof *b); }

/* A raw header entry (for hostile files): `json` is the value text. */
static inline void st_add_raw(st_build *b, const char *name, const char *json) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s\"%s\":%s", b->n++ ? "," : "", name, json);
    if (n < 0 || (size_t)n >= sizeof buf) abort(); /* a test's own entries are short */
    st__cat(&b->hdr, &b->hlen, &b->hcap, buf);
}

/* Raw bytes appended to the data section. */
static inline void st_add_bytes(st_build *b, const void *p, size_t n) {
    st__grow((char **)&b->data, &b->dcap, b->dlen + n + 1);
    if (n) memcpy(b->data + b->dlen, p, n);
    b->dlen += n;
}

static inline void st_add(st_build *b, const char *name, const char *dtype, int nd, const uint64_t *shape,
                          const void *bytes, size_t n) {
    char val[400];
    int k = snprintf(val, sizeof val, "{\"dtype\":\"%s\",\"shape\":[", dtype);
    for (int i = 0; i < nd; i++) k += snprintf(val + k, sizeof val - (size_t)k, "%s%llu", i ? "," : "", (unsigned long long)shape[i]);
    snprintf(val + k, sizeof val - (size_t)k, "],\"data_offsets\":[%zu,%zu]}", b->dlen, b->dlen + n);
    st_add_raw(b, name, val);
    st_add_bytes(b, bytes, n);
}

/* F32 values as a tensor. */
static inline void st_add_f32(st_build *b, const char *name, int nd, const uint64_t *shape, const float *v) {
    uint64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    st_add(b, name, "F32", nd, shape, v, (size_t)n * 4);
}

static inline void st_meta(st_build *b, const char *k, const char *v) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s\"%s\":\"%s\"", b->mlen ? "," : "", k, v);
    st__cat(&b->meta, &b->mlen, &b->mcap, buf);
}

/* Header JSON text of the image (for tests that patch it). */
static inline char *st_header_json(const st_build *b) {
    size_t cap = b->hlen + b->mlen + 64;
    char *h = malloc(cap);
    if (b->mlen) snprintf(h, cap, "{\"__metadata__\":{%s}%s%s}", b->meta, b->n ? "," : "", b->hdr ? b->hdr : "");
    else snprintf(h, cap, "{%s}", b->hdr ? b->hdr : "");
    return h;
}

/* An image with `json` as its header (padded to 8 with spaces) and b's data. */
static inline void st_image(const st_build *b, const char *json, uint8_t **out, size_t *n) {
    size_t hl = strlen(json), pad = (8 - hl % 8) % 8;
    *n = 8 + hl + pad + b->dlen;
    *out = malloc(*n ? *n : 1);
    uint64_t H = hl + pad;
    for (int i = 0; i < 8; i++) (*out)[i] = (uint8_t)(H >> (8 * i));
    memcpy(*out + 8, json, hl);
    memset(*out + 8 + hl, ' ', pad);
    if (b->dlen) memcpy(*out + 8 + hl + pad, b->data, b->dlen);
}

static inline void st_finish(st_build *b, uint8_t **out, size_t *n) {
    char *h = st_header_json(b);
    st_image(b, h, out, n);
    free(h);
}

static inline void st_free(st_build *b) {
    free(b->hdr);
    free(b->data);
    free(b->meta);
    memset(b, 0, sizeof *b);
}

static inline int st_write_file(const char *path, const uint8_t *img, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(img, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

#endif
