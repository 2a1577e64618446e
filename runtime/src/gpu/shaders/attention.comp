// attention.comp: causal GQA attention over the paged KV cache with an
// online softmax (flash-style: never a ctx x ctx matrix), for one token
// (decode) or a prefill chunk. A workgroup takes QT tokens x GS query heads
// of one KV head (R = QT*GS <= 8 query rows) and one split of the keys:
// per tile of WG keys, thread j scores key j against the R rows (q in
// shared memory, K read through the block table), the rows' running max
// and sum are updated, and each thread accumulates the probabilities times
// V for the 32-bit words of the head it owns. Token t sees slots <= n_past
// + t. With one split the result is written normalised (times
// sigmoid(gate) with FLAG_GATE); with several each writes (m, l, acc) to
// scratch and attn_combine.comp merges them.
// Bindings: 0 q, 1 out, 2 gate, 3 scratch, 4 step, 5 table, 6..9 KV pool.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;
#define MAX_R 8u
#define MAX_HD 256u
#define MAX_W ((MAX_HD + WG - 1u) / WG) // words of a head a thread owns (f32 rows)
#define FLAG_STEP 1u
#define FLAG_F32 2u
#define FLAG_GATE 4u
#define FLAG_VEC 8u
#define STEP_BIND 4
#define TABLE_BIND 5
#define KV_BIND 6
#define KV_ACCESS readonly
#define KV_READ
#include "common.glsl"
#include "step.glsl"
#include "kvpool.glsl"
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) writeonly buffer O { float o[]; };
layout(std430, set = 0, binding = 2) readonly buffer G { float gate[]; };
layout(std430, set = 0, binding = 3) writeonly buffer SC { float scratch[]; };
layout(push_constant) uniform P {
    uint n_tok, n_head, n_kv, hd, qts, qhs, ots, ohs, gts, ghs;
    uint layer, block_tokens, row_bytes, block_bytes, per_buf;
    uint n_split, qt, flags, n_past;
    float scale;
} pc;

struct key_row { kv_addr a; };
key_row key_of(uint key, uint kvh) {
    kv_addr a = kv_row(key, pc.layer, 0u, pc.block_tokens, pc.row_bytes, pc.block_bytes, pc.per_buf);
    a.word += kvh * pc.hd * ((pc.flags & FLAG_F32) != 0u ? 4u : 2u) / 4u;
    return key_row(a);
}
key_row val_of(uint key, uint kvh) {
    kv_addr a = kv_row(key, pc.layer, 1u, pc.block_tokens, pc.row_bytes, pc.block_bytes, pc.per_buf);
    a.word += kvh * pc.hd * ((pc.flags & FLAG_F32) != 0u ? 4u : 2u) / 4u;
    return key_row(a);
}
uint key_load(key_row r, uint w) { return kv_load(r.a, w); }
uvec4 key_load4(key_row r, uint w) { return kv_load4(r.a, w); }
uint val_load(key_row r, uint w) { return kv_load(r.a, w); }
uint keys_total(uint n_past) { return n_past + pc.n_tok; }
#define CAUSAL true

#include "attn_core.glsl"
