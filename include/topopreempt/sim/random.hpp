// SPDX-License-Identifier: MIT
#pragma once
/// @file random.hpp
/// Portable random draws for the simulator and trace generators. The standard library's
/// distributions (`std::uniform_real_distribution`, ...) are implementation-defined, so the same
/// seed would give different traces with libstdc++ and libc++; these are written out by hand on
/// top of `std::mt19937_64`, whose output sequence the standard fixes.

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>

namespace topopreempt::sim {

/// The simulator's generator: fully specified by the standard, so a seed means the same
/// sequence everywhere.
using Random = std::mt19937_64;

/// Uniform in [0, 1) with 53 random bits.
[[nodiscard]] inline double uniform01(Random& random) {
  return static_cast<double>(random() >> 11) * 0x1.0p-53;
}

/// Uniform integer in [0, bound) without modulo bias (rejection sampling); throws on bound 0.
[[nodiscard]] inline std::uint64_t uniform_below(Random& random, std::uint64_t bound) {
  if (bound == 0) throw std::invalid_argument("uniform_below: bound must be positive");
  const std::uint64_t limit =
      std::uint64_t(0) - (std::uint64_t(0) - bound) % bound;  // multiple of bound
  for (;;) {
    const std::uint64_t draw = random();
    if (limit == 0 || draw < limit) return draw % bound;
  }
}

/// Exponentially distributed with the given mean (inverse transform).
[[nodiscard]] inline double exponential(Random& random, double mean) {
  return -mean * std::log1p(-uniform01(random));
}

/// Fisher-Yates shuffle with `uniform_below` (std::shuffle's draws are implementation-defined).
template <class Range>
void shuffle(Range& range, Random& random) {
  const auto n = static_cast<std::uint64_t>(range.size());
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = uniform_below(random, i);
    using std::swap;
    swap(range[i - 1], range[j]);
  }
}

}  // namespace topopreempt::sim
