// attention_dense.comp: non-causal attention over plain f32 K and V rows
// (the vision encoder: every query sees all n_keys keys), GQA, the online
// softmax of attn_core.glsl. K/V of key s, KV head g at s*kts + g*khs (V
// likewise with vts, vhs).
// Bindings: 0 q, 1 out, 2 gate, 3 scratch, 4 k, 5 v.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;
#define MAX_R 8u
#define MAX_HD 256u
#define MAX_W ((MAX_HD + WG - 1u) / WG)
#define FLAG_F32 2u
#define FLAG_GATE 4u
#define FLAG_VEC 8u
#include "common.glsl"
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) writeonly buffer O { float o[]; };
layout(std430, set = 0, binding = 2) readonly buffer G { float gate[]; };
layout(std430, set = 0, binding = 3) writeonly buffer SC { float scratch[]; };
layout(std430, set = 0, binding = 4) readonly buffer K { uint k32[]; };
layout(std430, set = 0, binding = 4) readonly buffer K4 { uvec4 k128[]; };
layout(std430, set = 0, binding = 5) readonly buffer V { uint v32[]; };
layout(push_constant) uniform P {
    uint n_tok, n_head, n_kv, hd, qts, qhs, ots, ohs, gts, ghs;
    uint kts, khs, vts, vhs, n_keys;
    uint n_split, qt, flags, n_past;
    float scale;
} pc;

struct key_row { uint w; };
key_row key_of(uint key, uint kvh) { return key_row(key * pc.kts + kvh * pc.khs); }
key_row val_of(uint key, uint kvh) { return key_row(key * pc.vts + kvh * pc.vhs); }
uint key_load(key_row r, uint w) { return k32[r.w + w]; }
uvec4 key_load4(key_row r, uint w) { return k128[(r.w + w) >> 2]; }
uint val_load(key_row r, uint w) { return v32[r.w + w]; }
uint keys_total(uint n_past) { return pc.n_keys; }
uint n_past_of(uint flags, uint pushed) { return 0u; }
#define CAUSAL false

#include "attn_core.glsl"
