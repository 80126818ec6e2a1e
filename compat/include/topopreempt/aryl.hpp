// SPDX-License-Identifier: MIT
#pragma once
/// @file aryl.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/capacity/loaning.hpp and topopreempt/capacity/elastic_scaling.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/aryl.hpp is deprecated and goes in 0.6: include topopreempt/capacity/loaning.hpp and topopreempt/capacity/elastic_scaling.hpp")
#endif

#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/capacity/elastic_scaling.hpp"

// The namespace and the cost model were named after the paper until 0.5.0.
namespace topopreempt {
namespace aryl = capacity;
namespace capacity {
using aryl_shrink_first [[deprecated("use topopreempt::capacity::shrink_elastic_first")]] =
    shrink_elastic_first;
}  // namespace capacity
}  // namespace topopreempt
