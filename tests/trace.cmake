# Trace layer: the browser test skips (exit 77) where chromium is absent;
# CLI smoke tests for `tmem report`, including the progress bar's quiet and
# forced modes.
set_tests_properties(unit/test_report_html PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)

add_test(NAME cli/report_usage COMMAND tmem report)
set_tests_properties(cli/report_usage PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli/report_missing COMMAND tmem report ${CMAKE_BINARY_DIR}/no-such-trace.tmtrace)
set_tests_properties(cli/report_missing PROPERTIES WILL_FAIL TRUE)
