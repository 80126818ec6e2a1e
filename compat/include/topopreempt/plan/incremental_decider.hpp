// SPDX-License-Identifier: MIT
#pragma once
/// @file incremental_decider.hpp
/// Deprecated forwarding header, kept for the 0.6 series only: include topopreempt/decisions/incremental_decider.hpp
/// (decisions over time sit above the solvers they call).
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/plan/incremental_decider.hpp is deprecated and goes in 0.7: include topopreempt/decisions/incremental_decider.hpp")
#endif

#include "topopreempt/decisions/incremental_decider.hpp"
