// get_rows_bf16.comp: embedding lookup from bf16 rows (get_rows.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define WBIND 0
#define PER 1
#include "common.glsl"
#include "wread.glsl"
#include "bf16.glsl"
#include "get_rows.glsl"
