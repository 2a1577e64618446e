/* Fixture for regress/layering_calls_catches_upward: an object named like a
 * planner file (src/plan/solve.c, layer plan: base only) that calls up into
 * core. check_calls.cmake must report it. Never linked into anything. */
#include <stddef.h>
struct tmem_context;
void tmem__context_lock(struct tmem_context *ctx);
void tmem_layering_fixture_call(struct tmem_context *ctx);
void tmem_layering_fixture_call(struct tmem_context *ctx) { tmem__context_lock(ctx); }
