// wread.glsl: byte-addressed reads of binding WBIND (the weights), declared
// as 32-bit words, 16-byte vectors and (STORAGE16) 16-bit halves.
// Addresses are byte offsets inside the binding; u16 reads need 2-byte
// alignment, u32 reads 4, u128 reads 16.
layout(std430, set = 0, binding = WBIND) readonly buffer W32 { uint w32[]; };
layout(std430, set = 0, binding = WBIND) readonly buffer W128 { uvec4 w128[]; };
#if STORAGE16
layout(std430, set = 0, binding = WBIND) readonly buffer W16 { uint16_t w16[]; };
uint rd_u16(uint b) { return uint(w16[b >> 1]); }
#else
uint rd_u16(uint b) { return (w32[b >> 2] >> ((b & 2u) * 8u)) & 0xFFFFu; }
#endif
uint rd_u32(uint b) { return w32[b >> 2]; }
uvec4 rd_u128(uint b) { return w128[b >> 4]; }
uint rd_u8(uint b) { return (w32[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu; }
// 4 bytes from a 2-byte aligned address, as one word (little endian)
uint rd_u32_a2(uint b) {
#if STORAGE16
    return rd_u16(b) | (rd_u16(b + 2u) << 16);
#else
    if ((b & 2u) == 0u) return w32[b >> 2];
    return (w32[b >> 2] >> 16) | (w32[(b >> 2) + 1u] << 16);
#endif
}
// 8 bytes from a 2-byte aligned address
uvec2 rd_u64_a2(uint b) {
#if STORAGE16
    return uvec2(rd_u16(b) | (rd_u16(b + 2u) << 16), rd_u16(b + 4u) | (rd_u16(b + 6u) << 16));
#else
    uint i = b >> 2;
    if ((b & 2u) == 0u) return uvec2(w32[i], w32[i + 1u]);
    uint a = w32[i], m = w32[i + 1u], c = w32[i + 2u];
    return uvec2((a >> 16) | (m << 16), (m >> 16) | (c << 16));
#endif
}
// signed byte k (0..3) of a word
int sbyte(uint w, uint k) { return bitfieldExtract(int(w), int(k * 8u), 8); }
