// SPDX-License-Identifier: MIT
#pragma once
/// @file capacity_view.hpp
/// `CapacityView`: what the placement search reads, so it runs on the live state and on
/// "what if these victims were gone" overlays alike.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/topology.hpp"

namespace topopreempt {

/// Read-only free capacity of every domain of a topology.
/// - `free(d, dim)`: free amount of a dimension in d's subtree;
/// - `idle_devices(d)`: devices in d's subtree that nobody uses;
/// - `device_occupancy(device)`: placement entries on a device (0 = idle).
template <class View>
concept CapacityView = requires(const View& view, DomainId d, std::size_t dim) {
  { view.topology() } -> std::same_as<const Topology&>;
  { view.free(d, dim) } -> std::convertible_to<Amount>;
  { view.idle_devices(d) } -> std::convertible_to<std::int64_t>;
  { view.device_occupancy(d) } -> std::convertible_to<std::int64_t>;
};

static_assert(CapacityView<Allocation>);

/// A `CapacityView` over a base view plus signed changes: entries *released* (victims gone)
/// and entries *consumed* (replicas being placed). Queries cost O(log k + k_d) for k changes,
/// k_d of them inside the queried subtree; nothing of the base is copied.
///
/// Thread-safety: like any value; the base must outlive the overlay and not change meanwhile.
template <CapacityView Base>
class OverlayView {
 public:
  /// A view over `base`, which must outlive it; nothing released yet.
  explicit OverlayView(const Base& base) : base_(&base) {}

  /// The topology of the base state.
  [[nodiscard]] const Topology& topology() const { return base_->topology(); }

  /// Makes everything in `entries` free again.
  void release(const std::vector<PlacementEntry>& entries) {
    for (const auto& entry : entries) change(entry.domain, entry.amount, -1);
  }
  /// Makes all of `placement` free again.
  void release(const Placement& placement) {
    for (const auto& replica : placement.replicas) release(replica.entries);
  }
  /// Takes `entries` (a replica being placed).
  void consume(const std::vector<PlacementEntry>& entries) {
    for (const auto& entry : entries) change(entry.domain, entry.amount, +1);
  }

  /// Free amount of dimension `dim` in domain `d`, with the overlay's changes applied.
  [[nodiscard]] Amount free(DomainId d, std::size_t dim) const {
    Amount result = base_->free(d, dim);
    const auto [first, last] = range(d);
    for (auto it = first; it != last; ++it) result -= it->amount(static_cast<Eigen::Index>(dim));
    return result;
  }
  /// Idle devices under domain `d`, with the overlay's changes applied.
  [[nodiscard]] std::int64_t idle_devices(DomainId d) const {
    std::int64_t result = base_->idle_devices(d);
    const auto [first, last] = range(d);
    for (auto it = first; it != last; ++it) {
      if (it->occupancy == 0 || !topology().is_device(it->domain)) continue;
      const std::int64_t before = base_->device_occupancy(it->domain);
      result += static_cast<std::int64_t>(before + it->occupancy == 0) -
                static_cast<std::int64_t>(before == 0);
    }
    return result;
  }
  /// How many workloads hold part of `device`, with the overlay's changes applied.
  [[nodiscard]] std::int64_t device_occupancy(DomainId device) const {
    std::int64_t result = base_->device_occupancy(device);
    const auto it = std::lower_bound(changes_.begin(), changes_.end(), device, by_domain);
    if (it != changes_.end() && it->domain == device) result += it->occupancy;
    return result;
  }

 private:
  struct Change {
    DomainId domain;
    ResourceVector amount;  // signed: + consumed, - released
    std::int64_t occupancy = 0;
  };
  static bool by_domain(const Change& change, DomainId d) { return change.domain < d; }

  void change(DomainId domain, const ResourceVector& amount, int sign) {
    auto it = std::lower_bound(changes_.begin(), changes_.end(), domain, by_domain);
    if (it == changes_.end() || it->domain != domain) {
      it = changes_.insert(it, Change{domain, ResourceVector::Zero(amount.size()), 0});
    }
    it->amount += sign * amount;
    if (topology().is_device(domain)) it->occupancy += sign;
  }
  [[nodiscard]] auto range(DomainId d) const {
    const auto first = std::lower_bound(changes_.begin(), changes_.end(), d, by_domain);
    const auto last =
        std::lower_bound(first, changes_.end(), topology().subtree_end(d), by_domain);
    return std::pair{first, last};
  }

  const Base* base_;
  std::vector<Change> changes_;  // sorted by domain
};

}  // namespace topopreempt
