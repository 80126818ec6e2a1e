// SPDX-License-Identifier: MIT
#pragma once
/// @file cluster_generator.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/model/cluster_generator.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/cluster_generator.hpp is deprecated and goes in 0.6: include topopreempt/model/cluster_generator.hpp")
#endif

#include "topopreempt/model/cluster_generator.hpp"
