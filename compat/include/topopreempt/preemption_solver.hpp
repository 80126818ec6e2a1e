// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_solver.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/solvers/preemption_solver.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/preemption_solver.hpp is deprecated and goes in 0.6: include topopreempt/solvers/preemption_solver.hpp")
#endif

#include "topopreempt/solvers/preemption_solver.hpp"
