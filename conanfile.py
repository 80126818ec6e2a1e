# SPDX-License-Identifier: MIT
# Conan 2 recipe, after conan-center-index docs/package_templates/header_only. It lives in the
# repository, so sources are exported from the tree instead of downloaded in source().
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load

required_conan_version = ">=2.0"

# The version has one source of truth: project(topopreempt VERSION x.y.z) in CMakeLists.txt.
# scripts/check_packaging.py applies this same pattern, so keep it a plain string literal.
_PROJECT_VERSION_PATTERN = r"project\(\s*topopreempt\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)"


class TopopreemptConan(ConanFile):
    name = "topopreempt"
    description = "Topology-aware preemption planning for GPU clusters"
    license = "MIT"
    topics = ("scheduling", "preemption", "gpu", "cluster", "knapsack", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True
    exports_sources = "CMakeLists.txt", "cmake/*", "include/*", "LICENSE"

    def set_version(self):
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        match = re.search(_PROJECT_VERSION_PATTERN, cmakelists)
        if match is None:
            raise ValueError("no `project(topopreempt VERSION x.y.z` in CMakeLists.txt")
        self.version = match.group(1)

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # Header-only: the dependencies appear in our public headers, so they are transitive.
        self.requires("eigen/3.4.0")
        self.requires("range-v3/0.12.0")

    def package_id(self):
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        toolchain = CMakeToolchain(self)
        toolchain.cache_variables["TOPOPREEMPT_BUILD_TESTS"] = False
        toolchain.cache_variables["TOPOPREEMPT_BUILD_EXAMPLES"] = False
        toolchain.cache_variables["TOPOPREEMPT_BUILD_BENCHMARKS"] = False
        toolchain.cache_variables["TOPOPREEMPT_BUILD_TOOLS"] = False
        toolchain.cache_variables["TOPOPREEMPT_BUILD_EXPERIMENTS"] = False
        toolchain.cache_variables["TOPOPREEMPT_INSTALL"] = True
        toolchain.generate()

    def build(self):
        pass

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.configure()
        cmake.install()

    def package_info(self):
        # Consumers use the CMake config that `cmake --install` put in share/topopreempt: its
        # find_dependency(Eigen3 3.4)/find_dependency(range-v3) resolves ConanCenter's eigen and
        # range-v3 (CMakeDeps generates Eigen3-config.cmake/range-v3-config.cmake for them) and
        # equally the system packages of a [platform_requires] profile, for which CMakeDeps
        # generates nothing (a CMakeDeps-generated topopreempt target would then lack Eigen).
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = [os.path.join("share", "topopreempt")]
        # The names our config defines, for recipes that depend on topopreempt.
        self.cpp_info.set_property("cmake_file_name", "topopreempt")
        self.cpp_info.set_property("cmake_target_name", "topopreempt::topopreempt")
        self.cpp_info.requires = ["eigen::eigen", "range-v3::range-v3"]
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
