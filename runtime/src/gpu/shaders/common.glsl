// common.glsl: what every compute shader of the runtime shares.
//  - workgroup ids over a 2D grid (the host spreads a 1D count over x and y
//    when it passes maxComputeWorkGroupCount[0]);
//  - reads of 8/16/32-bit data from a storage buffer declared as 32-bit
//    words (the fallback for devices without 8/16-bit storage; with
//    STORAGE16 the 16-bit reads go through a uint16_t alias of the binding);
//  - f16/bf16 conversions.
#if STORAGE16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif

uint group_id() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

float half_bits(uint h) { return unpackHalf2x16(h).x; }
float bf16_bits(uint h) { return uintBitsToFloat(h << 16); }
