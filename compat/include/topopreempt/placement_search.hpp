// SPDX-License-Identifier: MIT
#pragma once
/// @file placement_search.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/placement_search.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/placement_search.hpp is deprecated and goes in 0.6: include topopreempt/model/placement_search.hpp")
#endif

#include "topopreempt/model/placement_search.hpp"
