# SPDX-License-Identifier: MIT
# Runs ports/topopreempt/portfile.cmake without the vcpkg tool (which needs network access to
# bootstrap): minimal stand-ins for the vcpkg helpers the port calls, then the checks vcpkg's
# post-build validation would make on the resulting package tree.
#
#   cmake -DPORT_DIR=<repo>/ports/topopreempt -DWORK_DIR=<scratch dir> -P run-port.cmake
#
# The package lands in <WORK_DIR>/packages/topopreempt_x64-linux, usable as CMAKE_PREFIX_PATH.
cmake_minimum_required(VERSION 3.21)

foreach(_required PORT_DIR WORK_DIR)
  if(NOT DEFINED ${_required})
    message(FATAL_ERROR "usage: cmake -DPORT_DIR=... -DWORK_DIR=... -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
endforeach()
get_filename_component(PORT_DIR "${PORT_DIR}" ABSOLUTE)

set(PORT topopreempt)
set(TARGET_TRIPLET x64-linux)
file(READ "${PORT_DIR}/vcpkg.json" _manifest)
string(JSON VERSION GET "${_manifest}" version)
set(CURRENT_PACKAGES_DIR "${WORK_DIR}/packages/${PORT}_${TARGET_TRIPLET}")
set(CURRENT_BUILDTREES_DIR "${WORK_DIR}/buildtrees/${PORT}")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}" "${CURRENT_BUILDTREES_DIR}")

# --- Stand-ins for the vcpkg helpers ---------------------------------------------------------------
function(vcpkg_cmake_configure)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "SOURCE_PATH" "OPTIONS;OPTIONS_RELEASE;OPTIONS_DEBUG")
  if(NOT VCPKG_BUILD_TYPE STREQUAL "release")
    message(FATAL_ERROR "a header-only port sets VCPKG_BUILD_TYPE release")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${arg_SOURCE_PATH}" -B "${CURRENT_BUILDTREES_DIR}/rel"
            -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=${CURRENT_PACKAGES_DIR}"
            ${arg_OPTIONS} ${arg_OPTIONS_RELEASE}
    COMMAND_ERROR_IS_FATAL ANY)
endfunction()

function(vcpkg_cmake_install)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${CURRENT_BUILDTREES_DIR}/rel" --target install
                  COMMAND_ERROR_IS_FATAL ANY)
endfunction()

function(vcpkg_cmake_config_fixup)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "PACKAGE_NAME;CONFIG_PATH" "")
  if(NOT arg_PACKAGE_NAME)
    set(arg_PACKAGE_NAME "${PORT}")
  endif()
  if(NOT arg_CONFIG_PATH)
    set(arg_CONFIG_PATH "share/${arg_PACKAGE_NAME}")
  endif()
  if(NOT arg_CONFIG_PATH STREQUAL "share/${arg_PACKAGE_NAME}")
    message(FATAL_ERROR "this stand-in only supports configs already in share/<package>")
  endif()
  file(GLOB _configs "${CURRENT_PACKAGES_DIR}/${arg_CONFIG_PATH}/*.cmake")
  if(NOT _configs)
    message(FATAL_ERROR "no CMake config in ${CURRENT_PACKAGES_DIR}/${arg_CONFIG_PATH}")
  endif()
  # vcpkg rejects packages whose config files hard-code the install prefix.
  foreach(_config IN LISTS _configs)
    file(READ "${_config}" _text)
    string(FIND "${_text}" "${CURRENT_PACKAGES_DIR}" _at)
    if(NOT _at EQUAL -1)
      message(FATAL_ERROR "${_config} contains the absolute install prefix")
    endif()
  endforeach()
endfunction()

function(vcpkg_install_copyright)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "FILE_LIST")
  set(_text "")
  foreach(_file IN LISTS arg_FILE_LIST)
    file(READ "${_file}" _content)
    string(APPEND _text "${_content}")
  endforeach()
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright" "${_text}")
endfunction()

# --- The port ---------------------------------------------------------------------------------------
include("${PORT_DIR}/portfile.cmake")

# --- What vcpkg's post-build checks expect of a header-only package ----------------------------------
foreach(_file share/${PORT}/copyright share/${PORT}/usage share/${PORT}/${PORT}-config.cmake
              share/${PORT}/${PORT}-config-version.cmake share/${PORT}/${PORT}-targets.cmake
              include/${PORT}/${PORT}.hpp include/${PORT}/version.hpp)
  if(NOT EXISTS "${CURRENT_PACKAGES_DIR}/${_file}")
    message(FATAL_ERROR "package lacks ${_file}")
  endif()
endforeach()
file(GLOB _top_level RELATIVE "${CURRENT_PACKAGES_DIR}" "${CURRENT_PACKAGES_DIR}/*")
list(SORT _top_level)
if(NOT _top_level STREQUAL "include;share")
  message(FATAL_ERROR "a header-only package holds only include/ and share/, not: ${_top_level}")
endif()
message(STATUS "vcpkg port ${PORT} ${VERSION}: package tree OK at ${CURRENT_PACKAGES_DIR}")
