// dn_chunk.glsl: the chunked DeltaNet's scratch (deltanet.c's chunk
// buffers, kept for every chunk of the span): per chunk c and value head h
// at ((c * Hv + h) * CH_FLOATS): gc [64] (the cumulative gates), u [64][dv],
// w [64][dk], QK [64][64] (q k^T masked and decayed). Binding 7.
#define CHUNK 64u
layout(std430, set = 0, binding = 7) buffer SCR { float scr[]; };
uint ch_floats(uint dk, uint dv) { return CHUNK + CHUNK * dv + CHUNK * dk + CHUNK * CHUNK; }
uint ch_base(uint c, uint h, uint Hv, uint dk, uint dv) { return (c * Hv + h) * ch_floats(dk, dv); }
uint ch_u(uint dk, uint dv) { return CHUNK; }
uint ch_w(uint dk, uint dv) { return CHUNK + CHUNK * dv; }
uint ch_qk(uint dk, uint dv) { return CHUNK + CHUNK * dv + CHUNK * dk; }
