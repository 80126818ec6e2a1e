// SPDX-License-Identifier: MIT
#pragma once
/// @file plan_verifier.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/plan/verifier.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/plan_verifier.hpp is deprecated and goes in 0.6: include topopreempt/plan/verifier.hpp")
#endif

#include "topopreempt/plan/verifier.hpp"
