/*
 * The vision encoder's small ops: LayerNorm, the two GELUs (tanh in the
 * blocks' MLP, as Qwen3.5's hidden_act "gelu_pytorch_tanh"; erf in the
 * merger, nn.GELU()), bias rows, merge-order token positions and the learned
 * position embedding interpolated to the image's grid.
 */
#include <math.h>
#include "vision/vision_internal.h"

void tmrt__vis_layernorm(float *out, const float *x, const float *w, const float *b, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += x[i];
    double mean = sum / (double)n, var = 0;
    for (int64_t i = 0; i < n; i++) var += ((double)x[i] - mean) * ((double)x[i] - mean);
    float inv = (float)(1.0 / sqrt(var / (double)n + (double)eps)), m = (float)mean;
    for (int64_t i = 0; i < n; i++) out[i] = (x[i] - m) * inv * w[i] + b[i];
}

void tmrt__vis_gelu_tanh(float *x, int64_t n) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}

void tmrt__vis_gelu_erf(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.7071067811865476f));
}

void tmrt__vis_add_bias(float *y, size_t ld, int64_t n_tok, const float *b, int64_t n) {
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n; i++) y[(size_t)t * ld + (size_t)i] += b[i];
}

void tmrt__vis_token_pos(uint32_t t, uint32_t grid_w, uint32_t merge, uint32_t *row, uint32_t *col) {
    uint32_t per_block = merge * merge, blocks_across = grid_w / merge;
    uint32_t block = t / per_block, in_block = t % per_block;
    *row = (block / blocks_across) * merge + in_block / merge;
    *col = (block % blocks_across) * merge + in_block % merge;
}

/* torch.linspace(0, side - 1, steps) in float32: the first half counts up
 * from the start, the second half down from the end. */
static float linspace_at(uint32_t i, uint32_t steps, float end) {
    if (steps == 1) return 0.0f;
    float step = end / (float)(steps - 1);
    return i < steps / 2 ? step * (float)i : end - step * (float)(steps - 1 - i);
}

void tmrt__vis_add_pos_embed(const tmrt_vision *v, const tmrt_vision_grid *g, float *x, uint32_t t0, uint32_t t1,
                       float *rows) {
    uint32_t side = (uint32_t)lrint(sqrt((double)v->cfg.n_pos)), h = v->cfg.hidden;
    for (uint32_t t = t0; t < t1; t++) {
        uint32_t r, c;
        tmrt__vis_token_pos(t, g->grid_w, v->cfg.merge, &r, &c);
        float hi = linspace_at(r, g->grid_h, (float)(side - 1)), wi = linspace_at(c, g->grid_w, (float)(side - 1));
        uint32_t h0 = (uint32_t)hi, w0 = (uint32_t)wi;
        uint32_t h1 = h0 + 1 < side ? h0 + 1 : side - 1, w1 = w0 + 1 < side ? w0 + 1 : side - 1;
        float dh = hi - (float)h0, dw = wi - (float)w0;
        float wt[4] = {(1 - dh) * (1 - dw), (1 - dh) * dw, dh * (1 - dw), dh * dw};
        uint32_t idx[4] = {h0 * side + w0, h0 * side + w1, h1 * side + w0, h1 * side + w1};
        for (int k = 0; k < 4; k++) tmrt__kern_get_row(&v->pos, idx[k], rows + (size_t)k * h);
        float *xt = x + (size_t)t * h;
        for (uint32_t i = 0; i < h; i++) {
            float s = rows[i] * wt[0] + rows[h + i] * wt[1];
            s = s + rows[2 * h + i] * wt[2];
            s = s + rows[3 * h + i] * wt[3];
            xt[i] += s;
        }
    }
}
