# SPDX-License-Identifier: MIT
# CI stand-in for ConanCenter's range-v3 recipe, offline: packages Debian's range-v3 headers
# (librange-v3-dev, 0.12.0) with NO CMake config of its own, so consumers get range-v3::range-v3
# only from CMakeDeps (names as in conan-center-index recipes/range-v3/all/conanfile.py).
#   conan create . --version 0.12.0
import os
import re

from conan import ConanFile
from conan.errors import ConanException
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout

_SYSTEM_INCLUDE = "/usr/include"


class RangeV3StandInConan(ConanFile):
    name = "range-v3"
    description = "Debian's range-v3 headers, packaged like ConanCenter's range-v3 (CI only)"
    license = "BSL-1.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True

    def layout(self):
        basic_layout(self, src_folder="src")

    def package_id(self):
        self.info.clear()

    def package(self):
        version_header = load(self, os.path.join(_SYSTEM_INCLUDE, "range", "v3", "version.hpp"))
        parts = dict(re.findall(r"#define RANGE_V3_(MAJOR|MINOR|PATCHLEVEL) (\d+)", version_header))
        found = f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCHLEVEL']}"
        if found != str(self.version):
            raise ConanException(f"{_SYSTEM_INCLUDE} holds range-v3 {found}, not {self.version}")
        for folder in ("range", "meta", "concepts", "std"):
            copy(self, "*", os.path.join(_SYSTEM_INCLUDE, folder),
                 os.path.join(self.package_folder, "include", folder))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "range-v3")
        self.cpp_info.set_property("cmake_target_name", "range-v3::range-v3")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
