// SPDX-License-Identifier: MIT
// See odr_a.cpp.
#include <topopreempt/topopreempt.hpp>

namespace topopreempt_odr {
int odr_b() { return static_cast<int>(topopreempt::version_string.size()); }
}  // namespace topopreempt_odr
