// SPDX-License-Identifier: MIT
#pragma once
/// @file cost_model.hpp
/// Deprecated forwarding header, kept for the 0.6 series only: include topopreempt/model/cost_model.hpp
/// (the verifier prices plans, so cost models sit below plan/ and solvers/).
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/solvers/cost_model.hpp is deprecated and goes in 0.7: include topopreempt/model/cost_model.hpp")
#endif

#include "topopreempt/model/cost_model.hpp"
