# Reference data (tests/data/, see its README.md): the files test skips (77)
# only when run outside CTest without TMEM_SOURCE_DIR.
set_tests_properties(runtime/test_refdata_files PROPERTIES SKIP_RETURN_CODE 77)

# The README's formulas as a numpy forward pass, against Hugging Face's
# reference files (tests/data/gen/check_spec_numpy.py, ~1 s). Needs a python3
# with numpy; skips (77, with a message) without one.
add_test(NAME refdata/numpy_spec
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/data/gen/numpy_spec.sh ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(refdata/numpy_spec PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
