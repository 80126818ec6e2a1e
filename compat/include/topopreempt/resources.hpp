// SPDX-License-Identifier: MIT
#pragma once
/// @file resources.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/resources.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/resources.hpp is deprecated and goes in 0.6: include topopreempt/model/resources.hpp")
#endif

#include "topopreempt/model/resources.hpp"
