# Examples are built and run as tests, so README's example stays true.
file(GLOB TMEM_EXAMPLES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/examples/*.c)
foreach(src ${TMEM_EXAMPLES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(example_${name} ${src})
  target_link_libraries(example_${name} PRIVATE typedmem)
  add_test(NAME examples/${name} COMMAND example_${name})
endforeach()
