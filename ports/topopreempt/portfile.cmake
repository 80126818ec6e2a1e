# SPDX-License-Identifier: MIT
# vcpkg port in registry form, after vcpkg's ports/cpp-sort: the release tarball of tag v${VERSION}.
# SHA512 is that tarball's, filled at release: after pushing tag vX.Y.Z, set the version in
# vcpkg.json and run `vcpkg install topopreempt --overlay-ports=ports`; vcpkg prints the actual
# SHA512 of the download, which replaces the value below. Before the tag exists the download
# fails, so from a checkout use the overlay as README.md "Use it in your project" says.
set(VCPKG_BUILD_TYPE release) # header-only

vcpkg_from_github(
    OUT_SOURCE_PATH SOURCE_PATH
    REPO topopreempt/topopreempt
    REF "v${VERSION}"
    SHA512 00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
    HEAD_REF main
)

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        -DTOPOPREEMPT_BUILD_TESTS=OFF
        -DTOPOPREEMPT_BUILD_EXAMPLES=OFF
        -DTOPOPREEMPT_BUILD_BENCHMARKS=OFF
        -DTOPOPREEMPT_BUILD_TOOLS=OFF
        -DTOPOPREEMPT_BUILD_EXPERIMENTS=OFF
        -DTOPOPREEMPT_BUILD_C_API=OFF
        -DTOPOPREEMPT_INSTALL=ON
)

vcpkg_cmake_install()

# Our config is installed to share/topopreempt already; said explicitly all the same.
vcpkg_cmake_config_fixup(PACKAGE_NAME topopreempt CONFIG_PATH share/topopreempt)

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/lib")

vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
