// swiglu.comp: out = silu(a) * b = a / (1 + exp(-a)) * b (the SwiGLU of the
// MLP: a the gate projection, b the up projection), element-wise.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "eltwise.glsl"
void main() {
    uint i = elt_index();
    if (i < pc.n) o[i] = a[i] / (1.0 + exp(-a[i])) * b[i];
}
