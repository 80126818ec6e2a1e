// SPDX-License-Identifier: MIT
#pragma once
/// @file snapshot_writer.hpp
/// Writing snapshots and plans as JSON: `to_json` of resources, placements, topologies,
/// workloads, cost models and plans; `save_snapshot` / `save_snapshot_file` for round trips.
/// Part of the JSON I/O (`io/snapshot.hpp`); needs nlohmann_json.

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

#include "topopreempt/io/snapshot_types.hpp"
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

/// `{"gpu_milli": 1000, ...}` with the non-zero amounts only, by dimension name.
[[nodiscard]] inline nlohmann::json to_json(const ResourceVector& amounts,
                                            const ResourceSchema& schema) {
  nlohmann::json result = nlohmann::json::object();
  for (std::size_t i = 0; i < schema.size() && i < static_cast<std::size_t>(amounts.size()); ++i) {
    const Amount value = amounts(static_cast<Eigen::Index>(i));
    if (value != 0) result[schema[i].name] = value;
  }
  return result;
}

/// Whether `to_json(const Placement&, ...)` writes the amount of whole-device entries.
enum class DeviceAmounts : std::uint8_t {
  write,       ///< every entry carries its amount (plans: self-explanatory)
  omit_whole,  ///< whole devices are bare paths (snapshots: the reader fills them in)
};

/// A placement as replicas of `{"domain": path, "amount": {...}}`.
[[nodiscard]] inline nlohmann::json to_json(const Placement& placement, const Topology& topology,
                                            DeviceAmounts amounts = DeviceAmounts::write) {
  const bool omit_whole_devices = amounts == DeviceAmounts::omit_whole;
  nlohmann::json replicas = nlohmann::json::array();
  for (const auto& replica : placement.replicas) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& entry : replica.entries) {
      nlohmann::json item{{"domain", topology.path(entry.domain)}};
      const bool whole =
          topology.is_device(entry.domain) && entry.amount == topology.local_capacity(entry.domain);
      if (!(omit_whole_devices && whole)) item["amount"] = to_json(entry.amount, topology.schema());
      entries.push_back(std::move(item));
    }
    replicas.push_back(std::move(entries));
  }
  return replicas;
}

/// The nested form of a topology (schema, levels, device/host level, root with capacities,
/// children and affinity matrices); `load_snapshot` reads it back to an identical topology.
[[nodiscard]] inline nlohmann::json to_json(const Topology& topology) {
  nlohmann::json schema = nlohmann::json::array();
  for (const auto& dimension : topology.schema().dimensions()) {
    schema.push_back({{"name", dimension.name},
                      {"kind", dimension.kind == ResourceKind::device ? "device" : "pooled"}});
  }
  const auto domain_json = [&](const auto& self, DomainId domain) -> nlohmann::json {
    nlohmann::json result{{"level", topology.levels()[topology.level(domain)]},
                          {"name", std::string(topology.local_name(domain))}};
    if (topology.local_capacity(domain).any()) {
      result["capacity"] =
          to_json(ResourceVector(topology.local_capacity(domain)), topology.schema());
    }
    const auto children = topology.children(domain);
    if (!children.empty()) {
      nlohmann::json list = nlohmann::json::array();
      for (DomainId child : children) list.push_back(self(self, child));
      result["children"] = std::move(list);
    }
    if (topology.level(domain) == topology.host_level() && topology.has_affinity(domain)) {
      const auto devices = topology.domains_at(topology.device_level(), domain);
      nlohmann::json matrix = nlohmann::json::array();
      for (DomainId a : devices) {
        nlohmann::json row = nlohmann::json::array();
        for (DomainId b : devices) row.push_back(*topology.device_affinity(a, b));
        matrix.push_back(std::move(row));
      }
      result["affinity"] = std::move(matrix);
    }
    return result;
  };
  return {{"schema", std::move(schema)},
          {"levels", topology.levels()},
          {"device_level", topology.levels()[topology.device_level()]},
          {"host_level", topology.levels()[topology.host_level()]},
          {"root", domain_json(domain_json, Topology::root())}};
}

