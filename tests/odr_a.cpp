// SPDX-License-Identifier: MIT
// With odr_b.cpp: two translation units including everything, so a non-inline definition in any
// header is a duplicate symbol at link time (after range-v3's test/multiple1.cpp).
#include <topopreempt/topopreempt.hpp>

namespace topopreempt_odr {
int odr_a() { return static_cast<int>(topopreempt::version_string.size()); }
}  // namespace topopreempt_odr
