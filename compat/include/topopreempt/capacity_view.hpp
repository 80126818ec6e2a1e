// SPDX-License-Identifier: MIT
#pragma once
/// @file capacity_view.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/capacity_view.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/capacity_view.hpp is deprecated and goes in 0.6: include topopreempt/model/capacity_view.hpp")
#endif

#include "topopreempt/model/capacity_view.hpp"
