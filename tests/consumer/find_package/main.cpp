// SPDX-License-Identifier: MIT
#include <Eigen/Core>  // must be reachable through topopreempt::topopreempt alone
#include <iostream>
#include <string_view>
#include <topopreempt/topopreempt.hpp>

#include "../io_check.hpp"

static_assert(topopreempt::version_string == std::string_view{EXPECTED_VERSION},
              "version.hpp disagrees with the installed package version");

// Eigen 5 moved to semantic versioning inside the old macros: 3.4.0 is WORLD.MAJOR.MINOR =
// 3.4.0, 5.0.1 is MAJOR.MINOR.PATCH = 5.0.1 (WORLD stays 3). Print the version actually compiled.
#ifdef EIGEN_PATCH_VERSION
constexpr int eigen_version[] = {EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, EIGEN_PATCH_VERSION};
#else
constexpr int eigen_version[] = {EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION};
#endif

#ifdef EXPECTED_EIGEN_MAJOR
static_assert(eigen_version[0] == EXPECTED_EIGEN_MAJOR,
              "compiled against another Eigen than the one CMake found");
#endif

int main() {
  std::cout << "topopreempt " << topopreempt::version_string << " (find_package consumer; Eigen "
            << eigen_version[0] << '.' << eigen_version[1] << '.' << eigen_version[2] << ")\n";
  return consumer_io_check() ? 0 : 1;
}
