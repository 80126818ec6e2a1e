// SPDX-License-Identifier: MIT
#pragma once
/// @file preemptor_queue.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/decisions/preemptor_queue.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/preemptor_queue.hpp is deprecated and goes in 0.6: include topopreempt/decisions/preemptor_queue.hpp")
#endif

#include "topopreempt/decisions/preemptor_queue.hpp"
