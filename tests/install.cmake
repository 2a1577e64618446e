# Install to a temporary prefix and build examples/quickstart.c with
# pkg-config, find_package(typedmem) and add_subdirectory() (a consumer
# project that compiles the library itself: a few minutes on two cores).
set(_tmem_consumer_cflags "")
if(TMEM_SANITIZE)
  string(REPLACE ";" "," _san "${TMEM_SANITIZE}")
  set(_tmem_consumer_cflags "-fsanitize=${_san}")
endif()
add_test(NAME install/consumers
  COMMAND sh ${PROJECT_SOURCE_DIR}/tests/install/check_install.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
          ${CMAKE_C_COMPILER} "${_tmem_consumer_cflags}")
set_tests_properties(install/consumers PROPERTIES TIMEOUT 1200 LABELS install
  PASS_REGULAR_EXPRESSION "PASS: installed and consumed (three|two) ways")
