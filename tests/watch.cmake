# tmem watch: programs of known footprint (tests/watch/memhog.c) run under
# the watch by tests/unit/test_watch.c.
add_executable(tmem_memhog ${CMAKE_CURRENT_LIST_DIR}/watch/memhog.c)
target_link_libraries(tmem_memhog PRIVATE typedmem_static)
add_dependencies(unit_test_watch tmem_memhog tmem)
set_property(TEST unit/test_watch APPEND PROPERTY ENVIRONMENT "TMEM_MEMHOG=$<TARGET_FILE:tmem_memhog>")
set_tests_properties(unit/test_watch PROPERTIES SKIP_RETURN_CODE 77)
