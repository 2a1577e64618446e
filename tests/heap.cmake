# Smoke test of `tmem bench heap`: a short run completes, our heaps see no
# allocation failure (the bench exits non-zero otherwise) and the JSON has
# both typedmem rows and the reproduce command. Timing targets are not gated.
add_test(NAME cli/bench_heap
  COMMAND tmem bench heap --json --ops 20000 --slots 512)
set_tests_properties(cli/bench_heap PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"name\":\"typedmem\",\"ops_per_s\":[0-9]+.*\"name\":\"typedmem-all\",\"ops_per_s\":[0-9]+.*\"command\":\"tmem bench heap"
  FAIL_REGULAR_EXPRESSION "\"failures\":[1-9]")

# The scaling mode: two threads, one heap each of one type; no failures.
add_test(NAME cli/bench_heap_threads
  COMMAND tmem bench heap --json --ops 20000 --slots 512 --threads 2)
set_tests_properties(cli/bench_heap_threads PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"bench\":\"heap-scaling\",\"threads\":2.*\"name\":\"typedmem\",\"ops_per_s_1\":[0-9]+"
  FAIL_REGULAR_EXPRESSION "\"failures\":[1-9]")

# The pre-committed mode (issue 12's p99.99 target): populated arena, peers
# warmed and kept from returning memory; the arena's latency passes take
# (almost) no page fault: the memory was committed and touched at creation
# (0 in a plain build; fewer than 100 allows a sanitizer's shadow pages; the
# on-demand heap takes hundreds here).
add_test(NAME cli/bench_heap_precommitted
  COMMAND tmem bench heap --json --ops 20000 --slots 512 --precommitted)
set_tests_properties(cli/bench_heap_precommitted PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"precommitted\":true.*\"name\":\"typedmem-pre\",\"ops_per_s\":[0-9]+,\"alloc_ns\":{[^}]*},\"alloc_ns_min\":{[^}]*},\"faults\":[0-9][0-9]?,"
  FAIL_REGULAR_EXPRESSION "\"failures\":[1-9]")
