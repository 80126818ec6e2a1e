// SPDX-License-Identifier: MIT
#include <iostream>
#include <topopreempt/topopreempt.hpp>

int main() {
  std::cout << "topopreempt " << topopreempt::version_string << " (add_subdirectory consumer)\n";
  return 0;
}
