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

# `tmem bench run --peer`: a directory without llama-bench, or a spec that is
# not llama.cpp=DIR, is refused before anything runs (exit status 2, the
# reason on stderr). The peer itself is not in the suite (it is a separate
# build of llama.cpp: docs/benchmarks.md).
add_test(NAME cli/bench_run_peer_missing
  COMMAND tmem bench run --peer llama.cpp=${CMAKE_BINARY_DIR}/no-such-peer)
set_tests_properties(cli/bench_run_peer_missing PROPERTIES
  PASS_REGULAR_EXPRESSION "no executable llama-bench in .*no-such-peer")
add_test(NAME cli/bench_run_peer_spec COMMAND tmem bench run --peer ollama=/usr)
set_tests_properties(cli/bench_run_peer_spec PROPERTIES
  PASS_REGULAR_EXPRESSION "--peer takes llama.cpp=BUILD_DIR")
