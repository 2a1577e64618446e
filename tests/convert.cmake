# tmem convert / tmem gen from the command line, and the skip code of the
# test that needs the committed reference data (tests/data).
set_tests_properties(runtime/test_convert_llamacpp runtime/test_convert_qwen35 PROPERTIES SKIP_RETURN_CODE 77)
set(_cv_out ${CMAKE_BINARY_DIR}/convert_cli)
file(MAKE_DIRECTORY ${_cv_out})
add_test(NAME convert/cli_gen_tiny COMMAND sh -c
  "$<TARGET_FILE:tmem> gen --preset tiny --seed 3 --dtype q8_0 ${_cv_out}/tiny.gguf && \
   $<TARGET_FILE:tmem> fit --gguf ${_cv_out}/tiny.gguf --ctx 256")
set_tests_properties(convert/cli_gen_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "4 layers \\(1 full attention, 3 Gated DeltaNet\\), hidden 64, vocab 512")
add_test(NAME convert/cli_convert COMMAND $<TARGET_FILE:tmem> convert
  ${CMAKE_SOURCE_DIR}/tests/data/qwen35-tiny-b ${_cv_out}/b.gguf --dtype bf16)
set_tests_properties(convert/cli_convert PROPERTIES
  PASS_REGULAR_EXPRESSION "67 tensors.*5 layers \\(2 full attention, 3 Gated DeltaNet\\); tokenizer")
# usage errors exit 2, conversion errors 1 with a message naming the file
add_test(NAME convert/cli_usage COMMAND sh -c
  "$<TARGET_FILE:tmem> convert onlyone; test $? -eq 2 && $<TARGET_FILE:tmem> gen --dtype q4_k x.gguf; test $? -eq 2")
add_test(NAME convert/cli_error COMMAND sh -c
  "$<TARGET_FILE:tmem> convert ${_cv_out}/no-such-dir ${_cv_out}/x.gguf 2>&1; test $? -eq 1")
set_tests_properties(convert/cli_error PROPERTIES PASS_REGULAR_EXPRESSION "no-such-dir/config.json: no such file")
