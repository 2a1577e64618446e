# Smoke test of `tmem bench surface`: a short run must complete, every
# variant must succeed, and the one-copy and peak targets (deterministic, not
# timing) must hold. The hand-off latency target is timing and is not gated.
add_test(NAME cli/bench_surface
  COMMAND tmem bench surface --json --frames 1 --handoffs 200)
set_tests_properties(cli/bench_surface PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"peak_third_of_naive\":true,\"one_copy\":true"
  FAIL_REGULAR_EXPRESSION "\"ok\":false")
