/* rope.c: rotary position embedding of Qwen3.5, llama.cpp's IMROPE (the
 * interleaved multi-axis RoPE of Qwen3-VL) on the first n_rot dims of a
 * head, NEOX pairing (x[i], x[i + n_rot/2]). Pair i takes its angle from
 * one of the position's components (time, height, width, extra) chosen by
 * the interleaved sections; for text all components are the token's index,
 * which makes it the plain partial rotary of the text model. */
#include <math.h>
#include "rt_internal.h"

void tmrt__rope(float *x, const tmrt_hparams *hp, const int32_t pos[4]) {
    const int32_t *s = hp->rope_sections;
    int sect_dims = s[0] + s[1] + s[2] + s[3];
    uint32_t half = hp->n_rot / 2;
    double theta_scale = pow((double)hp->rope_freq_base, -2.0 / (double)hp->n_rot);
    double scale_i = 1.0;
    for (uint32_t i = 0; i < half; i++, scale_i *= theta_scale) {
        int32_t p = pos[0];
        if (sect_dims > 0) {
            int sector = (int)(i % (uint32_t)sect_dims);
            if (sector % 3 == 1 && sector < 3 * s[1]) p = pos[1];
            else if (sector % 3 == 2 && sector < 3 * s[2]) p = pos[2];
            else if (sector % 3 == 0 && sector < 3 * s[0]) p = pos[0];
            else p = pos[3];
        }
        float theta = (float)((double)p * scale_i);
        float c = cosf(theta), sn = sinf(theta);
        float x0 = x[i], x1 = x[i + half];
        x[i] = x0 * c - x1 * sn;
        x[i + half] = x0 * sn + x1 * c;
    }
}
