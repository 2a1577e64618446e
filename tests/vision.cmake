# Vision: the codec test skips (77) when the optional PNG/JPEG module was not
# built.
set_tests_properties(runtime/test_image_codecs PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_vision_parity PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_vision_run PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_vision_convert PROPERTIES SKIP_RETURN_CODE 77)

# Smoke test of `tmem bench run --image` on the tiny preset (its text model
# and tower generated once into the build tree's cache): both runs complete
# with the image in the prompt, typed converts the image once and naive five
# times, the fit answers. Structure only: no timing, no memory target.
string(CONCAT bench_run_image_pass
  "\"fit_peak_dirty\": [1-9][0-9]*,.*"
  "\"memory\": \"typed\", \"ok\": true, .*\"image_copies\": 1, \"patches\": 16, "
  "\"image_tokens\": 4, \"prompt_tokens\": 14,.*"
  "\"memory\": \"naive\", \"ok\": true, .*\"image_copies\": 5, \"patches\": 16,")
add_test(NAME cli/bench_run_image
  COMMAND tmem bench run --image 64x64 --preset tiny --prompt 8 -n 2 --ctx 256 --json)
set_tests_properties(cli/bench_run_image PROPERTIES
  TIMEOUT 300
  ENVIRONMENT "TMEM_CACHE_DIR=${CMAKE_BINARY_DIR}/bench-run-image-cache"
  PASS_REGULAR_EXPRESSION "${bench_run_image_pass}"
  FAIL_REGULAR_EXPRESSION "\"ok\": false")