/// A workload's fields (no placement); defaults (no scope, no cost inputs) are left out.
[[nodiscard]] inline nlohmann::json to_json(const Workload& workload, const Topology& topology) {
  nlohmann::json result{{"id", workload.id.value},
                        {"priority", workload.priority},
                        {"preemptible", workload.preemptible},
                        {"replicas", workload.replicas}};
  if (!workload.name.empty()) result["name"] = workload.name;
  if (workload.min_replicas) result["min_replicas"] = *workload.min_replicas;
  nlohmann::json demand{{"whole_devices", workload.demand.whole_devices}};
  if (workload.demand.resources.size() != 0 && workload.demand.resources.any()) {
    demand["resources"] = to_json(workload.demand.resources, topology.schema());
  }
  result["demand"] = std::move(demand);
  const auto scope = [](const TopologyRequirement& requirement) -> nlohmann::json {
    return {
        {"mode", requirement.mode == RequirementMode::guaranteed ? "guaranteed" : "best_effort"},
        {"level", requirement.level}};
  };
  if (workload.replica_scope.mode != RequirementMode::none)
    result["replica_scope"] = scope(workload.replica_scope);
  if (workload.gang_scope.mode != RequirementMode::none)
    result["gang_scope"] = scope(workload.gang_scope);
  if (workload.distinct_hosts) result["distinct_hosts"] = true;
  const CostInputs& cost = workload.cost;
  nlohmann::json inputs = nlohmann::json::object();
  if (cost.start_time_s != 0.0) inputs["start_time_s"] = cost.start_time_s;
  if (cost.seconds_since_checkpoint != 0.0)
    inputs["seconds_since_checkpoint"] = cost.seconds_since_checkpoint;
  if (!cost.model_id.empty()) inputs["model_id"] = cost.model_id;
  if (cost.model_size_gib != 0.0) inputs["model_size_gib"] = cost.model_size_gib;
  if (cost.extra_cost != 0.0) inputs["extra_cost"] = cost.extra_cost;
  if (!inputs.empty()) result["cost"] = std::move(inputs);
  return result;
}

/// A cost model spec: its name alone when its parameters are the defaults, else an object.
[[nodiscard]] inline nlohmann::json to_json(const CostModelSpec& spec) {
  nlohmann::json result{{"name", std::string(cost_model_name(spec))}};
  std::visit(
      [&](const auto& model) {
        using Model = std::decay_t<decltype(model)>;
        const Model defaults{};
        if constexpr (std::is_same_v<Model, cost::priority_weighted>) {
          if (model.offset != defaults.offset) result["offset"] = model.offset;
        } else if constexpr (std::is_same_v<Model, cost::lost_work>) {
          if (model.floor != defaults.floor) result["floor"] = model.floor;
        } else if constexpr (std::is_same_v<Model, cost::reload_time>) {
          if (model.bandwidth_gib_per_s != defaults.bandwidth_gib_per_s) {
            result["bandwidth_gib_per_s"] = model.bandwidth_gib_per_s;
          }
          if (model.floor != defaults.floor) result["floor"] = model.floor;
        } else if constexpr (std::is_same_v<Model, KubernetesOrderSpec>) {
          if (model.base != defaults.base) result["base"] = model.base;
        }
      },
      spec);
  return result.size() == 1 ? result["name"] : result;
}

/// A snapshot document (format "topopreempt-snapshot/1") that `load_snapshot` reads back to the
/// same topology, state (workloads in ascending id order, explicit placements) and preemptor.
/// The topology is always written in the nested form.
[[nodiscard]] inline nlohmann::json save_snapshot(const Snapshot& snapshot) {
  const Topology& topology = snapshot.state.topology();
  nlohmann::json workloads = nlohmann::json::array();
  for (WorkloadId id : snapshot.state.workload_ids()) {
    const Workload& workload = snapshot.state.workload(id);
    nlohmann::json item = to_json(workload, topology);
    item["placement"] = to_json(
        snapshot.state.placement(id), topology,
        workload.demand.whole_devices > 0 ? DeviceAmounts::omit_whole : DeviceAmounts::write);
    workloads.push_back(std::move(item));
  }
  nlohmann::json document{{"format", std::string(snapshot_format)},
                          {"topology", to_json(topology)},
                          {"workloads", std::move(workloads)},
                          {"preemptor", to_json(snapshot.preemptor, topology)}};
  if (!snapshot.description.empty()) document["description"] = snapshot.description;
  if (snapshot.cost_model) document["cost_model"] = to_json(*snapshot.cost_model);
  if (snapshot.solver) {
    nlohmann::json solver{{"name", snapshot.solver->name}};
    if (snapshot.solver->time_limit_ms) solver["time_limit_ms"] = *snapshot.solver->time_limit_ms;
    if (snapshot.solver->node_limit) solver["node_limit"] = *snapshot.solver->node_limit;
    document["solver"] = solver.size() == 1 ? solver["name"] : solver;
  }
  return document;
}

/// Writes `save_snapshot(snapshot)` to `path` (indented by `indent` spaces, trailing newline).
/// Throws `std::runtime_error` naming the file when it cannot be written.
inline void save_snapshot_file(const Snapshot& snapshot, const std::string& path, int indent = 2) {
  const std::string text = save_snapshot(snapshot).dump(indent) + "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for writing");
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

