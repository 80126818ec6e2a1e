# SPDX-License-Identifier: MIT
# cmake -DOUT=<file> -P write-version.cmake: the version file of Eigen 5.0.1, written by the same
# CMake helper and compatibility mode Eigen's own build uses.
include(CMakePackageConfigHelpers)
write_basic_package_version_file("${OUT}" VERSION 5.0.1 COMPATIBILITY SameMajorVersion
                                 ARCH_INDEPENDENT)
