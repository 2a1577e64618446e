// patch_q4_k.comp: the vision patch embedding over q4_k weights: the tiled
// mat-mat (matmat.glsl) with x read as patches of a CHW image (X_CHW).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define X_CHW 1
#include "common.glsl"
#include "wread.glsl"
#include "q4_k.glsl"
#include "matmat.glsl"
