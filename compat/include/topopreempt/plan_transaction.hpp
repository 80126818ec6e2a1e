// SPDX-License-Identifier: MIT
#pragma once
/// @file plan_transaction.hpp
/// Deprecated forwarding header, kept for the 0.5 series only: include topopreempt/plan/transaction.hpp.
/// Define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES to silence the message.

#ifndef TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#pragma message("topopreempt/plan_transaction.hpp is deprecated and goes in 0.6: include topopreempt/plan/transaction.hpp")
#endif

#include "topopreempt/plan/transaction.hpp"