namespace detail {

/// A finite number, or null (JSON has no infinities).
[[nodiscard]] inline nlohmann::json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

[[nodiscard]] inline nlohmann::json plan_json(const PreemptionPlan& plan, const Topology& topology,
                                              const Allocation* state) {
  const auto level_name = [&](LevelIndex level) -> nlohmann::json {
    return level < topology.levels().size() ? nlohmann::json(topology.levels()[level])
                                            : nlohmann::json(nullptr);
  };
  const bool placed = plan.has_victims_plan() || plan.status == PlanStatus::no_preemption_needed;
  nlohmann::json victims = nlohmann::json::array();
  for (const Victim& victim : plan.victims) {
    nlohmann::json item{{"id", victim.id.value},
                        {"action", victim.action == VictimAction::evict ? "evict" : "shrink"},
                        {"cost", finite_or_null(victim.cost)},
                        {"reason", victim.reason}};
    if (victim.action == VictimAction::shrink) item["dropped_replicas"] = victim.dropped_replicas;
    if (state != nullptr && state->contains(victim.id)) {
      const Workload& workload = state->workload(victim.id);
      item["name"] = workload.name;
      item["priority"] = workload.priority;
      item["replicas"] = workload.replicas;
    }
    victims.push_back(std::move(item));
  }
  nlohmann::json rejected = nlohmann::json::array();
  for (const DomainVerdict& verdict : plan.rejected) {
    rejected.push_back({{"domain", verdict.domain.valid() && verdict.domain.value < topology.size()
                                       ? nlohmann::json(topology.path(verdict.domain))
                                       : nlohmann::json(nullptr)},
                        {"reason", verdict.reason}});
  }
  nlohmann::json downgrades = nlohmann::json::array();
  for (const Downgrade& downgrade : plan.downgrades) {
    downgrades.push_back(
        {{"domain", downgrade.domain.valid() && downgrade.domain.value < topology.size()
                        ? nlohmann::json(topology.path(downgrade.domain))
                        : nlohmann::json(nullptr)},
         {"reason", std::string(to_string(downgrade.reason))},
         {"detail", downgrade.detail}});
  }
  nlohmann::json dependencies = nlohmann::json::array();
  for (const DomainVersion& dependency : plan.dependencies) {
    // Hex text: a 64-bit digest does not survive readers that parse numbers as doubles.
    char version[17];
    std::snprintf(version, sizeof version, "%016llx",
                  static_cast<unsigned long long>(dependency.version));
    dependencies.push_back(
        {{"domain", dependency.domain.valid() && dependency.domain.value < topology.size()
                        ? nlohmann::json(topology.path(dependency.domain))
                        : nlohmann::json(nullptr)},
         {"version", std::string(version)}});
  }
  const SolverStatistics& s = plan.statistics;
  const bool target = plan.target_domain.valid() && plan.target_domain.value < topology.size();
  return {{"format", std::string(plan_format)},
          {"solver", plan.solver},
          {"status", std::string(to_string(plan.status))},
          {"victims", std::move(victims)},
          {"target_domain",
           target ? nlohmann::json(topology.path(plan.target_domain)) : nlohmann::json(nullptr)},
          {"target_level",
           target ? level_name(topology.level(plan.target_domain)) : nlohmann::json(nullptr)},
          {"placement", to_json(plan.placement, topology)},
          {"gang_level", placed ? level_name(plan.gang_level) : nlohmann::json(nullptr)},
          {"replica_level", placed ? level_name(plan.replica_level) : nlohmann::json(nullptr)},
          {"topology_satisfied", plan.topology_satisfied},
          {"cost", finite_or_null(plan.cost)},
          {"lower_bound", finite_or_null(plan.lower_bound)},
          {"gap", finite_or_null(plan.gap())},
          {"rejected", std::move(rejected)},
          {"rejected_total", plan.rejected_total},
          {"downgrades", std::move(downgrades)},
          {"explanation", plan.explanation},
          {"preemptor", plan.preemptor.value},
          {"dependencies", std::move(dependencies)},
          {"statistics",
           {{"domains_considered", s.domains_considered},
            {"domains_pruned", s.domains_pruned},
            {"domains_solved", s.domains_solved},
            {"nodes_explored", s.nodes_explored},
            {"dp_cells", s.dp_cells},
            {"victims_considered", s.victims_considered},
            {"seconds", finite_or_null(s.seconds)},
            {"limit_reached", s.limit_reached}}}};
}

}  // namespace detail

/// A plan as JSON (format "topopreempt-plan/1"): status, victims (id, action, dropped
/// replicas, cost, reason), target domain and placement by path, cost, lower bound, gap,
/// rejected domains, statistics and explanation. Domain paths come from `topology`.
[[nodiscard]] inline nlohmann::json to_json(const PreemptionPlan& plan, const Topology& topology) {
  return detail::plan_json(plan, topology, nullptr);
}

/// As above, and each victim also carries its name, priority and replica count from `state`
/// (the state the plan was computed on, before any victim was removed).
[[nodiscard]] inline nlohmann::json to_json(const PreemptionPlan& plan, const Allocation& state) {
  return detail::plan_json(plan, state.topology(), &state);
}

}  // namespace topopreempt::io
