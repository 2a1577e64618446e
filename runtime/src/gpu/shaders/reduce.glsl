// reduce.glsl: the sum of one float over the workgroup (WG threads, a
// power of two), every thread gets it. Shared-memory tree; `red_sum`
// must not be called in divergent control flow (it has barriers).
shared float red_s[WG];
float red_sum(float v) {
    uint tid = gl_LocalInvocationID.x;
    red_s[tid] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s) red_s[tid] += red_s[tid + s];
        barrier();
    }
    float r = red_s[0];
    barrier();
    return r;
}
