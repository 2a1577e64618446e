// matmat_q6_k.comp: tiled mat-mat (prefill) over q6_k weights (matmat.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "q6_k.glsl"
#include "matmat.glsl"
