# SPDX-License-Identifier: MIT
# CI stand-in for ConanCenter's eigen recipe, offline: packages headers already on this machine
# (Debian's /usr/include/eigen3 for 3.4.0, the Eigen 5.0.1 prefix of .ci/eigen5/make-eigen5.sh
# for 5.0.1) and, like ConanCenter's package, NO CMake config of its own: consumers get
# Eigen3::Eigen only from CMakeDeps, through the properties below (copied in meaning from
# conan-center-index recipes/eigen/all/conanfile.py).
#   TOPOPREEMPT_CI_EIGEN_INCLUDE=<dir holding Eigen/> conan create . --version 3.4.0
import os
import re

from conan import ConanFile
from conan.errors import ConanException
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout


class EigenStandInConan(ConanFile):
    name = "eigen"
    description = "Eigen headers from this machine, packaged like ConanCenter's eigen (CI only)"
    license = "MPL-2.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True

    def layout(self):
        basic_layout(self, src_folder="src")

    def package_id(self):
        self.info.clear()

    def _headers(self):
        folder = os.environ.get("TOPOPREEMPT_CI_EIGEN_INCLUDE")
        if not folder or not os.path.isfile(os.path.join(folder, "Eigen", "Core")):
            raise ConanException("set TOPOPREEMPT_CI_EIGEN_INCLUDE to a directory holding Eigen/")
        return folder

    def package(self):
        headers = self._headers()
        # Eigen 5 states its version in Eigen/Version, Eigen 3 in Eigen/src/Core/util/Macros.h.
        version_file = os.path.join(headers, "Eigen", "Version")
        if not os.path.isfile(version_file):
            version_file = os.path.join(headers, "Eigen", "src", "Core", "util", "Macros.h")
        macros = dict(re.findall(r"#define EIGEN_(\w+)_VERSION (\d+)", load(self, version_file)))
        if "PATCH" in macros:  # Eigen >= 5: MAJOR.MINOR.PATCH
            found = f"{macros['MAJOR']}.{macros['MINOR']}.{macros['PATCH']}"
        else:  # Eigen 3.x: WORLD.MAJOR.MINOR
            found = f"{macros['WORLD']}.{macros['MAJOR']}.{macros['MINOR']}"
        if found != str(self.version):
            raise ConanException(f"{headers} holds Eigen {found}, not {self.version}")
        target = os.path.join(self.package_folder, "include", "eigen3")
        copy(self, "*", os.path.join(headers, "Eigen"), os.path.join(target, "Eigen"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "Eigen3")
        self.cpp_info.set_property("cmake_target_name", "Eigen3::Eigen")
        self.cpp_info.set_property("pkg_config_name", "eigen3")
        self.cpp_info.components["eigen3"].set_property("cmake_target_name", "Eigen3::Eigen")
        self.cpp_info.components["eigen3"].includedirs = [os.path.join("include", "eigen3")]
        self.cpp_info.components["eigen3"].bindirs = []
        self.cpp_info.components["eigen3"].libdirs = []
