// SPDX-License-Identifier: MIT
#pragma once
/// @file incremental_decider.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/decisions/incremental_decider.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/incremental_decider.hpp is deprecated and goes in 0.6: include topopreempt/decisions/incremental_decider.hpp")
#endif

#include "topopreempt/decisions/incremental_decider.hpp"
