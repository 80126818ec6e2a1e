// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_plan.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/plan/preemption_plan.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/preemption_plan.hpp is deprecated and goes in 0.6: include topopreempt/plan/preemption_plan.hpp")
#endif

#include "topopreempt/plan/preemption_plan.hpp"
