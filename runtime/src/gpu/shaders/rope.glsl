// rope.glsl: the angle of RoPE pair i of token t (forward/rope.c): the
// position component the interleaved sections pick (sector i % (s0+s1+s2+s3):
// %3 == 1 and < 3*s1: pos[1]; %3 == 2 and < 3*s2: pos[2]; %3 == 0 and <
// 3*s0: pos[0]; else pos[3]), positions 4 per token from `pos` (FLAG_POS)
// or n_past + t, times theta_scale^i (the CPU's running product, as a
// float-float), rounded to float once as the CPU's double is; then
// (cos, sin) of it. Needs ffloat.glsl, step.glsl, binding POS_BIND and the
// push constants s0..s3, flags, n_past, scale_hi, scale_lo.
layout(std430, set = 0, binding = POS_BIND) readonly buffer Pos { int pos[]; };

int rope_position(uint t, uint i) {
    int c = 0;
    int sect = pc.s0 + pc.s1 + pc.s2 + pc.s3;
    if (sect > 0) {
        int s = int(i) % sect;
        if (s % 3 == 1 && s < 3 * pc.s1) c = 1;
        else if (s % 3 == 2 && s < 3 * pc.s2) c = 2;
        else if (s % 3 == 0 && s < 3 * pc.s0) c = 0;
        else c = 3;
    }
    if ((pc.flags & FLAG_POS) != 0u) return pos[4u * t + uint(c)];
    return int(n_past_of(pc.flags, pc.n_past) + t);
}

vec2 rope_cos_sin(uint t, uint i) {
    vec2 sc = vec2(1.0, 0.0);
    for (uint k = 0u; k < i; k++) sc = ff_mul(sc, vec2(pc.scale_hi, pc.scale_lo));
    return ff_cos_sin(ff_to_float(ff_mul(vec2(float(rope_position(t, i)), 0.0), sc)));
}
