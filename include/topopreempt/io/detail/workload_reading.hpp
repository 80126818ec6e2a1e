// SPDX-License-Identifier: MIT
#pragma once
/// @file workload_reading.hpp
/// The workload part of a snapshot: topology requirements, cost inputs, workloads and preemptors,
/// explicit placements (with the holders of an over-full domain named), the cost model and the
/// solver settings.

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
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "topopreempt/io/detail/json_reading.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt::io::detail {

using nlohmann::json;

[[nodiscard]] inline TopologyRequirement read_scope(const json& value, const std::string& path,
                                                    const Topology& topology) {
  const ObjectReader object(value, path, {"mode", "level"});
  const std::string mode = read_string(object.required("mode"), object.at("mode"));
  TopologyRequirement requirement;
  if (mode == "none") {
    if (object.has("level")) fail(object.at("level"), "a scope of mode 'none' takes no level");
    return requirement;
  }
  if (mode == "guaranteed") {
    requirement.mode = RequirementMode::guaranteed;
  } else if (mode == "best_effort") {
    requirement.mode = RequirementMode::best_effort;
  } else {
    fail(object.at("mode"),
         "must be \"guaranteed\", \"best_effort\" or \"none\", got '" + mode + "'");
  }
  requirement.level = read_string(object.required("level"), object.at("level"));
  if (!topology.find_level(requirement.level)) {
    fail(object.at("level"), "unknown level '" + requirement.level +
                                 "' (levels: " + join(topology.levels()) + ")" +
                                 suggestion(requirement.level, topology.levels()));
  }
  return requirement;
}

[[nodiscard]] inline CostInputs read_cost_inputs(const json& value, const std::string& path) {
  const ObjectReader object(
      value, path,
      {"start_time_s", "seconds_since_checkpoint", "model_id", "model_size_gib", "extra_cost"});
  CostInputs inputs;
  if (const json* v = object.optional("start_time_s"))
    inputs.start_time_s = read_number(*v, object.at("start_time_s"));
  if (const json* v = object.optional("seconds_since_checkpoint")) {
    inputs.seconds_since_checkpoint = read_number(*v, object.at("seconds_since_checkpoint"), 0.0);
  }
  if (const json* v = object.optional("model_id"))
    inputs.model_id = read_string(*v, object.at("model_id"));
  if (const json* v = object.optional("model_size_gib"))
    inputs.model_size_gib = read_number(*v, object.at("model_size_gib"), 0.0);
  if (const json* v = object.optional("extra_cost"))
    inputs.extra_cost = read_number(*v, object.at("extra_cost"), 0.0);
  return inputs;
}

/// A workload without its placement; `running` allows (and requires) the "placement" key.
[[nodiscard]] inline Workload read_workload(const ObjectReader& object, const Topology& topology) {
  const ResourceSchema& schema = topology.schema();
  Workload workload;
  workload.id = WorkloadId{read_unsigned(object.required("id"), object.at("id"))};
  if (const json* name = object.optional("name"))
    workload.name = read_string(*name, object.at("name"));
  workload.priority = static_cast<std::int32_t>(read_integer(
      object.required("priority"), object.at("priority"), std::numeric_limits<std::int32_t>::min(),
      std::numeric_limits<std::int32_t>::max()));
  if (const json* v = object.optional("preemptible"))
    workload.preemptible = read_bool(*v, object.at("preemptible"));
  if (const json* v = object.optional("replicas")) {
    workload.replicas =
        static_cast<std::int32_t>(read_integer(*v, object.at("replicas"), 1, max_repeat));
  }
  if (const json* v = object.optional("min_replicas")) {
    workload.min_replicas = static_cast<std::int32_t>(
        read_integer(*v, object.at("min_replicas"), 1, workload.replicas));
  }
  const ObjectReader demand(object.required("demand"), object.at("demand"),
                            {"whole_devices", "resources"});
  if (const json* v = demand.optional("whole_devices")) {
    workload.demand.whole_devices =
        static_cast<std::int32_t>(read_integer(*v, demand.at("whole_devices"), 0, max_repeat));
  }
  workload.demand.resources = schema.zeros();
  if (const json* v = demand.optional("resources")) {
    workload.demand.resources = read_resources(*v, demand.at("resources"), schema);
    for (std::size_t i = 0; i < schema.size(); ++i) {
      if (workload.demand.whole_devices > 0 && schema.is_device(i) &&
          workload.demand.resources(static_cast<Eigen::Index>(i)) > 0) {
        fail(key_path(demand.at("resources"), schema[i].name),
             "a workload asking for whole devices already gets every device dimension; give '" +
                 schema[i].name + "' only for a device share (whole_devices 0)");
      }
    }
  }
  if (const json* v = object.optional("replica_scope")) {
    workload.replica_scope = read_scope(*v, object.at("replica_scope"), topology);
    if (workload.replica_scope.mode != RequirementMode::none &&
        topology.level_index(workload.replica_scope.level) < topology.host_level()) {
      fail(key_path(object.at("replica_scope"), "level"),
           "a replica never spans hosts: the level must be '" +
               topology.levels()[topology.host_level()] + "' or deeper");
    }
  }
  if (const json* v = object.optional("gang_scope")) {
    workload.gang_scope = read_scope(*v, object.at("gang_scope"), topology);
    if (workload.gang_scope.mode != RequirementMode::none &&
        workload.replica_scope.mode != RequirementMode::none &&
        topology.level_index(workload.gang_scope.level) >
            topology.level_index(workload.replica_scope.level)) {
      fail(key_path(object.at("gang_scope"), "level"),
           "the gang scope cannot be tighter than the replica scope '" +
               workload.replica_scope.level + "'");
    }
  }
  if (const json* v = object.optional("distinct_hosts")) {
    workload.distinct_hosts = read_bool(*v, object.at("distinct_hosts"));
    if (workload.distinct_hosts && workload.replicas > 1 &&
        workload.gang_scope.mode == RequirementMode::guaranteed &&
        topology.level_index(workload.gang_scope.level) >= topology.host_level()) {
      fail(object.at("distinct_hosts"),
           std::to_string(workload.replicas) + " replicas on distinct hosts cannot share one '" +
               workload.gang_scope.level + "' (the guaranteed gang scope)");
    }
  }
  if (const json* v = object.optional("cost"))
    workload.cost = read_cost_inputs(*v, object.at("cost"));
  try {
    validate(workload, topology);  // backstop: every rule above has its own path already
  } catch (const std::invalid_argument& error) {
    fail(object.path(), error.what());
  }
  return workload;
}

