# xtrain_add_module(NAME <m> [PUBLIC_DEPS ...] [PRIVATE_DEPS ...] [EXCLUDE regex...])
# One shared library per module, built from every .cpp under src/<m>/ (new files need no CMake edit).
# Private dependencies stay private: a shared library hides them from whoever links the module.
function(xtrain_add_module)
  cmake_parse_arguments(M "" "NAME" "PUBLIC_DEPS;PRIVATE_DEPS;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(_ex IN LISTS M_EXCLUDE)
    list(FILTER _srcs EXCLUDE REGEX "${_ex}")
  endforeach()
  xtrain_add_library(NAME ${M_NAME} SOURCES ${_srcs} PUBLIC_DEPS ${M_PUBLIC_DEPS}
    PRIVATE_DEPS ${M_PRIVATE_DEPS})
endfunction()

# xtrain_add_library(NAME <m> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# A shared library xtrain_<m> from the given sources, with the modules' include directories, export
# name and version: for a part of a module that a program must link without the rest of it.
function(xtrain_add_library)
  cmake_parse_arguments(M "" "NAME" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(_t xtrain_${M_NAME})
  add_library(${_t} SHARED ${M_SOURCES})
  target_include_directories(${_t} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${_t} PUBLIC ${M_PUBLIC_DEPS} PRIVATE xtrain_warnings ${M_PRIVATE_DEPS})
  set_target_properties(${_t} PROPERTIES EXPORT_NAME ${M_NAME} VERSION ${PROJECT_VERSION} SOVERSION 0)
  # Only the API is exported: XTRAIN_API on include/xtrain/, and every internal header's declarations
  # through a "#pragma GCC visibility push(default)" (docs/architecture.md, "Symbol visibility").
  # What is defined only in a .cpp file, and third-party template instantiations, stay hidden.
  set_target_properties(${_t} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/xtrain_exports.map)
  target_link_options(${_t} PRIVATE
    "LINKER:--version-script=${PROJECT_SOURCE_DIR}/cmake/xtrain_exports.map")
  # Build time (CI builds cold on 2 cores): parsing headers is over half of a typical source's
  # compile; the standard headers most sources include are precompiled once per library.
  target_precompile_headers(${_t} PRIVATE <algorithm> <cmath> <cstdint> <cstdlib> <cstring>
    <filesystem> <functional> <limits> <map> <memory> <mutex> <optional> <set> <sstream> <string>
    <utility> <vector>)
  set_property(GLOBAL APPEND PROPERTY XTRAIN_MODULES ${_t})
endfunction()
