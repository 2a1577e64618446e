// get_rows_q8_0.comp: embedding lookup from q8_0 rows (get_rows.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define PER 8
#include "common.glsl"
#include "wread.glsl"
#include "q8_0.glsl"
#include "get_rows.glsl"
