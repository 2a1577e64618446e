/*
 * The vision tower (mmproj GGUF: clip.vision.* keys, v.blk.N.* tensors) of
 * tmrt_convert / tmrt_gen. This file is the plug-in point owned by the
 * vision work (issue 10): it receives the checkpoint directory (or the
 * model descriptor) and writes the mmproj file with the same building
 * blocks as the text part (cv_source_*, tmem_gguf_stream, cv_rows_*).
 * Until that lands, asking for an mmproj is refused with a clear message
 * rather than writing a file without a vision tower.
 */
#include "convert_internal.h"

tmem_status cv_vision_convert(tmem_context *ctx, const char *hf_dir, const char *mmproj_path, tmem_weight_dtype dtype,
                              uint64_t *file_bytes, tmrt_convert_error *err) {
    (void)ctx; (void)hf_dir; (void)dtype;
    *file_bytes = 0;
    return cv_fail(err, TMEM_E_UNSUPPORTED, "%s: writing the vision tower (mmproj) is not built yet", mmproj_path);
}

tmem_status cv_vision_gen(tmem_context *ctx, const tmem_model_desc *m, const char *mmproj_path,
                          tmem_weight_dtype dtype, uint64_t seed, uint64_t *file_bytes, tmrt_convert_error *err) {
    (void)ctx; (void)m; (void)dtype; (void)seed;
    *file_bytes = 0;
    return cv_fail(err, TMEM_E_UNSUPPORTED, "%s: generating a vision tower (mmproj) is not built yet", mmproj_path);
}
