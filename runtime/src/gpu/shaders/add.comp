// add.comp: out = a + b (the residual add), element-wise.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "eltwise.glsl"
void main() {
    uint i = elt_index();
    if (i < pc.n) o[i] = a[i] + b[i];
}