/// Free amount held by `domain` itself (not its children) as `state` stands.
[[nodiscard]] inline ResourceVector local_free(const Allocation& state, DomainId domain) {
  ResourceVector free = state.free(domain);
  for (DomainId child : state.topology().children(domain)) free -= state.free(child);
  return free;
}

/// " (held by workload 3 'x', workload 5)" for messages about a full domain.
[[nodiscard]] inline std::string holders(const Allocation& state, DomainId domain) {
  const Topology& topology = state.topology();
  const DomainId host = topology.ancestor_at(domain, topology.host_level());
  if (!host.valid()) return "";
  std::vector<WorkloadId> ids(state.occupants(host).begin(), state.occupants(host).end());
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> labels;
  for (WorkloadId id : ids) {
    for (const auto& replica : state.placement(id).replicas) {
      const bool here =
          std::any_of(replica.entries.begin(), replica.entries.end(),
                      [&](const PlacementEntry& entry) { return entry.domain == domain; });
      if (here) {
        labels.push_back(state.workload(id).label());
        break;
      }
    }
  }
  return labels.empty() ? std::string() : " (held by " + join(labels, 6) + ")";
}

/// An error message for a path that names no domain, pointing at the first missing part.
[[nodiscard]] inline std::string unknown_domain(const Topology& topology, const std::string& text) {
  if (!text.empty() && (text.back() == '/' || text.front() == '/')) {
    return "unknown domain '" + text + "': a domain path has no leading or trailing '/'";
  }
  DomainId at = Topology::root();
  std::string_view rest = text;
  std::string walked;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    const auto children = topology.children(at);
    const auto it = std::find_if(children.begin(), children.end(), [&](DomainId child) {
      return topology.local_name(child) == part;
    });
    if (it == children.end()) {
      std::vector<std::string> names;
      for (DomainId child : children) names.emplace_back(topology.local_name(child));
      return "unknown domain '" + text +
             "': " + (walked.empty() ? std::string("the root") : "'" + walked + "'") +
             " has no child '" + std::string(part) +
             "' (children: " + (names.empty() ? "none" : join(names, 8)) + ")" +
             suggestion(part, names);
    }
    walked += (walked.empty() ? "" : "/") + std::string(part);
    at = *it;
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  return "unknown domain '" + text + "'";
}

/// Finds domains by path as `Topology::find` does, in O(path length) per lookup: the children
/// of a wide parent (a rack of 588,235 machines) are hashed by name the first time a path goes
/// through it, instead of being scanned for every entry that names one of them.
class DomainPaths {
 public:
  /// Lookups in `topology`, which must outlive this object.
  explicit DomainPaths(const Topology& topology) : topology_(&topology) {}

