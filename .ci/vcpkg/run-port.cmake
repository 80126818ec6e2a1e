# SPDX-License-Identifier: MIT
# Runs ports/topopreempt/portfile.cmake without the vcpkg tool (which needs network access to
# bootstrap): minimal stand-ins for the vcpkg helpers the port calls, then the checks vcpkg's
# post-build validation would make on the resulting package tree.
#
#   cmake -DPORT_DIR=<repo>/ports/topopreempt -DWORK_DIR=<scratch dir> -DSOURCE_REPO=<git checkout>
#         [-DINSTALLED_PREFIX=<prefix of the dependencies, e.g. an Eigen 5 install>]
#         -P run-port.cmake
#
# vcpkg_from_github checks its arguments as the registry expects them (REPO owner/name, REF the
# release tag v${VERSION}, a 128-digit SHA512, HEAD_REF) and, offline, "downloads" the tag's
# tarball as `git archive` of SOURCE_REPO's HEAD, the commit that will be tagged.
# The package lands in <WORK_DIR>/packages/topopreempt_x64-linux, usable as CMAKE_PREFIX_PATH.
cmake_minimum_required(VERSION 3.21)

foreach(_required PORT_DIR WORK_DIR SOURCE_REPO)
  if(NOT DEFINED ${_required})
    message(FATAL_ERROR "usage: cmake -DPORT_DIR=... -DWORK_DIR=... -DSOURCE_REPO=... "
                        "[-DINSTALLED_PREFIX=...] -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
endforeach()
get_filename_component(PORT_DIR "${PORT_DIR}" ABSOLUTE)
if(NOT DEFINED INSTALLED_PREFIX)
  set(INSTALLED_PREFIX "")
endif()

set(PORT topopreempt)
set(TARGET_TRIPLET x64-linux)
file(READ "${PORT_DIR}/vcpkg.json" _manifest)
string(JSON VERSION GET "${_manifest}" version)
set(CURRENT_PACKAGES_DIR "${WORK_DIR}/packages/${PORT}_${TARGET_TRIPLET}")
set(CURRENT_BUILDTREES_DIR "${WORK_DIR}/buildtrees/${PORT}")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}" "${CURRENT_BUILDTREES_DIR}")

# --- Stand-ins for the vcpkg helpers ---------------------------------------------------------------
function(vcpkg_from_github)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUT_SOURCE_PATH;REPO;REF;SHA512;HEAD_REF"
                        "PATCHES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "vcpkg_from_github: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_OUT_SOURCE_PATH)
    message(FATAL_ERROR "vcpkg_from_github: OUT_SOURCE_PATH is required")
  endif()
  if(NOT arg_REPO MATCHES "^[A-Za-z0-9_.-]+/${PORT}$")
    message(FATAL_ERROR "vcpkg_from_github: REPO '${arg_REPO}' is not <owner>/${PORT}")
  endif()
  if(NOT arg_REF STREQUAL "v${VERSION}")
    message(FATAL_ERROR "vcpkg_from_github: REF '${arg_REF}' is not the release tag v${VERSION} "
                        "of the port's version")
  endif()
  if(NOT arg_SHA512 MATCHES "^[0-9a-f]+$")
    message(FATAL_ERROR "vcpkg_from_github: SHA512 '${arg_SHA512}' is not lower-case hex")
  endif()
  string(LENGTH "${arg_SHA512}" _length)
  if(NOT _length EQUAL 128)
    message(FATAL_ERROR "vcpkg_from_github: SHA512 has ${_length} hex digits, not 128")
  endif()
  if(NOT arg_HEAD_REF)
    message(FATAL_ERROR "vcpkg_from_github: HEAD_REF (for --head builds) is missing")
  endif()
  # The download: what GitHub serves for the tag is `git archive` of the tagged commit.
  set(_archive "${WORK_DIR}/downloads/${PORT}-${arg_REF}.tar.gz")
  file(MAKE_DIRECTORY "${WORK_DIR}/downloads" "${CURRENT_BUILDTREES_DIR}/src")
  execute_process(COMMAND git -C "${SOURCE_REPO}" archive --format=tar.gz
                          "--prefix=${PORT}-${VERSION}/" -o "${_archive}" HEAD
                  COMMAND_ERROR_IS_FATAL ANY)
  file(SHA512 "${_archive}" _actual)
  message(STATUS "vcpkg_from_github: ${arg_REPO}@${arg_REF} from ${SOURCE_REPO} HEAD "
                 "(SHA512 ${_actual}; the port's is checked for form only)")
  file(ARCHIVE_EXTRACT INPUT "${_archive}" DESTINATION "${CURRENT_BUILDTREES_DIR}/src")
  set(${arg_OUT_SOURCE_PATH} "${CURRENT_BUILDTREES_DIR}/src/${PORT}-${VERSION}" PARENT_SCOPE)
endfunction()

function(vcpkg_cmake_configure)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "SOURCE_PATH" "OPTIONS;OPTIONS_RELEASE;OPTIONS_DEBUG")
  if(NOT VCPKG_BUILD_TYPE STREQUAL "release")
    message(FATAL_ERROR "a header-only port sets VCPKG_BUILD_TYPE release")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${arg_SOURCE_PATH}" -B "${CURRENT_BUILDTREES_DIR}/rel"
            -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=${CURRENT_PACKAGES_DIR}"
            "-DCMAKE_PREFIX_PATH=${INSTALLED_PREFIX}"
            ${arg_OPTIONS} ${arg_OPTIONS_RELEASE}
    COMMAND_ERROR_IS_FATAL ANY)
  # vcpkg builds against its installed tree only: with INSTALLED_PREFIX, Eigen must come from it.
  if(INSTALLED_PREFIX)
    file(STRINGS "${CURRENT_BUILDTREES_DIR}/rel/CMakeCache.txt" _eigen_dir REGEX "^Eigen3_DIR:")
    string(FIND "${_eigen_dir}" "${INSTALLED_PREFIX}" _at)
    if(NOT _at GREATER -1)
      message(FATAL_ERROR "Eigen3 was not taken from ${INSTALLED_PREFIX}: ${_eigen_dir}")
    endif()
    message(STATUS "vcpkg_cmake_configure: ${_eigen_dir}")
  endif()
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
              share/${PORT}/TopopreemptEigenCheck.cmake
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
