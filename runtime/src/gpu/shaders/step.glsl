// step.glsl: the step's dynamic values. With FLAG_STEP the sequence
// position of the first token (n_past) is word 0 of binding STEP_BIND (the
// host writes it per step, so one recording serves every decode step);
// else it is the push constant.
layout(std430, set = 0, binding = STEP_BIND) readonly buffer Step { uint step[]; };
uint n_past_of(uint flags, uint pushed) { return (flags & FLAG_STEP) != 0u ? step[0] : pushed; }
