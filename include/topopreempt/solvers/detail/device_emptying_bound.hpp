// SPDX-License-Identifier: MIT
#pragma once
/// @file device_emptying_bound.hpp
/// A lower bound for whole-device demands on devices shared by several workloads (GPU shares):
/// a device is free only once *every* workload on it is gone, which the fractional bound (one
/// victim's gain = its devices) does not see.
///
/// Price each victim at r_v, its cheapest cost per device it can free in the target (over all
/// its options). Emptying device d costs at least c_d = sum of r_v over the workloads on d, so
/// freeing the k devices still missing costs at least the sum of the k smallest c_d; a device
/// holding a workload that may not go (ineligible, or spared earlier in the search) costs
/// infinity. Valid because any victim set pays r_v for each device it frees, and each freed
/// device needs every one of its occupants gone.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"

namespace topopreempt::detail {

class DeviceEmptyingBound {
 public:
  /// Prepares per-device occupants; inactive unless whole devices are asked and some device of
  /// the target is shared by two workloads (otherwise the fractional bound is as strong).
  DeviceEmptyingBound(const Allocation& state, const DomainProblem& problem)
      : problem_(&problem) {
    const Topology& topology = state.topology();
    const ResolvedDemand& demand = problem.tier->demand;
    if (demand.whole_devices <= 0) return;
    const auto devices = topology.domains_at(topology.device_level(), problem.target);
    bool shared = false;
    for (DomainId device : devices) shared = shared || state.device_occupancy(device) > 1;
    if (!shared) return;
    devices_.assign(devices.begin(), devices.end());
    occupants_.assign(devices_.size(), {});
    price_.assign(problem.victims.size(), std::numeric_limits<double>::infinity());
    for (std::size_t v = 0; v < problem.victims.size(); ++v) {
      const WorkloadView view = state.view(problem.victims[v].id);
      // Devices of each replica inside the target, to price shrinks per device freed.
      std::vector<std::size_t> per_replica(view.replica_begin.size(), 0);
      std::size_t total = 0;
      for (std::size_t r = 0; r < view.replica_begin.size(); ++r) {
        const auto [first, last] = view.replica_entries(r);
        for (std::size_t e = first; e < last; ++e) {
          const DomainId domain = view.domains[e];
          if (!topology.is_device(domain) || !topology.contains(problem.target, domain)) continue;
          ++per_replica[r];
          ++total;
          const auto it = std::lower_bound(devices_.begin(), devices_.end(), domain);
          auto& occupants = occupants_[static_cast<std::size_t>(it - devices_.begin())];
          // Two replicas sharing one GPU are two entries but one victim to pay for.
          if (!occupants.empty() && occupants.back().first == v) {
            ++occupants.back().second;
          } else {
            occupants.emplace_back(v, 1);
          }
        }
      }
      for (const auto& option : problem.victims[v].options) {
        std::size_t freed = total;
        if (!option.dropped.empty()) {
          freed = 0;
          for (std::int32_t r : option.dropped) freed += per_replica[static_cast<std::size_t>(r)];
        }
        if (freed > 0) price_[v] = std::min(price_[v], option.cost / static_cast<double>(freed));
      }
    }
  }

  [[nodiscard]] bool active() const noexcept { return !devices_.empty(); }

  /// The bound under `view` with only victims where `available(v)` may still be evicted.
  template <CapacityView View, class Available>
  [[nodiscard]] double bound(const View& view, Available&& available) {
    if (!active()) return 0.0;
    const ResolvedDemand& demand = problem_->tier->demand;
    const std::int64_t need = static_cast<std::int64_t>(demand.replicas) * demand.whole_devices -
                              view.idle_devices(problem_->target);
    if (need <= 0) return 0.0;
    costs_.clear();
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      const std::int64_t occupancy = view.device_occupancy(devices_[d]);
      if (occupancy == 0) continue;  // already idle: counted in `need`
      double cost = 0.0;
      std::int64_t removable = 0;
      for (const auto& [v, entries] : occupants_[d]) {
        if (!available(v)) continue;
        cost += price_[v];
        removable += entries;
      }
      // Entries that stay (ineligible, spared, or not in reach) pin the device.
      if (removable < occupancy) continue;
      costs_.push_back(cost);
    }
    if (static_cast<std::int64_t>(costs_.size()) < need) return std::numeric_limits<double>::infinity();
    std::nth_element(costs_.begin(), costs_.begin() + (need - 1), costs_.end());
    double total = 0.0;
    for (std::int64_t i = 0; i < need; ++i) total += costs_[static_cast<std::size_t>(i)];
    // Sums of prices: exact on a cost grid, else conservative by the additions' rounding.
    return conservative(total, static_cast<double>(price_.size() + static_cast<std::size_t>(need)));
  }

 private:
  const DomainProblem* problem_;
  std::vector<DomainId> devices_;                  // of the target, ascending
  std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> occupants_;  // per device: (victim, entries)
  std::vector<double> price_;                      // per victim: cheapest cost per device freed
  std::vector<double> costs_;
};

}  // namespace topopreempt::detail
