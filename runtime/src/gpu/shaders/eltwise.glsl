// eltwise.glsl: element-wise ops over n floats, one a thread (bindings
// 0 a, 1 b, 2 out; out may alias a or b).
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { uint n; } pc;
uint elt_index() { return group_id() * WG + gl_LocalInvocationID.x; }
