// get_rows_q6_k.comp: embedding lookup from q6_k rows (get_rows.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define PER 8
#include "common.glsl"
#include "wread.glsl"
#include "q6_k.glsl"
#include "get_rows.glsl"
