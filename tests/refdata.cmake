# Reference data (tests/data/, see its README.md): the files test skips (77)
# only when run outside CTest without TMEM_SOURCE_DIR.
set_tests_properties(runtime/test_refdata_files PROPERTIES SKIP_RETURN_CODE 77)
