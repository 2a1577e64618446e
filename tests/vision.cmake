# Vision: the codec test skips (77) when the optional PNG/JPEG module was not
# built.
set_tests_properties(runtime/test_image_codecs PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_vision_parity PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_vision_run PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(runtime/test_vision_convert PROPERTIES SKIP_RETURN_CODE 77)
