# Installs the library, its headers, the CMake package (find_package(matexcomm)
# -> matexcomm::matexcomm) and a pkg-config file (matexcomm.pc).
include(CMakePackageConfigHelpers)

install(TARGETS matexcomm EXPORT matexcommTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/libmatexcomm/include/matexcomm
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(MATEX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/matexcomm)
install(EXPORT matexcommTargets NAMESPACE matexcomm:: DESTINATION ${MATEX_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/matexcommConfig.cmake.in
  ${PROJECT_BINARY_DIR}/matexcommConfig.cmake INSTALL_DESTINATION ${MATEX_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/matexcommConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/matexcommConfig.cmake ${PROJECT_BINARY_DIR}/matexcommConfigVersion.cmake
  DESTINATION ${MATEX_CMAKE_DIR})

# prefix is relative to the .pc file, so the installed tree can be moved.
file(RELATIVE_PATH MATEX_PC_PREFIX_FROM_PCDIR "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
configure_file(${PROJECT_SOURCE_DIR}/cmake/matexcomm.pc.in ${PROJECT_BINARY_DIR}/matexcomm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/matexcomm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
