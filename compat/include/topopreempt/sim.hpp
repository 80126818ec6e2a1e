// SPDX-License-Identifier: MIT
#pragma once
/// @file sim.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/sim/sim.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/sim.hpp is deprecated and goes in 0.6: include topopreempt/sim/sim.hpp")
#endif

#include "topopreempt/sim/sim.hpp"
