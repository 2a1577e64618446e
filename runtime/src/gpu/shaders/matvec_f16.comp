// matvec_f16.comp: mat-vec (decode, up to 8 tokens a workgroup) over
// f16 weights read in ggml's layout (matvec_head.glsl has the bindings).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "f16.glsl"
#include "matvec_head.glsl"
#include "mv_f16.glsl"
#include "matvec_main.glsl"
