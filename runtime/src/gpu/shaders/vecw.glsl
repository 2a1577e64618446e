// vecw.glsl: VEC_W(fn, words) defines float fn(type, base, i): element i of
// a weight vector (norm weights, biases, conv taps) stored in the uint
// array `words` as f32, f16 or bf16 (tmem_ggml_type 0, 1, 30) from byte
// `base` (a multiple of 4 for f32, of 2 otherwise).
#define VEC_W(fn, words)                                                      \
    float fn(uint type, uint base, uint i) {                                  \
        uint b = base + (type == 0u ? 4u : 2u) * i, w = words[b >> 2];       \
        if (type == 0u) return uintBitsToFloat(w);                            \
        uint h = (w >> ((b & 2u) * 8u)) & 0xFFFFu;                            \
        return type == 1u ? half_bits(h) : bf16_bits(h);                      \
    }
