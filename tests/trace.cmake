# Trace layer: the browser test skips (exit 77) where chromium is absent;
# CLI smoke tests for `tmem report`, including the progress bar's quiet and
# forced modes.
set_tests_properties(unit/test_report_html PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)

add_test(NAME cli/report_usage COMMAND tmem report)
set_tests_properties(cli/report_usage PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli/report_missing COMMAND tmem report ${CMAKE_BINARY_DIR}/no-such-trace.tmtrace)
set_tests_properties(cli/report_missing PROPERTIES WILL_FAIL TRUE)

# Progress bars: quiet when stdout is not a terminal (ctest pipes it), drawn
# when forced with TMEM_PROGRESS=1.
set(_tmem_trace_seed ${CMAKE_SOURCE_DIR}/fuzz/trace_file/corpus/session.tmtrace)
add_test(NAME cli/report_text COMMAND tmem report ${_tmem_trace_seed})
set_tests_properties(cli/report_text PROPERTIES
  PASS_REGULAR_EXPRESSION "alive at the peak:.*by role:.*activation.*by name:.*attn.scores"
  FAIL_REGULAR_EXPRESSION "\\[#")
add_test(NAME cli/report_progress_forced COMMAND tmem report ${_tmem_trace_seed} --json)
set_tests_properties(cli/report_progress_forced PROPERTIES ENVIRONMENT "TMEM_PROGRESS=1"
  PASS_REGULAR_EXPRESSION "report +\\[#+\\] 100%")
# Hostile plan pictures in the HTML report (headless Chromium; skips without it).
set_tests_properties(unit/test_report_hostile PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
