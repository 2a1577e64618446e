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

# tmem fit --image sizes the grid with the runtime's smart resize and its
# pixel bounds: 100x100 is below Qwen3.5's 256x256 minimum (-> 256x256, 64
# tokens), --min-pixels 4096 lets it stay near its size (-> 96x96, 9 tokens),
# 8192x8192 is above the 4096x4096 maximum, and --max-pixels brings 2048x2048
# down to 1024x1024.
add_test(NAME cli/fit_image_min_pixels
  COMMAND tmem fit --model qwen3.5-0.8b --ctx 4096 --image 100x100 --json)
add_test(NAME cli/fit_image_min_pixels_option
  COMMAND tmem fit --model qwen3.5-0.8b --ctx 4096 --image 100x100 --min-pixels 4096 --json)
add_test(NAME cli/fit_image_max_pixels
  COMMAND tmem fit --model qwen3.5-0.8b --ctx 20000 --image 8192x8192 --json)
add_test(NAME cli/fit_image_max_pixels_option
  COMMAND tmem fit --model qwen3.5-0.8b --ctx 4096 --image 2048x2048 --max-pixels 1048576 --json)
add_test(NAME cli/fit_image_refused
  COMMAND tmem fit --model qwen3.5-0.8b --ctx 4096 --image 16x900)
set_tests_properties(cli/fit_image_min_pixels PROPERTIES PASS_REGULAR_EXPRESSION
  "\"image_width\":256,\"image_height\":256,\"image_tokens\":64,.*\"image_asked_width\":100,")
set_tests_properties(cli/fit_image_min_pixels_option PROPERTIES PASS_REGULAR_EXPRESSION
  "\"image_width\":96,\"image_height\":96,\"image_tokens\":9,.*\"min_pixels\":4096,")
set_tests_properties(cli/fit_image_max_pixels PROPERTIES PASS_REGULAR_EXPRESSION
  "\"image_width\":4096,\"image_height\":4096,\"image_tokens\":16384,")
set_tests_properties(cli/fit_image_max_pixels_option PROPERTIES PASS_REGULAR_EXPRESSION
  "\"image_width\":1024,\"image_height\":1024,\"image_tokens\":1024,.*\"max_pixels\":1048576,")
set_tests_properties(cli/fit_image_refused PROPERTIES WILL_FAIL TRUE)