  /// The domain at `text` (e.g. "rack0/node3/gpu1"; "" is the root), or nullopt.
  [[nodiscard]] std::optional<DomainId> find(std::string_view text) {
    if (!text.empty() && (text.front() == '/' || text.back() == '/')) return std::nullopt;
    DomainId at = Topology::root();
    while (!text.empty()) {
      const std::size_t slash = text.find('/');
      const std::optional<DomainId> next = child(at, text.substr(0, slash));
      if (!next) return std::nullopt;
      at = *next;
      text = slash == std::string_view::npos ? std::string_view() : text.substr(slash + 1);
    }
    return at;
  }

 private:
  /// Parents with at least this many children get a hash index.
  static constexpr std::size_t wide = 16;

  [[nodiscard]] std::optional<DomainId> child(DomainId parent, std::string_view name) {
    const Topology& topology = *topology_;
    const std::uint32_t end = topology.subtree_end(parent).value;
    if (const auto indexed = index_.find(parent.value); indexed != index_.end()) {
      const auto it = indexed->second.find(name);
      return it == indexed->second.end() ? std::nullopt : std::optional<DomainId>(it->second);
    }
    std::size_t count = 0;
    std::optional<DomainId> found;
    for (std::uint32_t c = parent.value + 1; c < end; c = topology.subtree_end(DomainId{c}).value) {
      ++count;
      if (!found && topology.local_name(DomainId{c}) == name) found = DomainId{c};
      if (found && count >= wide) break;
    }
    if (count < wide) return found;
    // Names live in the immutable topology: the views stay valid as long as it does.
    auto& names = index_[parent.value];
    for (std::uint32_t c = parent.value + 1; c < end; c = topology.subtree_end(DomainId{c}).value) {
      names.emplace(topology.local_name(DomainId{c}), DomainId{c});
    }
    const auto it = names.find(name);
    return it == names.end() ? std::nullopt : std::optional<DomainId>(it->second);
  }

  const Topology* topology_;
  std::unordered_map<std::uint32_t, std::unordered_map<std::string_view, DomainId>> index_;
};

/// A placement `[[{"domain": path, "amount": {...}}, ...], ...]` checked entry by entry against
/// `state` (which must not yet hold the workload), so every error has its entry's path.
[[nodiscard]] inline Placement read_placement(const json& value, const std::string& path,
                                              const Workload& workload, const Allocation& state,
                                              DomainPaths& paths) {
  const Topology& topology = state.topology();
  const ResourceSchema& schema = topology.schema();
  if (!value.is_array())
    fail(path, "must be an array of replicas (each an array of entries) or \"auto\"");
  if (value.size() != static_cast<std::size_t>(workload.replicas)) {
    fail(path, "has " + std::to_string(value.size()) + " replicas, the workload has " +
                   std::to_string(workload.replicas));
  }
  Placement placement;
  // Claimed by earlier entries of this workload, by domain id: one hash lookup per entry, so a
  // workload of 400,000 replicas is read in linear time, not by scanning every earlier claim.
  std::unordered_map<std::uint32_t, ResourceVector> claimed;
  for (std::size_t r = 0; r < value.size(); ++r) {
    const std::string replica_path = index_path(path, r);
    if (!value[r].is_array()) fail(replica_path, "must be an array of placement entries");
    ReplicaPlacement replica;
    for (std::size_t e = 0; e < value[r].size(); ++e) {
      const ObjectReader entry(value[r][e], index_path(replica_path, e), {"domain", "amount"});
      const std::string text = read_string(entry.required("domain"), entry.at("domain"));
      const std::optional<DomainId> domain = paths.find(text);
      if (!domain) fail(entry.at("domain"), unknown_domain(topology, text));
      const bool device = topology.is_device(*domain);
      ResourceVector amount;
      if (const json* given = entry.optional("amount")) {
        amount = read_resources(*given, entry.at("amount"), schema);
      } else if (device) {
        amount = topology.local_capacity(*domain);  // the whole device
      } else {
        fail(entry.path(), "an entry on " + topology.describe(*domain) + " needs an 'amount'");
      }
      if (!amount.any()) fail(entry.at("amount"), "an entry must take something");
      for (std::size_t i = 0; i < schema.size(); ++i) {
        if (amount(static_cast<Eigen::Index>(i)) > 0 && schema.is_device(i) != device) {
          fail(key_path(entry.at("amount"), schema[i].name),
               "'" + schema[i].name + "' cannot be taken from " + topology.describe(*domain) +
                   " (a " +
                   (schema.is_device(i) ? "device dimension comes from a device"
                                        : "pooled dimension comes from a non-device domain") +
                   ")");
        }
      }
      auto it = claimed.find(domain->value);
      if (it == claimed.end()) it = claimed.emplace(domain->value, schema.zeros()).first;
      const ResourceVector room = local_free(state, *domain) - it->second;
      if (!all_less_equal(amount, room)) {
        fail(entry.has("amount") ? entry.at("amount") : entry.at("domain"),
             "over capacity on " + topology.describe(*domain) + ": asks " + schema.format(amount) +
                 ", free " + schema.format(room.cwiseMax(0)) + holders(state, *domain));
      }
      it->second += amount;
      replica.entries.push_back({*domain, std::move(amount)});
    }
    placement.replicas.push_back(std::move(replica));
  }
  return placement;
}

