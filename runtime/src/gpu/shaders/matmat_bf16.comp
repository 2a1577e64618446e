// matmat_bf16.comp: tiled mat-mat (prefill) over bf16 weights (matmat.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#include "common.glsl"
#include "wread.glsl"
#include "bf16.glsl"
#include "matmat.glsl"
