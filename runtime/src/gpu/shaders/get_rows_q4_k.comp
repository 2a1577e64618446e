// get_rows_q4_k.comp: embedding lookup from q4_k rows (get_rows.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define PER 8
#include "common.glsl"
#include "wread.glsl"
#include "q4_k.glsl"
#include "get_rows.glsl"
