// SPDX-License-Identifier: MIT
#include <Eigen/Core>  // must be reachable through topopreempt::topopreempt alone
#include <iostream>
#include <range/v3/version.hpp>
#include <topopreempt/topopreempt.hpp>

int main() {
  std::cout << "topopreempt " << topopreempt::version_string << " (conan test_package; Eigen "
            << EIGEN_WORLD_VERSION << '.' << EIGEN_MAJOR_VERSION << ", range-v3 " << RANGE_V3_MAJOR
            << '.' << RANGE_V3_MINOR << ")\n";
  return 0;
}
