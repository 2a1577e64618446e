/* The image path: a camera-like NV12 frame in a surface (a sealed memfd in
 * /memory/images, as a camera or decoder would hand it over), converted in
 * one fused pass (resize to the vision encoder's input, BT.601 YUV -> RGB,
 * scale, mean/std, HWC -> CHW) straight into the f32 pixel tensor the
 * encoder reads, allocated in a transient heap. No other copy of the image
 * exists: no RGB buffer, no texture, no HWC float staging. */
#include <string.h>
#include "demo/demo_session.h"

tmem_status demo_step_image(session *s) {
    uint32_t w = s->opt->frame_width ? s->opt->frame_width : 1280;
    uint32_t h = s->opt->frame_height ? s->opt->frame_height : 720;
    tmem_surface_desc d = {0};
    d.width = w;
    d.height = h;
    d.format = TMEM_FORMAT_NV12;
    d.name = "camera-frame";
    tmem_status st = tmem_surface_create(s->ctx, &d, &s->own->frame);
    if (st != TMEM_OK) return st;
    tmem_surface_layout L;
    tmem_surface_info si;
    if ((st = tmem_surface_get_info(s->own->frame, &si)) != TMEM_OK) return st;
    L = si.layout;
    if ((st = tmem_surface_lock(s->own->frame, 0, NULL)) != TMEM_OK) return st;
    /* A smooth scene with sensor noise: luma gradients, slowly varying chroma. */
    uint8_t *y = tmem_surface_plane_ptr(s->own->frame, 0), *uv = tmem_surface_plane_ptr(s->own->frame, 1);
    uint32_t rng = 0x9e3779b9u;
    for (uint32_t r = 0; r < h; r++)
        for (uint32_t c = 0; c < w; c++) {
            rng = rng * 1664525u + 1013904223u;
            y[(uint64_t)r * L.planes[0].bytes_per_row + c] = (uint8_t)(16 + (c * 160 / w + r * 60 / h) + (rng >> 29));
        }
    for (uint32_t r = 0; r < h / 2; r++)
        for (uint32_t c = 0; c < w / 2; c++) {
            uint8_t *e = uv + (uint64_t)r * L.planes[1].bytes_per_row + 2u * c;
            e[0] = (uint8_t)(128 + (int)(c * 64 / w) - 16);
            e[1] = (uint8_t)(128 + (int)(r * 64 / h) - 16);
        }
    return tmem_surface_unlock(s->own->frame, 0, NULL);
}

tmem_status demo_step_pixels(session *s) {
    uint64_t bytes = 3ull * s->side * s->side * sizeof(float);
    tmem_alloc_desc ad = {0};
    ad.size = bytes;
    ad.alignment = 64;
    ad.role = TMEM_ROLE_IMAGE;
    ad.name = "pixel_values";
    tmem_alloc_info ai;
    tmem_status st = tmem_heap_alloc_ex(s->pixels, &ad, &ai);
    if (st != TMEM_OK) return st;
    s->pixel_values = ai.ptr;
    tmem_tensor_view dst;
    if ((st = tmem_tensor_view_chw(s->pixel_values, TMEM_DTYPE_F32, 3, s->side, s->side, &dst)) != TMEM_OK) return st;
    /* Qwen3-VL's processor: rescale 1/255, mean 0.5, std 0.5. The frame's
     * 16:9 is resized to the encoder's square input, as its resize does for
     * a fixed-size request. The temporal patch (2 frames) repeats this one
     * image: the encoder reads it twice through a zero-stride view. */
    tmem_convert_desc cd = {0};
    cd.matrix = TMEM_YUV_BT601_LIMITED;
    for (int c = 0; c < 3; c++) {
        cd.mean[c] = 0.5f;
        cd.std[c] = 0.5f;
    }
    return tmem_surface_convert(s->own->frame, &cd, &dst);
}
