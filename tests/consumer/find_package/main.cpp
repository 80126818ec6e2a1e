// SPDX-License-Identifier: MIT
#include <Eigen/Core>  // must be reachable through topopreempt::topopreempt alone
#include <iostream>
#include <string_view>
#include <topopreempt/topopreempt.hpp>

static_assert(topopreempt::version_string == std::string_view{EXPECTED_VERSION},
              "version.hpp disagrees with the installed package version");

int main() {
  std::cout << "topopreempt " << topopreempt::version_string << " (find_package consumer)\n";
  return 0;
}
