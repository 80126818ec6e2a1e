// SPDX-License-Identifier: MIT
#pragma once
/// @file benchmarks/bench_timing.hpp
/// Timing helpers shared by the benchmark programs: decisions are timed in CPU time of the
/// calling thread (the machine is shared and noisy; wall time drifts, CPU time holds).
#include <algorithm>
#include <ctime>
#include <vector>

namespace topopreempt_bench {

/// CPU seconds consumed by the calling thread.
inline double thread_seconds() {
  std::timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

/// Median of `values` (0 for none).
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace topopreempt_bench
