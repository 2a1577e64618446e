# Smoke test of `tmem bench heap`: a short run completes, our heaps see no
# allocation failure (the bench exits non-zero otherwise) and the JSON has
# both typedmem rows and the reproduce command. Timing targets are not gated.
add_test(NAME cli/bench_heap
  COMMAND tmem bench heap --json --ops 20000 --slots 512)
set_tests_properties(cli/bench_heap PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"name\":\"typedmem\",\"ops_per_s\":[0-9]+.*\"name\":\"typedmem-all\",\"ops_per_s\":[0-9]+.*\"command\":\"tmem bench heap"
  FAIL_REGULAR_EXPRESSION "\"failures\":[1-9]")
