// patch_f32.comp: the vision patch embedding over f32 weights: the tiled
// mat-mat (matmat.glsl) with x read as patches of a CHW image (X_CHW).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define X_CHW 1
#include "common.glsl"
#include "wread.glsl"
#include "f32.glsl"
#include "matmat.glsl"
