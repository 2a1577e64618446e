# Smoke test of `tmem bench kern`: a tiny run (--quick) completes and prints
# the decode rows (ours vs the streaming read), the prefill rows (ours vs
# the scalar reference) and the reproduce command. No timing is gated.
add_test(NAME cli/bench_kern COMMAND tmem bench kern --json --quick)
set_tests_properties(cli/bench_kern PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"decode\":\\[\\{\"type\":\"f32\",\"threads\":1,.*\"type\":\"q6_K\",\"threads\":2,.*\"prefill\":\\[\\{\"type\":\"f16\".*\"vs_ref\":.*\"type\":\"q4_K\",\"shape\":\"attn out\".*\"command\":\"tmem bench kern")

# The kernels' thread pool and the threaded matmul also run under
# ThreadSanitizer (make test-tsan runs the tsan label).
set_tests_properties(runtime/test_kern_pool runtime/test_kern_matmul PROPERTIES LABELS tsan)
