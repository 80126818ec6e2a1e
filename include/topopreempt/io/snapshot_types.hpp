// SPDX-License-Identifier: MIT
#pragma once
/// @file snapshot_types.hpp
/// What a snapshot holds, and its limits: the format names, `SnapshotError` (with the JSON path
/// of the offending value), the cost model and solver specs, `Snapshot`, and the size limits the
/// loader enforces. Part of the JSON I/O (`io/snapshot.hpp`); needs nlohmann_json.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt::io {

/// The format string every snapshot carries in `"format"`.
inline constexpr std::string_view snapshot_format = "topopreempt-snapshot/1";
/// The format string of plan documents written by `to_json(const PreemptionPlan&, ...)`.
inline constexpr std::string_view plan_format = "topopreempt-plan/1";

/// A snapshot that cannot be read: `path()` is the JSON path of the offending value ("$" for
/// the document itself), `message()` says what is wrong; `what()` is "path: message".
class SnapshotError : public std::runtime_error {
 public:
  /// An error at JSON path `path`.
  SnapshotError(std::string path, std::string message)
      : std::runtime_error(path + ": " + message),
        path_(std::move(path)),
        message_(std::move(message)) {}
  /// JSON path, e.g. "$.workloads[3].placement[0][1].domain".
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The problem without the path.
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  std::string path_;
  std::string message_;
};

/// Parameters of `cost::kubernetes_order`, whose priority ranks come from the loaded state.
struct KubernetesOrderSpec {
  /// The cost model's name in a snapshot.
  static constexpr std::string_view name = "kubernetes_order";
  /// 0 (the default, when absent): the exact mixed radix of the running workloads; else a
  /// whole number >= 2 for `base^rank`. See `cost::kubernetes_order`.
  double base = 0.0;
};

/// A cost model chosen by a snapshot (or a command line). Default: `victim_count`.
using CostModelSpec = std::variant<cost::victim_count, cost::priority_weighted, cost::lost_work,
                                   cost::reload_time, KubernetesOrderSpec>;

/// Names accepted for cost models, in documentation order.
inline constexpr std::array<std::string_view, 5> cost_model_names{
    "victim_count", "priority_weighted", "lost_work", "reload_time", "kubernetes_order"};

/// Names accepted for solvers ("all" runs every one of them).
inline constexpr std::array<std::string_view, 6> solver_names{
    "greedy", "knapsack", "branch_and_bound", "kube_default", "exhaustive_subsets", "all"};

/// The name of the model a spec selects, e.g. "lost_work".
[[nodiscard]] inline std::string_view cost_model_name(const CostModelSpec& spec) noexcept {
  return std::visit(
      [](const auto& model) -> std::string_view { return std::decay_t<decltype(model)>::name; },
      spec);
}

/// The spec of cost model `name` with default parameters; nullopt for an unknown name.
[[nodiscard]] inline std::optional<CostModelSpec> make_cost_model(std::string_view name) {
  if (name == "victim_count") return CostModelSpec{cost::victim_count{}};
  if (name == "priority_weighted") return CostModelSpec{cost::priority_weighted{}};
  if (name == "lost_work") return CostModelSpec{cost::lost_work{}};
  if (name == "reload_time") return CostModelSpec{cost::reload_time{}};
  if (name == "kubernetes_order") return CostModelSpec{KubernetesOrderSpec{}};
  return std::nullopt;
}

/// Calls `visitor(model)` with the concrete `CostModel` a spec selects and returns its result.
/// `kubernetes_order` is built from the priorities running in `state` (its victims' priorities).
template <class Visitor>
decltype(auto) visit_cost_model(const CostModelSpec& spec, const Allocation& state,
                                Visitor&& visitor) {
  return std::visit(
      [&](const auto& model) -> decltype(auto) {
        if constexpr (std::is_same_v<std::decay_t<decltype(model)>, KubernetesOrderSpec>) {
          return visitor(cost::kubernetes_order::of(state, model.base));
        } else {
          return visitor(model);
        }
      },
      spec);
}

/// A solver chosen by a snapshot; limits apply to solvers that support them.
struct SolverSpec {
  std::string name = "branch_and_bound";      ///< one of `solver_names`
  std::optional<std::int64_t> time_limit_ms;  ///< wall-clock limit in milliseconds
  std::optional<std::uint64_t> node_limit;    ///< search-node limit
  /// Member-wise equality.
  friend bool operator==(const SolverSpec&, const SolverSpec&) = default;
};

/// A loaded snapshot: the cluster, what runs on it, and the workload that wants in.
struct Snapshot {
  std::string description;                   ///< free text from the file (may be empty)
  std::shared_ptr<const Topology> topology;  ///< shared with `state`
  Allocation state;                          ///< the running workloads at their placements
  Workload preemptor;                        ///< not running; its id is unused in `state`
  std::optional<CostModelSpec> cost_model;   ///< the file's choice, if any
  std::optional<SolverSpec> solver;          ///< the file's choice, if any
};

// Loader limits (docs/snapshot-format.md, "Limits"). Each holds by construction: it is checked
// from sizes known before the memory it bounds is allocated.

/// Upper bound on the size of snapshot text (`load_snapshot_text`, `load_snapshot_file`).
inline constexpr std::size_t max_snapshot_bytes = std::size_t{64} << 20;
/// Upper bound on nested arrays and objects in snapshot text.
inline constexpr std::size_t max_snapshot_depth = 256;
/// Upper bound on domains a snapshot may create (exact in every topology form, checked before
/// anything is built), so a typo in a count cannot exhaust memory.
inline constexpr std::size_t max_snapshot_domains = 10'000'000;
/// Upper bound on `count` in a domain and on replicas of a workload.
inline constexpr std::int64_t max_repeat = 1'000'000;
/// Upper bound on the devices of a host that carries an affinity matrix (4096 x 4096 doubles
/// are 128 MiB).
inline constexpr std::uint64_t max_affinity_devices = 4096;
/// Upper bound on topology levels (the builder's own limit).
inline constexpr std::size_t max_levels = 64;
/// Upper bound on a solver time limit in milliseconds (2^40 ms, about 34.8 years): larger
/// values are errors, never clamped, and stay far from overflowing `std::chrono::nanoseconds`.
inline constexpr std::int64_t max_time_limit_ms = std::int64_t{1} << 40;

}  // namespace topopreempt::io
