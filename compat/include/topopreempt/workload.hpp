// SPDX-License-Identifier: MIT
#pragma once
/// @file workload.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/workload.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/workload.hpp is deprecated and goes in 0.6: include topopreempt/model/workload.hpp")
#endif

#include "topopreempt/model/workload.hpp"
