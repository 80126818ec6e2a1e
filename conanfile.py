# SPDX-License-Identifier: MIT
# Conan 2 recipe in the form of conan-center-index's docs/package_templates/header_only: sources
# from conandata.yml in source(), headers copied in package(), CMake names declared in
# package_info() (CMakeDeps writes consumers' topopreempt-config.cmake; none is packaged).
#
# Two ways to run it:
# - from a recipe index (ConanCenter's recipes/topopreempt/all/, or any folder holding only this
#   file and conandata.yml): source() downloads the release tarball conandata.yml lists;
# - from a checkout of topopreempt (`conan create .`): the recipe sits beside include/, so
#   export_sources() exports the checkout's headers and source() downloads nothing. The version
#   then defaults to, and must equal, the checkout's project(topopreempt VERSION ...).
import os
import re

from conan import ConanFile
from conan.errors import ConanException, ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, get, load
from conan.tools.layout import basic_layout
from conan.tools.scm import Version

required_conan_version = ">=2.0"

# scripts/check_packaging.py applies this pattern to CMakeLists.txt too: keep it a plain literal.
_PROJECT_VERSION_PATTERN = r"project\(\s*topopreempt\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)"


class TopopreemptConan(ConanFile):
    name = "topopreempt"
    description = "Topology-aware preemption planning for GPU clusters (header-only C++20)"
    license = "MIT"
    url = "https://github.com/conan-io/conan-center-index"
    homepage = "https://github.com/topopreempt/topopreempt"
    topics = ("scheduling", "preemption", "gpu", "cluster", "topology", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    # with_io: the JSON snapshot headers (topopreempt/io/) need nlohmann_json; on, the package
    # requires it and offers the target topopreempt::io (as the CMake install's `io` component).
    # Off by default: the core headers never include it.
    options = {"with_io": [True, False]}
    default_options = {"with_io": False}
    no_copy_source = True

    @property
    def _min_cppstd(self):
        return 20

    @property
    def _compilers_minimum_version(self):
        # C++20 as the headers use it: concepts, <span>, <bit>, defaulted operator<=>, designated
        # initialisers, and floating-point std::to_chars (libstdc++ 11, MSVC 19.24, libc++ 14 /
        # Apple's from Xcode 14.3). GCC 12 and Clang 14 are the compilers CI builds with.
        return {
            "gcc": "11",
            "clang": "14",
            "apple-clang": "14.3",
            "msvc": "192",
        }

    def _checkout_folder(self):
        """The topopreempt checkout this recipe sits in, or None in a recipe index."""
        if os.path.isfile(os.path.join(self.recipe_folder, "include", "topopreempt", "version.hpp")):
            return self.recipe_folder
        return None

    def set_version(self):
        # Only from a checkout, and only when no --version was given: a recipe index always gives
        # the version (ConanCenter's config.yml).
        checkout = self._checkout_folder()
        if self.version is None and checkout is not None:
            self.version = self._checkout_version(checkout)

    def _checkout_version(self, checkout):
        match = re.search(_PROJECT_VERSION_PATTERN, load(self, os.path.join(checkout, "CMakeLists.txt")))
        if match is None:
            raise ConanException(f"no `project(topopreempt VERSION x.y.z` in {checkout}/CMakeLists.txt")
        return match.group(1)

    def export_sources(self):
        checkout = self._checkout_folder()
        if checkout is None:
            return  # a recipe index: source() downloads the release
        found = self._checkout_version(checkout)
        if str(self.version) != found:
            raise ConanException(
                f"this checkout is topopreempt {found}, not {self.version}: "
                f"run `conan create .` without --version, or with --version {found}")
        # Under src/, the layout's source folder: Conan copies exported sources to the base
        # source folder.
        destination = os.path.join(self.export_sources_folder, "src")
        copy(self, "LICENSE", checkout, destination)
        copy(self, "*.hpp", os.path.join(checkout, "include"), os.path.join(destination, "include"))
        copy(self, "*.hpp", os.path.join(checkout, "compat", "include"),
             os.path.join(destination, "compat", "include"))

    def layout(self):
        basic_layout(self, src_folder="src")

    def requirements(self):
        # Header-only: the dependencies appear in our public headers, so they are transitive.
        # eigen/3.4.0 and eigen/5.0.1 both work; a profile's [replace_requires] picks 5.0.1.
        self.requires("eigen/3.4.0")
        self.requires("range-v3/0.12.0")
        if self.options.with_io:
            self.requires("nlohmann_json/3.11.3")

    def package_id(self):
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, self._min_cppstd)
        minimum_version = self._compilers_minimum_version.get(str(self.settings.compiler), False)
        if minimum_version and Version(self.settings.compiler.version) < minimum_version:
            raise ConanInvalidConfiguration(
                f"{self.ref} requires C++{self._min_cppstd}, which your compiler does not support "
                f"well enough (needs {self.settings.compiler} >= {minimum_version}).")

    def source(self):
        exported = os.path.join(self.export_sources_folder, "src", "include", "topopreempt")
        if os.path.isfile(os.path.join(exported, "version.hpp")):
            return  # exported from a checkout by export_sources(), copied to source_folder by Conan
        sources = self.conan_data.get("sources", {}) if self.conan_data else {}
        if self.version not in sources:
            raise ConanException(
                f"conandata.yml lists no release tarball for topopreempt {self.version}; "
                "run `conan create .` from a checkout instead")
        get(self, **sources[self.version], strip_root=True)

    def build(self):
        pass

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"),
             os.path.join(self.package_folder, "include"))
        # The 0.4 include paths as deprecated forwarding headers (0.5 series only), merged into
        # the same include directory, as the CMake install does.
        copy(self, "*.hpp", os.path.join(self.source_folder, "compat", "include"),
             os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "topopreempt")
        self.cpp_info.set_property("cmake_target_name", "topopreempt::topopreempt")
        self.cpp_info.requires = ["eigen::eigen", "range-v3::range-v3"]
        if self.options.with_io:
            # The CMake install's topopreempt::io, as an alias: with the option on, the package
            # itself carries nlohmann_json. (Components would name it separately, but a
            # component's requires reject [platform_requires] packages, which the offline build
            # uses.)
            self.cpp_info.requires.append("nlohmann_json::nlohmann_json")
            self.cpp_info.set_property("cmake_target_aliases", ["topopreempt::io"])
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
