// NV12 -> normalised CHW float tensor: the GPU twin of the CPU fused
// conversion (src/surface/convert.c, fetch + convert_row), operation for
// operation and in the same order, every intermediate `precise` (SPIR-V
// NoContraction: no fused multiply-add) so the results match bit for bit.
// Taps (source indices and weights) come from the CPU's own tap function.
// Compiled twice with glslangValidator -V --target-env vulkan1.1 (see CMake):
// with -DTMEM_DIV_F64 (exact division, for devices with shaderFloat64) into
// nv12_to_chw.spv.h, and without into nv12_to_chw_f32.spv.h.
#version 450
#ifdef TMEM_DIV_F64
#extension GL_ARB_gpu_shader_fp64 : require
#endif

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

// a / b rounded to nearest, as the CPU's IEEE division. Vulkan allows
// OpFDiv 2.5 ulp and NVIDIA's is a reciprocal times the dividend (1 ulp off
// in 20-71% of the values), so the quotient is corrected to the nearest one
// with exact remainders: q b and n b are products of two 24-bit significands
// (exact in a double) and a - q b is exact by Sterbenz's lemma (q b is within
// a few ulps of a), and double OpFMul/OpFSub are correctly rounded. The
// quotient moves one ulp towards the true one while that brings it closer
// (a tie goes to the even one); OpFDiv's 2.5 ulp need at most three steps.
// Without shaderFloat64 the plain division stands (within 2.5 ulp: the
// driver's own bound; docs/backend.md).
#ifdef TMEM_DIV_F64
float next_toward(float q, bool up) {
    if (q == 0.0) return up ? uintBitsToFloat(1u) : -uintBitsToFloat(1u);
    uint b = floatBitsToUint(q);
    return uintBitsToFloat((q > 0.0) == up ? b + 1u : b - 1u);
}

float div_rn(float a, float b) {
    precise float q = a / b;
    for (int i = 0; i < 4; i++) {
        precise double r = double(a) - double(q) * double(b);
        if (r == 0.0) break;
        float n = next_toward(q, (r > 0.0) == (b > 0.0));
        precise double rn = double(a) - double(n) * double(b);
        if (abs(rn) < abs(r) || (abs(rn) == abs(r) && (floatBitsToUint(n) & 1u) == 0u)) q = n;
        else break;
    }
    return q;
}
#else
float div_rn(float a, float b) {
    precise float q = a / b;
    return q;
}
#endif

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
    // (v - sub) / div, as the CPU: one subtraction, one division.
    precise float o0 = div_rn(val[pc.map0] - pc.s0, pc.d0);
    precise float o1 = div_rn(val[pc.map1] - pc.s1, pc.d1);
    precise float o2 = div_rn(val[pc.map2] - pc.s2, pc.d2);
    dst.v[at] = o0;
    dst.v[at + plane] = o1;
    dst.v[at + 2u * plane] = o2;
}
