# SPDX-License-Identifier: MIT
# Eigen 3.4 and 5.x both work with topopreempt, but no find_package(Eigen3 <version>) request can
# say so: Eigen's version file is SameMajorVersion-like, so "3.4" rejects 5.x and "5" rejects 3.4.
# We therefore find Eigen3 without a version and enforce the floor here. Installed with the
# package config, which calls it after find_dependency(Eigen3).
include_guard(GLOBAL)

set(TOPOPREEMPT_MIN_EIGEN_VERSION 3.4)

# Fails with a clear message when the Eigen3 package just found is older than 3.4 or does not say
# its version at all (every Eigen3Config.cmake since 3.3 sets Eigen3_VERSION).
macro(topopreempt_check_eigen_version)
  if(NOT DEFINED Eigen3_VERSION OR Eigen3_VERSION STREQUAL "")
    message(FATAL_ERROR "topopreempt: the Eigen3 package found in '${Eigen3_DIR}' does not state "
                        "its version; topopreempt needs Eigen >= ${TOPOPREEMPT_MIN_EIGEN_VERSION}")
  endif()
  if(Eigen3_VERSION VERSION_LESS TOPOPREEMPT_MIN_EIGEN_VERSION)
    message(FATAL_ERROR "topopreempt needs Eigen >= ${TOPOPREEMPT_MIN_EIGEN_VERSION} (3.4 and 5.x "
                        "are tested), but found Eigen ${Eigen3_VERSION} in '${Eigen3_DIR}'")
  endif()
endmacro()
