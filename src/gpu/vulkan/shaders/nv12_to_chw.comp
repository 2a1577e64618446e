// NV12 -> normalised CHW float tensor: the GPU twin of the CPU fused
// conversion (src/surface/convert.c, fetch + convert_row), operation for
// operation and in the same order, every intermediate `precise` (SPIR-V
// NoContraction: no fused multiply-add) so the results match bit for bit.
// Taps (source indices and weights) come from the CPU's own tap function.
// Compiled with: glslangValidator -V --target-env vulkan1.1 (see CMake).
#version 450

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint bytes[]; } src;
// taps[3*i + 0] = i0, [3*i + 1] = i1, [3*i + 2] = floatBitsToUint(w); x taps then y taps
layout(std430, set = 0, binding = 1) readonly buffer Taps { uint taps[]; } tp;
layout(std430, set = 0, binding = 2) writeonly buffer Dst { float v[]; } dst;

layout(push_constant) uniform Params {
    uint y_offset, y_bpr, uv_offset, uv_bpr;
    uint width, height, dst_index; // output size; dst_index: first float of the tensor
    uint map0, map1, map2;         // source channel of each output channel
    float ky, y0, rv, gu, gv, bu;  // YUV -> RGB
    float s0, s1, s2, d0, d1, d2;  // out = (v - sub[c]) / div[c]
} pc;

float byte_at(uint i) {
    return float((src.bytes[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu);
}

float clamp255(float v) {
    return v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v);
}

vec3 fetch(uint x, uint y) {
    float yv = byte_at(pc.y_offset + y * pc.y_bpr + x);
    uint p = pc.uv_offset + (y >> 1) * pc.uv_bpr + (x >> 1) * 2u;
    precise float u = byte_at(p) - 128.0;
    precise float v = byte_at(p + 1u) - 128.0;
    precise float l = pc.ky * (yv - pc.y0);
    precise float r = l + pc.rv * v;
    precise float g = l + pc.gu * u + pc.gv * v;
    precise float b = l + pc.bu * u;
    return vec3(clamp255(r), clamp255(g), clamp255(b));
}

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= pc.width || y >= pc.height) return;
    uint tx = 3u * x, ty = 3u * (pc.width + y);
    uint xi0 = tp.taps[tx], xi1 = tp.taps[tx + 1u];
    uint yi0 = tp.taps[ty], yi1 = tp.taps[ty + 1u];
    float wx = uintBitsToFloat(tp.taps[tx + 2u]), wy = uintBitsToFloat(tp.taps[ty + 2u]);
    vec3 p00 = fetch(xi0, yi0), p01 = fetch(xi1, yi0), p10 = fetch(xi0, yi1), p11 = fetch(xi1, yi1);
    precise float val[3];
    for (int k = 0; k < 3; k++) {
        precise float top = p00[k] + (p01[k] - p00[k]) * wx;
        precise float bot = p10[k] + (p11[k] - p10[k]) * wx;
        val[k] = top + (bot - top) * wy;
    }
    uint plane = pc.width * pc.height, at = pc.dst_index + y * pc.width + x;
    // (v - sub) / div, as the CPU: one subtraction, one division. Vulkan
    // allows 2.5 ulp for OpFDiv; lavapipe divides exactly (IEEE divps).
    precise float o0 = (val[pc.map0] - pc.s0) / pc.d0;
    precise float o1 = (val[pc.map1] - pc.s1) / pc.d1;
    precise float o2 = (val[pc.map2] - pc.s2) / pc.d2;
    dst.v[at] = o0;
    dst.v[at + plane] = o1;
    dst.v[at + 2u * plane] = o2;
}
