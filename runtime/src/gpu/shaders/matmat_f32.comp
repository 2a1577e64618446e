// matmat_f32.comp: tiled mat-mat (prefill) over f32 weights (matmat.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "f32.glsl"
#include "matmat.glsl"
