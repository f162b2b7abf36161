# MATEX_WITH_HWLOC: AUTO uses hwloc 2.x when pkg-config or the compiler's
# search path finds it, and otherwise builds the topology probe that reads
# /sys and the CPU affinity (libmatexcomm/src/topology/hardware_sysfs.h),
# which warns once per job at run time; ON fails the configure step without
# hwloc; OFF never uses it. Result: MATEX_HAVE_HWLOC and, when ON, the target
# matex::hwloc.
set(MATEX_HAVE_HWLOC OFF)
if(NOT MATEX_WITH_HWLOC STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc>=2.0)
  endif()
  if(HWLOC_FOUND)
    add_library(matex::hwloc ALIAS PkgConfig::HWLOC)
    set(MATEX_HAVE_HWLOC ON)
    set(MATEX_HWLOC_VERSION ${HWLOC_VERSION})
  else()
    find_path(MATEX_HWLOC_INCLUDE_DIR hwloc.h)
    find_library(MATEX_HWLOC_LIBRARY hwloc)
    if(MATEX_HWLOC_INCLUDE_DIR AND MATEX_HWLOC_LIBRARY)
      file(STRINGS "${MATEX_HWLOC_INCLUDE_DIR}/hwloc.h" _matex_hwloc_api REGEX "define HWLOC_API_VERSION 0x0002")
    endif()
    if(_matex_hwloc_api)
      add_library(matex_hwloc_found INTERFACE)
      target_include_directories(matex_hwloc_found INTERFACE ${MATEX_HWLOC_INCLUDE_DIR})
      target_link_libraries(matex_hwloc_found INTERFACE ${MATEX_HWLOC_LIBRARY})
      add_library(matex::hwloc ALIAS matex_hwloc_found)
      set(MATEX_HAVE_HWLOC ON)
      set(MATEX_HWLOC_VERSION "2.x")
    endif()
  endif()
  if(MATEX_HAVE_HWLOC)
    message(STATUS "hwloc ${MATEX_HWLOC_VERSION} found: the topology probe uses it")
  elseif(MATEX_WITH_HWLOC STREQUAL "ON")
    message(FATAL_ERROR "MATEX_WITH_HWLOC=ON but hwloc 2.x was not found (pkg-config hwloc, or hwloc.h and "
                        "libhwloc on the compiler's paths); load its module or set PKG_CONFIG_PATH")
  else()
    message(STATUS "hwloc 2.x not found: the topology comes from /sys and the CPU affinity (one warning per "
                   "job at run time)")
  endif()
endif()
