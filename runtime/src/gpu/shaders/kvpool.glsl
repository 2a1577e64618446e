// kvpool.glsl: the paged KV cache as up to four storage buffers (bindings
// KV_BIND .. KV_BIND + 3; one unless a device limit split the pool): block
// id b lives in buffer b / blocks_per_buf at (b % blocks_per_buf) *
// block_bytes. A block holds block_tokens tokens of every attention layer:
// for layer l its K rows, then its V rows (row_bytes each, f16 or f32).
// The block table (uint ids, binding TABLE_BIND) maps a sequence's block
// index (slot / block_tokens) to its block id.
layout(std430, set = 0, binding = KV_BIND) KV_ACCESS buffer KV0 { uint kv0[]; };
layout(std430, set = 0, binding = KV_BIND + 1) KV_ACCESS buffer KV1 { uint kv1[]; };
layout(std430, set = 0, binding = KV_BIND + 2) KV_ACCESS buffer KV2 { uint kv2[]; };
layout(std430, set = 0, binding = KV_BIND + 3) KV_ACCESS buffer KV3 { uint kv3[]; };
layout(std430, set = 0, binding = TABLE_BIND) readonly buffer Table { uint table[]; };

struct kv_addr { uint buf, word; };

// word address of byte `off` of the K (v = 0) or V (v = 1) row of slot s in layer l
kv_addr kv_row(uint s, uint l, uint v, uint block_tokens, uint row_bytes, uint block_bytes, uint per_buf) {
    uint id = table[s / block_tokens], in_ = s % block_tokens;
    uint byte_ = (id % per_buf) * block_bytes + ((2u * l + v) * block_tokens + in_) * row_bytes;
    return kv_addr(id / per_buf, byte_ >> 2);
}
#ifdef KV_READ
layout(std430, set = 0, binding = KV_BIND) readonly buffer KV0V { uvec4 kv0v[]; };
layout(std430, set = 0, binding = KV_BIND + 1) readonly buffer KV1V { uvec4 kv1v[]; };
layout(std430, set = 0, binding = KV_BIND + 2) readonly buffer KV2V { uvec4 kv2v[]; };
layout(std430, set = 0, binding = KV_BIND + 3) readonly buffer KV3V { uvec4 kv3v[]; };
// four words from word a.word + i (a multiple of 4 words from the binding's start)
uvec4 kv_load4(kv_addr a, uint i) {
    uint w = (a.word + i) >> 2;
    if (a.buf == 0u) return kv0v[w];
    if (a.buf == 1u) return kv1v[w];
    if (a.buf == 2u) return kv2v[w];
    return kv3v[w];
}
uint kv_load(kv_addr a, uint i) {
    uint w = a.word + i;
    if (a.buf == 0u) return kv0[w];
    if (a.buf == 1u) return kv1[w];
    if (a.buf == 2u) return kv2[w];
    return kv3[w];
}
#endif
#ifdef KV_WRITE
void kv_store(kv_addr a, uint i, uint v) {
    uint w = a.word + i;
    if (a.buf == 0u) kv0[w] = v;
    else if (a.buf == 1u) kv1[w] = v;
    else if (a.buf == 2u) kv2[w] = v;
    else kv3[w] = v;
}
#endif
