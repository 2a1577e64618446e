# The demo's numbers test runs a whole (quick) session twice over: typed and
# naive, each in a forked child, generating ~575 MiB of GGUF on the way.
set_tests_properties(unit/test_demo_numbers PROPERTIES TIMEOUT 180)
