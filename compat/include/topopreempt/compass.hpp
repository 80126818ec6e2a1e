// SPDX-License-Identifier: MIT
#pragma once
/// @file compass.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model_cache/model_cache.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/compass.hpp is deprecated and goes in 0.6: include topopreempt/model_cache/model_cache.hpp")
#endif

#include "topopreempt/model_cache/model_cache.hpp"

// The namespace was named after the paper until 0.5.0.
namespace topopreempt {
namespace compass = model_cache;
}  // namespace topopreempt
