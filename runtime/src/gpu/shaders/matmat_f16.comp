// matmat_f16.comp: tiled mat-mat (prefill) over f16 weights (matmat.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "f16.glsl"
#include "matmat.glsl"
