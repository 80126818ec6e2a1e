// SPDX-License-Identifier: MIT
#pragma once
/// @file mix.hpp
/// splitmix64's finaliser, shared by the state's digests (domain versions, band digests) and
/// its id map. Internal.

#include <cstdint>

namespace topopreempt::detail {

/// splitmix64's finaliser: a bijective mix, so distinct inputs stay distinct.
[[nodiscard]] constexpr std::uint64_t splitmix64_mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

}  // namespace topopreempt::detail
