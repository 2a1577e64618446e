// ffloat.glsl: float-float arithmetic (a value as hi + lo) without FMA
// (Dekker's products; Vulkan does not promise a fused fma) and an accurate
// float cos/sin, for angles computed as the CPU computes them in double.
vec2 ff_two_prod(float a, float b) {
    precise float p = a * b;
    precise float ca = 4097.0 * a, ah = ca - (ca - a), al = a - ah;
    precise float cb = 4097.0 * b, bh = cb - (cb - b), bl = b - bh;
    precise float err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return vec2(p, err);
}
vec2 ff_mul(vec2 a, vec2 b) {
    vec2 p = ff_two_prod(a.x, b.x);
    precise float lo = p.y + (a.x * b.y + a.y * b.x);
    precise float s = p.x + lo;
    precise float e = lo - (s - p.x);
    return vec2(s, e);
}
float ff_to_float(vec2 a) {
    precise float s = a.x + a.y;
    return s;
}
// (cos x, sin x): x - k pi/2 with pi/2 in three parts, the first two
// products exact, then cephes' minimax polynomials on [-pi/4, pi/4].
vec2 ff_cos_sin(float x) {
    precise float k = floor(x * 0.63661977236758134 + 0.5);
    vec2 p1 = ff_two_prod(k, 1.57079637050628662109375);
    vec2 p2 = ff_two_prod(k, -4.37113900018624283e-8);
    precise float r = x - p1.x;
    r = r - p1.y;
    r = r - p2.x;
    r = r - (p2.y + k * -1.71512451000591e-15);
    precise float z = r * r;
    precise float s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    precise float c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z -
                      0.5 * z + 1.0;
    int q = int(k) & 3;
    if (q == 0) return vec2(c, s);
    if (q == 1) return vec2(-s, c);
    if (q == 2) return vec2(-c, -s);
    return vec2(s, -c);
}
