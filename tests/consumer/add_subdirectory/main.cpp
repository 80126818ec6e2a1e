// SPDX-License-Identifier: MIT
#include <iostream>
#include <topopreempt/topopreempt.hpp>

#include "../io_check.hpp"

int main() {
  std::cout << "topopreempt " << topopreempt::version_string << " (add_subdirectory consumer)\n";
  return consumer_io_check() ? 0 : 1;
}