/// `"cost_model"`: a name or `{"name": ..., parameters}`.
[[nodiscard]] inline CostModelSpec read_cost_model(const json& value, const std::string& path) {
  const bool is_name = value.is_string();
  const std::string name_path = is_name ? path : key_path(path, "name");
  std::string name;
  if (is_name) {
    name = value.get<std::string>();
  } else {
    if (!value.is_object()) fail(path, "must be a cost model name or an object with a 'name'");
    if (!value.contains("name")) fail(path, "missing required key 'name'");
    name = read_string(value["name"], name_path);
  }
  std::optional<CostModelSpec> spec = make_cost_model(name);
  if (!spec) {
    fail(name_path, "unknown cost model '" + name + "' (models: " + join(cost_model_names) + ")" +
                        suggestion(name, cost_model_names));
  }
  if (is_name) return *spec;
  if (auto* model = std::get_if<cost::priority_weighted>(&*spec)) {
    const ObjectReader object(value, path, {"name", "offset"});
    if (const json* v = object.optional("offset"))
      model->offset = read_number(*v, object.at("offset"));
  } else if (auto* model = std::get_if<cost::lost_work>(&*spec)) {
    const ObjectReader object(value, path, {"name", "floor"});
    if (const json* v = object.optional("floor"))
      model->floor = read_number(*v, object.at("floor"), 0.0);
  } else if (auto* model = std::get_if<cost::reload_time>(&*spec)) {
    const ObjectReader object(value, path, {"name", "bandwidth_gib_per_s", "floor"});
    if (const json* v = object.optional("bandwidth_gib_per_s")) {
      model->bandwidth_gib_per_s = read_number(*v, object.at("bandwidth_gib_per_s"), 0.0);
      if (model->bandwidth_gib_per_s == 0.0) fail(object.at("bandwidth_gib_per_s"), "must be > 0");
    }
    if (const json* v = object.optional("floor"))
      model->floor = read_number(*v, object.at("floor"), 0.0);
  } else if (auto* model = std::get_if<KubernetesOrderSpec>(&*spec)) {
    const ObjectReader object(value, path, {"name", "base"});
    if (const json* v = object.optional("base"))
      model->base = read_number(*v, object.at("base"), 2.0);
  } else {
    const ObjectReader object(value, path, {"name"});
  }
  return *spec;
}

/// `"solver"`: a name or `{"name": ..., "time_limit_ms": N, "node_limit": N}`.
[[nodiscard]] inline SolverSpec read_solver(const json& value, const std::string& path) {
  SolverSpec spec;
  std::string name_path = path;
  if (value.is_string()) {
    spec.name = value.get<std::string>();
  } else {
    const ObjectReader object(value, path, {"name", "time_limit_ms", "node_limit"});
    name_path = object.at("name");
    spec.name = read_string(object.required("name"), name_path);
    if (const json* v = object.optional("time_limit_ms")) {
      spec.time_limit_ms = read_integer(*v, object.at("time_limit_ms"), 0, max_time_limit_ms);
    }
    if (const json* v = object.optional("node_limit")) {
      spec.node_limit = read_unsigned(*v, object.at("node_limit"));
      if (*spec.node_limit == 0) fail(object.at("node_limit"), "must be >= 1");
    }
  }
  if (std::find(solver_names.begin(), solver_names.end(), spec.name) == solver_names.end()) {
    fail(name_path, "unknown solver '" + spec.name + "' (solvers: " + join(solver_names) + ")" +
                        suggestion(spec.name, solver_names));
  }
  return spec;
}

inline constexpr std::array<std::string_view, 12> workload_keys{
    "id",     "name",          "priority",   "preemptible",    "replicas", "min_replicas",
    "demand", "replica_scope", "gang_scope", "distinct_hosts", "cost",     "placement"};
inline constexpr std::array<std::string_view, 11> preemptor_keys{
    "id",     "name",          "priority",   "preemptible",    "replicas", "min_replicas",
    "demand", "replica_scope", "gang_scope", "distinct_hosts", "cost"};

}  // namespace topopreempt::io::detail
