// kv_store.comp: the new K and V rows of n_tok tokens into the paged KV
// cache of one attention layer at slots n_past + t (kvpool.glsl), as f16
// (round to nearest even, half.glsl) or f32; one 32-bit word a thread.
// Bindings: 0 k f32 [n][ld_k], 1 v f32 [n][ld_v], 2 step, 3 table, 4..7 pool.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#define FLAG_STEP 1u
#define FLAG_F32 2u
#define STEP_BIND 2
#define TABLE_BIND 3
#define KV_BIND 4
#define KV_ACCESS writeonly
#define KV_WRITE
#include "common.glsl"
#include "step.glsl"
#include "half.glsl"
#include "kvpool.glsl"
layout(std430, set = 0, binding = 0) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 1) readonly buffer V { float v[]; };
layout(push_constant) uniform P {
    uint n_tok, dim, ld_k, ld_v, layer, block_tokens, row_bytes, block_bytes, per_buf, flags, n_past;
} pc;

void main() {
    bool f32 = (pc.flags & FLAG_F32) != 0u;
    uint words = f32 ? pc.dim : pc.dim / 2u, e = group_id() * WG + gl_LocalInvocationID.x;
    uint i = e % words, r = e / words, which = r & 1u, t = r >> 1;
    if (t >= pc.n_tok) return;
    uint slot = n_past_of(pc.flags, pc.n_past) + t;
    kv_addr a = kv_row(slot, pc.layer, which, pc.block_tokens, pc.row_bytes, pc.block_bytes, pc.per_buf);
    uint src = which == 0u ? t * pc.ld_k : t * pc.ld_v;
    if (f32) {
        kv_store(a, i, floatBitsToUint(which == 0u ? k[src + i] : v[src + i]));
    } else {
        float lo = which == 0u ? k[src + 2u * i] : v[src + 2u * i];
        float hi = which == 0u ? k[src + 2u * i + 1u] : v[src + 2u * i + 1u];
        kv_store(a, i, f32_to_f16(lo) | (f32_to_f16(hi) << 16));
    }
}
