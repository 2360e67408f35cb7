# cmake --install: headers, module libraries, programs and a CMake package (find_package(xtrain)).
include(CMakePackageConfigHelpers)
get_property(_mods GLOBAL PROPERTY XTRAIN_MODULES)
install(TARGETS ${_mods} xtrain_api EXPORT xtrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/xtrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The docs the public headers cite (docs/replication-semantics.md, ...), so an installed package
# resolves them: <prefix>/share/doc/xtrain/docs/.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(EXPORT xtrainTargets NAMESPACE xtrain:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xtrain)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/xtrainConfig.cmake.in
  ${PROJECT_BINARY_DIR}/xtrainConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xtrain)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xtrainConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xtrainConfig.cmake ${PROJECT_BINARY_DIR}/xtrainConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xtrain)
