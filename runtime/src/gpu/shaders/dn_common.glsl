// dn_common.glsl: the Gated DeltaNet's inputs as the shaders read them.
// q and k of value head h use key head h % G (the tiled repeat), at
// t*qk_ts + kh*dk in q / k (conv_out after the L2 norm); v of head h at
// t*v_ts + h*dv; gate and beta [t][Hv]; the state of head h [dv][dk] at
// h*dv*dk (f32, updated in place). Bindings 0 q, 1 k, 2 v, 3 gate, 4 beta,
// 5 state, 6 out ([t][o_ts], head h at h*dv).
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer GA { float gate[]; };
layout(std430, set = 0, binding = 4) readonly buffer BE { float beta[]; };
layout(std430, set = 0, binding = 5) buffer ST { float state[]; };
layout(std430, set = 0, binding = 6) writeonly buffer O { float o[]; };
