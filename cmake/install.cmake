# Install rules (included from the top CMakeLists.txt when TMEM_INSTALL):
#   include/typedmem/*.h, runtime/include/tmemrt/*.h (not the testing.h of
#   either: the project's own testing API, for its benches and tests)
#   libtypedmem.so.MAJOR (SONAME) + libtypedmem.a, libtypedmem_runtime.a,
#   libtypedmem_gpu.a (src/gpu/gpu.cmake adds it to the export set)
#   bin/tmem
#   lib/pkgconfig/typedmem.pc, typedmem-runtime.pc
#   lib/cmake/typedmem/typedmemConfig.cmake (+ ConfigVersion, exported targets:
#   typedmem::typedmem (shared), typedmem::typedmem_static, typedmem::runtime)
# `cmake --install build --prefix P` or `make install PREFIX=P`.
include(CMakePackageConfigHelpers)

set_target_properties(typedmem_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS typedmem typedmem_static typedmem_runtime typedmem_for_runtime
  EXPORT typedmemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tmem RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/typedmem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "testing.h" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tmemrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "testing.h" EXCLUDE)

set(_tmem_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/typedmem)
install(EXPORT typedmemTargets NAMESPACE typedmem:: DESTINATION ${_tmem_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/typedmemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/typedmemConfig.cmake INSTALL_DESTINATION ${_tmem_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/typedmemConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/typedmemConfig.cmake ${PROJECT_BINARY_DIR}/typedmemConfigVersion.cmake
  DESTINATION ${_tmem_cmake_dir})

# pkg-config: relative to the prefix the files end up in (${pcfiledir}), so
# `cmake --install --prefix P` gives correct paths whatever P is.
file(RELATIVE_PATH _tmem_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
foreach(_pc typedmem typedmem-runtime)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${_pc}.pc.in ${PROJECT_BINARY_DIR}/${_pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${_pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
