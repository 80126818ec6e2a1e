// SPDX-License-Identifier: MIT
#pragma once
/// @file allocation.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/allocation.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/allocation.hpp is deprecated and goes in 0.6: include topopreempt/model/allocation.hpp")
#endif

#include "topopreempt/model/allocation.hpp"
