// SPDX-License-Identifier: MIT
#pragma once
/// @file machine_shapes.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/machine_shapes.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/machine_shapes.hpp is deprecated and goes in 0.6: include topopreempt/model/machine_shapes.hpp")
#endif

#include "topopreempt/model/machine_shapes.hpp"
