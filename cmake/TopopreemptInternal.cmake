# SPDX-License-Identifier: MIT
# Internal build settings for topopreempt's own targets (tests, examples, benchmarks, tools).
# Never installed or exported: consumers of topopreempt::topopreempt get none of these flags.
include_guard(GLOBAL)

add_library(topopreempt_warnings INTERFACE)
# Dependencies come in through imported targets, whose include directories are SYSTEM, so their
# warnings do not trip -Werror; only our headers and sources are held to these flags.
target_compile_options(
  topopreempt_warnings
  INTERFACE $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic -Werror>
            $<$<CXX_COMPILER_ID:MSVC>:/W4 /WX /permissive->)
# GCC 12 at -O3 reports two known false positives from inlined library code: -Wrestrict inside
# libstdc++'s std::string operator+ (GCC bug 105329) and -Wmaybe-uninitialized on a moved-from
# Eigen dynamic vector's data pointer (Eigen's DenseStorage initialises it; GCC bug 105562
# family). Both stay visible as warnings but do not fail the build.
target_compile_options(topopreempt_warnings INTERFACE
                       $<$<CXX_COMPILER_ID:GNU>:-Wno-error=restrict -Wno-error=maybe-uninitialized>)

set(_topopreempt_sanitize_flags "")
if(TOPOPREEMPT_SANITIZE)
  if(MSVC)
    message(FATAL_ERROR "TOPOPREEMPT_SANITIZE supports GCC and Clang only")
  endif()
  set(_topopreempt_sanitize_flags -fsanitize=address,undefined -fno-omit-frame-pointer
                                  -fno-sanitize-recover=all)
endif()
add_library(topopreempt_sanitizers INTERFACE)
target_compile_options(topopreempt_sanitizers INTERFACE ${_topopreempt_sanitize_flags})
target_link_options(topopreempt_sanitizers INTERFACE ${_topopreempt_sanitize_flags})

# topopreempt_add_program(<target> <source> [LIBRARIES <lib>...])
# One executable of ours: links the library, the internal flags, and knows where shared data is.
function(topopreempt_add_program target source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "LIBRARIES")
  add_executable(${target} "${source}")
  target_link_libraries(${target} PRIVATE topopreempt::topopreempt topopreempt_warnings
                                          topopreempt_sanitizers ${arg_LIBRARIES})
  target_compile_definitions(${target} PRIVATE TOPOPREEMPT_DATA_DIR="${TOPOPREEMPT_DATA_DIR}")
  # Plain -std=c++20, not gnu++20: -Wpedantic then flags GNU extensions a consumer may not have.
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
endfunction()

# The full, read-only data set lives beside the repository (../shared/data) on development and CI
# machines, not in a plain clone. Programs also honour the TOPOPREEMPT_DATA_DIR environment
# variable at run time (tests/data_dir.hpp); the unit tests' own small data is in tests/data.
get_filename_component(_topopreempt_default_data_dir "${PROJECT_SOURCE_DIR}/../shared/data"
                       ABSOLUTE)
set(TOPOPREEMPT_DATA_DIR
    "${_topopreempt_default_data_dir}"
    CACHE PATH "Directory of the full data set (compiled into our programs as the default)")
if(NOT IS_DIRECTORY "${TOPOPREEMPT_DATA_DIR}")
  message(STATUS "TOPOPREEMPT_DATA_DIR=${TOPOPREEMPT_DATA_DIR} does not exist: the checks that "
                 "need the full data set will be reported as skipped")
endif()
