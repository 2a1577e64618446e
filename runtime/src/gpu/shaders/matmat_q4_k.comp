// matmat_q4_k.comp: tiled mat-mat (prefill) over q4_k weights (matmat.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "q4_k.glsl"
#include "matmat.glsl"
