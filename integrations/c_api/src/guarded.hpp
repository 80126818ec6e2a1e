// SPDX-License-Identifier: MIT
// The one way an entry point runs: every exception becomes a status and a message.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "c_api_internal.hpp"

namespace topopreempt_c {

/// Stores the message of a failed call; falls back to a static text when even that fails.
inline tp_status record(tp_cluster& cluster, tp_status status, const char* message) noexcept {
  try {
    cluster.last_error = message;
    cluster.static_error = nullptr;
  } catch (...) {
    cluster.static_error = "out of memory while storing the error message";
  }
  return status;
}

/// Runs `body` for the entry point on `cluster`: TP_OK and an empty message when it returns,
/// else the status and message of what it threw. Library exceptions map by type:
/// invalid_argument -> TP_E_INVALID, out_of_range -> TP_E_NOT_FOUND, bad_alloc ->
/// TP_E_NO_MEMORY, anything else -> TP_E_INTERNAL.
template <class Body>
tp_status guarded(tp_cluster* cluster, Body&& body) noexcept {
  if (cluster == nullptr) return TP_E_NULL;
  cluster->last_error.clear();
  cluster->static_error = nullptr;
  try {
    body();
    return TP_OK;
  } catch (const Failure& failure) {
    return record(*cluster, failure.status, failure.message.c_str());
  } catch (const std::bad_alloc&) {
    return record(*cluster, TP_E_NO_MEMORY, "out of memory; nothing changed");
  } catch (const std::invalid_argument& error) {
    return record(*cluster, TP_E_INVALID, error.what());
  } catch (const std::out_of_range& error) {
    return record(*cluster, TP_E_NOT_FOUND, error.what());
  } catch (const std::exception& error) {
    return record(*cluster, TP_E_INTERNAL, error.what());
  } catch (...) {
    return record(*cluster, TP_E_INTERNAL, "unknown error");
  }
}

}  // namespace topopreempt_c
