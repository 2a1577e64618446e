# tmem serve against real clients (docs/serve.md): curl, and OpenAI's npm
# client `openai` (installed by `npm install` in tests/serve; .ci/run does
# it). Each skips (77) with a message when curl / node / the package /
# libmicrohttpd is missing.
add_test(NAME serve/curl
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/serve/run_curl.sh $<TARGET_FILE:tmem> ${CMAKE_BINARY_DIR}/serve-curl
          ${CMAKE_SOURCE_DIR})
add_test(NAME serve/openai_npm
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/serve/run_openai.sh $<TARGET_FILE:tmem> ${CMAKE_BINARY_DIR}/serve-npm
          ${CMAKE_SOURCE_DIR})
set_tests_properties(serve/curl serve/openai_npm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
# tmem bench serve end to end on the tiny checkpoint (the figures: docs/benchmarks.md#serve)
add_test(NAME serve/bench_smoke COMMAND sh -c
  "'$<TARGET_FILE:tmem>' convert '${CMAKE_SOURCE_DIR}/tests/data/qwen35-tiny-a' '${CMAKE_BINARY_DIR}/serve-bench.gguf' \
   >/dev/null && '$<TARGET_FILE:tmem>' bench serve --model '${CMAKE_BINARY_DIR}/serve-bench.gguf' --prompt 8 --gen 4 \
   --resume-tokens 64")
set_tests_properties(serve/bench_smoke PROPERTIES TIMEOUT 300
  PASS_REGULAR_EXPRESSION "16 \\|.*next logits bit for bit the same")
