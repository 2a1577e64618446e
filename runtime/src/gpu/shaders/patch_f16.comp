// patch_f16.comp: the vision patch embedding over f16 weights: the tiled
// mat-mat (matmat.glsl) with x read as patches of a CHW image (X_CHW).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define X_CHW 1
#include "common.glsl"
#include "wread.glsl"
#include "f16.glsl"
#include "matmat.glsl"
