// gelu.comp: GELU in place, one element a thread (the vision encoder's,
// vision/ops.c): tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// (the blocks' MLP), or with FLAG_ERF 0.5 x (1 + erf(x / sqrt 2)) (the
// merger). tanh through exp; erf by Abramowitz-Stegun 7.1.26 (|error| <=
// 1.5e-7; GLSL has no erf). Binding: 0 x.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#define FLAG_ERF 1u
#include "common.glsl"
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform P { uint n, flags; } pc;

float tanh_(float v) {
    float e = exp(-2.0 * abs(v)), t = (1.0 - e) / (1.0 + e);
    return v < 0.0 ? -t : t;
}

float erf_(float v) {
    float a = abs(v), t = 1.0 / (1.0 + 0.3275911 * a);
    float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) *
                        t * exp(-a * a);
    return v < 0.0 ? -y : y;
}

void main() {
    uint i = group_id() * WG + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    float v = x[i];
    if ((pc.flags & FLAG_ERF) != 0u) x[i] = 0.5 * v * (1.0 + erf_(v * 0.7071067811865476));
    else x[i] = 0.5 * v * (1.0 + tanh_(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}
