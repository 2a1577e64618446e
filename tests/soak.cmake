# The soak (tests/soak/test_soak.c, docs/reliability.md): runtime sessions and
# a KV worker on one context under a tight budget. The short variant (20 s)
# runs in `make test` and under ThreadSanitizer (label tsan); the long one:
#   TMEM_SOAK_SECONDS=600 TMEM_SOURCE_DIR=$PWD ./build/soak_test_soak
if(TARGET soak_test_soak)
  target_link_libraries(soak_test_soak PRIVATE typedmem_runtime)
  set_tests_properties(soak/test_soak PROPERTIES LABELS tsan TIMEOUT 600)
endif()
