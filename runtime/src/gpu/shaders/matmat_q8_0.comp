// matmat_q8_0.comp: tiled mat-mat (prefill) over q8_0 weights (matmat.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "q8_0.glsl"
#include "matmat.glsl"
