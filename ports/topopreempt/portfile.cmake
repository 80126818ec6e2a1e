# SPDX-License-Identifier: MIT
# Overlay port (vcpkg install topopreempt --overlay-ports=ports), after vcpkg's ports/cpp-sort.
set(VCPKG_BUILD_TYPE release) # header-only

# This overlay builds the source tree it sits in. A registry port would download a release
# instead, replacing the next line with:
#   vcpkg_from_github(
#       OUT_SOURCE_PATH SOURCE_PATH
#       REPO <owner>/topopreempt
#       REF "v${VERSION}"
#       SHA512 <sha512 of that tag's tarball, as printed by the first failing vcpkg install>
#       HEAD_REF main
#   )
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        -DTOPOPREEMPT_BUILD_TESTS=OFF
        -DTOPOPREEMPT_BUILD_EXAMPLES=OFF
        -DTOPOPREEMPT_BUILD_BENCHMARKS=OFF
        -DTOPOPREEMPT_BUILD_TOOLS=OFF
        -DTOPOPREEMPT_BUILD_EXPERIMENTS=OFF
        -DTOPOPREEMPT_INSTALL=ON
)

vcpkg_cmake_install()

# The package config is installed to share/topopreempt already, so no CONFIG_PATH is needed.
vcpkg_cmake_config_fixup()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/lib")

vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
