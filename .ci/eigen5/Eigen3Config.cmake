# SPDX-License-Identifier: MIT
# Stand-in for the Eigen3Config.cmake that Eigen 5.0.1 installs to share/eigen3/cmake: the
# Eigen3::Eigen target over <prefix>/include/eigen3 and the version variables. The headers under
# it are Eigen 5.0.1's own (see make-eigen5.sh); the matching version file is written by CMake's
# write_basic_package_version_file(... SameMajorVersion), as Eigen's build does, so a
# find_package(Eigen3 3.4) request is rejected here exactly as by a real Eigen 5 install.
get_filename_component(_eigen5_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET Eigen3::Eigen)
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                 "${_eigen5_prefix}/include/eigen3")
endif()
set(EIGEN3_FOUND 1)
set(EIGEN3_INCLUDE_DIR "${_eigen5_prefix}/include/eigen3")
set(EIGEN3_INCLUDE_DIRS "${_eigen5_prefix}/include/eigen3")
set(EIGEN3_VERSION_STRING "5.0.1")
unset(_eigen5_prefix)
