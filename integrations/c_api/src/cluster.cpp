// SPDX-License-Identifier: MIT
// The C entry points of the cluster: lifetime, errors, topology edits, seal, workload events.
// Every entry point runs its body through `guarded`, which turns every exception into a status
// and a message: nothing unwinds into the C caller.
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "c_api_internal.hpp"
#include "guarded.hpp"

namespace topopreempt_c {

void fail(tp_status status, std::string message) { throw Failure{status, std::move(message)}; }

void check_struct_size(std::size_t given, std::size_t expected, const char* type) {
  if (given != expected) {
    fail(TP_E_ABI, std::string(type) + ".struct_size is " + std::to_string(given) +
                       ", this library's " + type + " has " + std::to_string(expected) +
                       " bytes; initialise it with " + type + "_init");
  }
}

tp::ResourceVector to_vector(const tp::ResourceSchema& schema, const tp_amount* amounts,
                             std::size_t count, const std::string& context) {
  if (amounts == nullptr && count > 0)
    fail(TP_E_NULL, context + ": amounts is NULL with a count of " + std::to_string(count));
  tp::ResourceVector vector = schema.zeros();
  std::vector<bool> seen(schema.size(), false);
  for (std::size_t i = 0; i < count; ++i) {
    const tp_amount& amount = amounts[i];
    if (amount.resource == nullptr)
      fail(TP_E_NULL, context + ": amount " + std::to_string(i) + " has no resource name");
    const auto dim = schema.find(amount.resource);
    if (!dim) {
      std::string known;
      for (const auto& dimension : schema.dimensions())
        known += (known.empty() ? "" : ", ") + dimension.name;
      fail(TP_E_INVALID, context + ": unknown resource '" + std::string(amount.resource) +
                             "' (resources: " + known + ")");
    }
    if (seen[*dim])
      fail(TP_E_INVALID,
           context + ": resource '" + std::string(amount.resource) + "' is given twice");
    if (amount.amount < 0) {
      fail(TP_E_INVALID, context + ": resource '" + std::string(amount.resource) +
                             "' has a negative amount " + std::to_string(amount.amount));
    }
    seen[*dim] = true;
    vector(static_cast<Eigen::Index>(*dim)) = amount.amount;
  }
  return vector;
}

namespace {

std::atomic<std::uint64_t> next_serial{1};

void require_text(const char* text, const std::string& what) {
  if (text == nullptr) fail(TP_E_NULL, what + " is NULL");
}

TopologySpec& defined_spec(tp_cluster& cluster) {
  if (!cluster.spec)
    fail(TP_E_STATE, "no topology yet: call tp_cluster_define or tp_cluster_define_shape");
  return *cluster.spec;
}

const tp::Allocation& sealed_state(const tp_cluster& cluster) {
  if (!cluster.state) fail(TP_E_STATE, "no sealed topology yet: call tp_cluster_seal");
  return *cluster.state;
}
tp::Allocation& sealed_state(tp_cluster& cluster) {
  if (!cluster.state) fail(TP_E_STATE, "no sealed topology yet: call tp_cluster_seal");
  return *cluster.state;
}

void require_no_workloads(const tp_cluster& cluster, const char* what) {
  if (cluster.state && cluster.state->size() > 0) {
    fail(TP_E_STATE, std::string(what) + " starts the topology over, but " +
                         std::to_string(cluster.state->size()) +
                         " workloads are running; add or remove domains instead");
  }
}

/// A built-in machine shape by name.
tp::shapes::MachineShape machine_shape(const char* name) {
  require_text(name, "shape");
  const std::string_view shape = name;
  if (shape == "rtx4090_server") return tp::shapes::rtx4090_server();
  if (shape == "hgx_h100") return tp::shapes::hgx_h100();
  if (shape == "dense_8gpu_server") return tp::shapes::dense_8gpu_server();
  if (shape == "gb200_nvl72_rack") return tp::shapes::gb200_nvl72_rack();
  fail(TP_E_INVALID,
       "unknown machine shape '" + std::string(shape) +
           "' (shapes: rtx4090_server, hgx_h100, dense_8gpu_server, gb200_nvl72_rack)");
}

void add_shape_subtree(TopologySpec& spec, const std::string& path,
                       const tp::shapes::ShapeDomain& domain) {
  spec.add(path, domain.level,
           domain.local_capacity.size() == 0 ? spec.schema.zeros() : domain.local_capacity);
  for (const auto& child : domain.children) add_shape_subtree(spec, path + "/" + child.name, child);
}

/// Host name -> DomainId of the sealed topology (no_index when two hosts share a name).
std::unordered_map<std::string, std::uint32_t> host_names(const tp::Topology& topology) {
  std::unordered_map<std::string, std::uint32_t> hosts;
  const auto at_host_level = topology.domains_at(topology.host_level());
  hosts.reserve(at_host_level.size());
  for (const tp::DomainId host : at_host_level) {
    const auto [it, inserted] = hosts.emplace(std::string(topology.local_name(host)), host.value);
    if (!inserted) it->second = no_index;
  }
  return hosts;
}

/// The sealed DomainId that (`host`, `path`) names (see tp_placement_entry).
tp::DomainId resolve(const tp_cluster& cluster, const char* host, const char* path,
                     const std::string& context) {
  const TopologySpec& spec = *cluster.spec;
  std::uint32_t from = 0;
  std::string where;
  if (host != nullptr && host[0] != '\0') {
    const auto it = cluster.hosts.find(host);
    if (it == cluster.hosts.end())
      fail(TP_E_NOT_FOUND, context + ": no host '" + std::string(host) + "'");
    if (it->second == no_index) {
      fail(TP_E_INVALID, context + ": host name '" + std::string(host) +
                             "' is not unique; give the path from the root instead");
    }
    from = it->second;
    where = " below host '" + std::string(host) + "'";
  }
  const std::string_view relative = path == nullptr ? std::string_view() : std::string_view(path);
  if (from == 0 && path == nullptr)
    fail(TP_E_NULL, context + ": path is NULL and no host is given");
  const auto index = spec.find(relative, from);
  if (!index || !spec.domains[from].alive) {
    fail(TP_E_NOT_FOUND, context + ": no domain '" + std::string(relative) + "'" + where);
  }
  if (*index >= spec.sealed_size) {
    fail(TP_E_STATE, context + ": domain '" + std::string(relative) + "'" + where +
                         " is not sealed yet; call tp_cluster_seal first");
  }
  return tp::DomainId{*index};
}

}  // namespace

/// A tp_workload as a library workload; validated against the sealed topology.
tp::Workload to_workload(const tp_cluster& cluster, const tp_workload* given, const char* role) {
  if (given == nullptr) fail(TP_E_NULL, std::string(role) + " is NULL");
  // ABI 1's tp_workload ended at extra_cost: accepted, with distinct_hosts at its default.
  constexpr std::size_t abi1_size = offsetof(tp_workload, distinct_hosts);
  const bool abi1 = given->struct_size == abi1_size;
  if (!abi1) check_struct_size(given->struct_size, sizeof(tp_workload), "tp_workload");
  const tp::Topology& topology = sealed_state(cluster).topology();
  tp::Workload w;
  w.id = tp::WorkloadId{given->id};
  if (given->name != nullptr) w.name = given->name;
  const std::string label = std::string(role) + " " + w.label().substr(std::strlen("workload "));
  w.priority = given->priority;
  w.preemptible = given->preemptible != 0;
  w.replicas = given->replicas;
  if (given->min_replicas != 0) w.min_replicas = given->min_replicas;
  w.demand.whole_devices = given->whole_devices;
  w.demand.resources =
      to_vector(topology.schema(), given->demand, given->demand_count, label + ": demand");
  const auto scope = [&](const tp_scope& s, const char* which) {
    if (s.mode == TP_SCOPE_NONE) return tp::TopologyRequirement{};
    if (s.mode != TP_SCOPE_BEST_EFFORT && s.mode != TP_SCOPE_GUARANTEED) {
      fail(TP_E_INVALID,
           label + ": " + which + " mode " + std::to_string(s.mode) + " is not a tp_scope_mode");
    }
    if (s.level == nullptr) fail(TP_E_NULL, label + ": " + which + " level is NULL");
    return tp::TopologyRequirement{s.mode == TP_SCOPE_GUARANTEED ? tp::RequirementMode::guaranteed
                                                                 : tp::RequirementMode::best_effort,
                                   s.level};
  };
  w.replica_scope = scope(given->replica_scope, "replica scope");
  w.gang_scope = scope(given->gang_scope, "gang scope");
  if (!abi1) {
    if (given->distinct_hosts != 0 && given->distinct_hosts != 1) {
      fail(TP_E_INVALID, label + ": distinct_hosts is " + std::to_string(given->distinct_hosts) +
                             "; it must be 0 or 1");
    }
    w.distinct_hosts = given->distinct_hosts == 1;
  }
  const auto cost_input = [&](double value, const char* field, bool non_negative) {
    if (!std::isfinite(value) || (non_negative && value < 0.0)) {
      fail(TP_E_INVALID, label + ": cost input " + field + " is " + std::to_string(value) +
                             "; it must be finite" + (non_negative ? " and >= 0" : ""));
    }
    return value;
  };
  w.cost.start_time_s = cost_input(given->start_time_s, "start_time_s", false);
  w.cost.seconds_since_checkpoint =
      cost_input(given->seconds_since_checkpoint, "seconds_since_checkpoint", true);
  w.cost.model_size_gib = cost_input(given->model_size_gib, "model_size_gib", true);
  w.cost.extra_cost = cost_input(given->extra_cost, "extra_cost", true);
  if (given->model_id != nullptr) w.cost.model_id = given->model_id;
  try {
    tp::validate(w, topology);
  } catch (const std::invalid_argument& error) {
    // The library names it "workload 7 'x'"; the caller knows it as the role it passed.
    std::string message = error.what();
    if (message.starts_with(w.label())) message.replace(0, w.label().size(), label);
    fail(TP_E_INVALID, message);
  }
  return w;
}

/// The running workloads per priority after adding `added` and removing `removed` ones.
std::map<std::int32_t, std::size_t> priorities_after(const std::map<std::int32_t, std::size_t>& now,
                                                     const std::vector<std::int32_t>& added,
                                                     const std::vector<std::int32_t>& removed) {
  std::map<std::int32_t, std::size_t> next = now;
  for (const std::int32_t p : added) ++next[p];
  for (const std::int32_t p : removed) {
    if (--next[p] == 0) next.erase(p);
  }
  return next;
}

}  // namespace topopreempt_c

using namespace topopreempt_c;

extern "C" {

uint32_t tp_abi_version(void) { return TP_ABI_VERSION; }

const char* tp_library_version(void) { return tp::version_string.data(); }

const char* tp_status_name(tp_status status) {
  switch (status) {
    case TP_OK:
      return "TP_OK";
    case TP_E_NULL:
      return "TP_E_NULL";
    case TP_E_INVALID:
      return "TP_E_INVALID";
    case TP_E_NOT_FOUND:
      return "TP_E_NOT_FOUND";
    case TP_E_CONFLICT:
      return "TP_E_CONFLICT";
    case TP_E_STATE:
      return "TP_E_STATE";
    case TP_E_ABI:
      return "TP_E_ABI";
    case TP_E_NO_MEMORY:
      return "TP_E_NO_MEMORY";
    case TP_E_INTERNAL:
      return "TP_E_INTERNAL";
  }
  return "unknown";
}

tp_cluster* tp_cluster_create(void) {
  try {
    auto* cluster = new tp_cluster();
    cluster->serial = next_serial.fetch_add(1);
    return cluster;
  } catch (...) {
    return nullptr;
  }
}

void tp_cluster_destroy(tp_cluster* cluster) { delete cluster; }

const char* tp_cluster_last_error(const tp_cluster* cluster) {
  if (cluster == nullptr) return "cluster is NULL";
  return cluster->static_error != nullptr ? cluster->static_error : cluster->last_error.c_str();
}

void tp_schema_init(tp_schema* schema) {
  if (schema == nullptr) return;
  *schema = tp_schema{};
  schema->struct_size = sizeof(tp_schema);
}

tp_status tp_cluster_define(tp_cluster* cluster, const tp_schema* schema) {
  return guarded(cluster, [&] {
    if (schema == nullptr) fail(TP_E_NULL, "schema is NULL");
    check_struct_size(schema->struct_size, sizeof(tp_schema), "tp_schema");
    require_no_workloads(*cluster, "tp_cluster_define");
    if (schema->levels == nullptr && schema->level_count > 0)
      fail(TP_E_NULL, "schema levels is NULL");
    if (schema->resources == nullptr && schema->resource_count > 0)
      fail(TP_E_NULL, "schema resources is NULL");
    require_text(schema->device_level, "schema device_level");
    require_text(schema->host_level, "schema host_level");
    std::vector<std::string> levels;
    for (std::size_t i = 0; i < schema->level_count; ++i) {
      require_text(schema->levels[i], "schema level " + std::to_string(i));
      levels.emplace_back(schema->levels[i]);
    }
    std::vector<tp::ResourceDimension> dimensions;
    for (std::size_t i = 0; i < schema->resource_count; ++i) {
      const tp_resource& resource = schema->resources[i];
      require_text(resource.name, "schema resource " + std::to_string(i) + " name");
      if (resource.kind != TP_RESOURCE_DEVICE && resource.kind != TP_RESOURCE_POOLED) {
        fail(TP_E_INVALID, "schema resource '" + std::string(resource.name) + "': kind " +
                               std::to_string(resource.kind) + " is not a tp_resource_kind");
      }
      dimensions.push_back({resource.name, resource.kind == TP_RESOURCE_DEVICE
                                               ? tp::ResourceKind::device
                                               : tp::ResourceKind::pooled});
    }
    // The builder checks levels, device and host level and root name; its empty topology is
    // the starting point of the edits.
    tp::TopologyBuilder builder(levels, tp::ResourceSchema(std::move(dimensions)),
                                schema->device_level, schema->host_level,
                                schema->root_name == nullptr ? "cluster" : schema->root_name);
    TopologySpec spec = TopologySpec::from(builder.build());
    spec.sealed_size = 0;
    cluster->spec = std::move(spec);
    cluster->pending_edits = 1;
  });
}

tp_status tp_cluster_define_shape(tp_cluster* cluster, const char* shape, uint32_t machines,
                                  uint32_t per_rack) {
  return guarded(cluster, [&] {
    require_no_workloads(*cluster, "tp_cluster_define_shape");
    const tp::shapes::MachineShape machine = machine_shape(shape);
    if (machines == 0 || machines > 100000) {
      fail(TP_E_INVALID, "machines must be in 1..100000, got " + std::to_string(machines));
    }
    if (per_rack == 0) fail(TP_E_INVALID, "per_rack must be >= 1");
    TopologySpec spec = TopologySpec::from(tp::shapes::cluster(machine, machines, per_rack));
    spec.sealed_size = 0;
    cluster->spec = std::move(spec);
    cluster->pending_edits = 1;
  });
}

tp_status tp_cluster_add_domain(tp_cluster* cluster, const char* path, const char* level,
                                const tp_amount* capacity, size_t capacity_count) {
  return guarded(cluster, [&] {
    TopologySpec& spec = defined_spec(*cluster);
    require_text(path, "path");
    require_text(level, "level of '" + std::string(path) + "'");
    spec.add(
        path, level,
        to_vector(spec.schema, capacity, capacity_count, "domain '" + std::string(path) + "'"));
    ++cluster->pending_edits;
  });
}

tp_status tp_cluster_add_machine(tp_cluster* cluster, const char* path, const char* shape) {
  return guarded(cluster, [&] {
    TopologySpec& spec = defined_spec(*cluster);
    require_text(path, "path");
    const tp::shapes::MachineShape machine = machine_shape(shape);
    if (!(spec.schema == tp::ResourceSchema::standard())) {
      fail(TP_E_INVALID,
           "machine '" + std::string(path) + "': shape '" + shape +
               "' needs the standard resources gpu_milli, gpu_memory_mib (device), cpu_milli, "
               "memory_mib (pooled), in that order");
    }
    // All or nothing: the first domain that fails removes those added before it.
    const std::uint32_t first = static_cast<std::uint32_t>(spec.domains.size());
    try {
      add_shape_subtree(spec, path, machine.root);
      if (machine.affinity) {
        if (machine.root.level != spec.levels[spec.host_level]) {
          fail(TP_E_INVALID, "machine '" + std::string(path) + "': shape '" + shape +
                                 "' has an affinity matrix and its root level '" +
                                 machine.root.level + "' is not the host level '" +
                                 spec.levels[spec.host_level] + "'");
        }
        spec.domains[first].affinity = *machine.affinity;
      }
    } catch (...) {
      if (spec.domains.size() > first) spec.remove(first);
      throw;
    }
    ++cluster->pending_edits;
  });
}

tp_status tp_cluster_remove_domain(tp_cluster* cluster, const char* path) {
  return guarded(cluster, [&] {
    TopologySpec& spec = defined_spec(*cluster);
    require_text(path, "path");
    const auto index = spec.find(path);
    if (!index) fail(TP_E_NOT_FOUND, "no domain '" + std::string(path) + "'");
    if (*index == 0)
      fail(TP_E_INVALID, "the root cannot be removed; use tp_cluster_define to start over");
    spec.remove(*index);
    ++cluster->pending_edits;
  });
}

tp_status tp_cluster_set_affinity(tp_cluster* cluster, const char* host_path, const double* matrix,
                                  size_t devices) {
  return guarded(cluster, [&] {
    TopologySpec& spec = defined_spec(*cluster);
    require_text(host_path, "host_path");
    if (matrix == nullptr)
      fail(TP_E_NULL, "affinity matrix of '" + std::string(host_path) + "' is NULL");
    if (devices == 0 || devices > 4096) {
      fail(TP_E_INVALID,
           "affinity matrix of '" + std::string(host_path) + "': devices must be in 1..4096");
    }
    const auto index = spec.find(host_path);
    if (!index) fail(TP_E_NOT_FOUND, "no domain '" + std::string(host_path) + "'");
    if (spec.domains[*index].level != spec.host_level) {
      fail(TP_E_INVALID, "affinity matrix: '" + std::string(host_path) +
                             "' is not at the host level '" + spec.levels[spec.host_level] + "'");
    }
    const auto n = static_cast<Eigen::Index>(devices);
    Eigen::MatrixXd values(n, n);
    for (Eigen::Index row = 0; row < n; ++row) {
      for (Eigen::Index column = 0; column < n; ++column)
        values(row, column) = matrix[row * n + column];
    }
    spec.domains[*index].affinity = std::move(values);
    ++cluster->pending_edits;
  });
}

tp_status tp_cluster_seal(tp_cluster* cluster) {
  return guarded(cluster, [&] {
    const TopologySpec& spec = defined_spec(*cluster);
    std::vector<std::uint32_t> spec_to_id;
    auto topology = std::make_shared<const tp::Topology>(spec.build(spec_to_id));
    auto state = std::make_unique<tp::Allocation>(topology);
    if (cluster->state) {
      // Every running workload moves over, entry by entry: old DomainId i is spec domain i.
      const tp::Allocation& old = *cluster->state;
      const tp::Topology& old_topology = old.topology();
      for (const tp::WorkloadId id : old.workload_ids()) {
        const tp::Workload& workload = old.workload(id);
        tp::Placement placement = old.placement(id);
        for (auto& replica : placement.replicas) {
          for (auto& entry : replica.entries) {
            const std::uint32_t moved =
                entry.domain.value < spec.sealed_size ? spec_to_id[entry.domain.value] : no_index;
            if (moved == no_index) {
              fail(TP_E_STATE, workload.label() + " holds " + old_topology.describe(entry.domain) +
                                   ", which is removed; finish the workload first");
            }
            entry.domain = tp::DomainId{moved};
          }
        }
        try {
          state->add(workload, placement);
        } catch (const std::invalid_argument& error) {
          fail(TP_E_STATE,
               std::string("cannot keep a running workload on the new topology: ") + error.what());
        }
      }
    }
    TopologySpec next = TopologySpec::from(*topology);
    auto hosts = host_names(*topology);
    // Nothing below throws.
    cluster->spec = std::move(next);
    cluster->hosts = std::move(hosts);
    cluster->topology = std::move(topology);
    cluster->state = std::move(state);
    cluster->deciders.clear();
    cluster->pending_edits = 0;
    ++cluster->generation;
  });
}

void tp_cluster_info_init(tp_cluster_info* info) {
  if (info == nullptr) return;
  *info = tp_cluster_info{};
  info->struct_size = sizeof(tp_cluster_info);
}

tp_status tp_cluster_get_info(tp_cluster* cluster, tp_cluster_info* info) {
  return guarded(cluster, [&] {
    if (info == nullptr) fail(TP_E_NULL, "info is NULL");
    check_struct_size(info->struct_size, sizeof(tp_cluster_info), "tp_cluster_info");
    tp_cluster_info out{};
    out.struct_size = sizeof(tp_cluster_info);
    out.sealed = cluster->topology ? 1 : 0;
    out.pending_edits = cluster->pending_edits;
    out.generation = cluster->generation;
    if (cluster->topology) {
      const tp::Topology& topology = *cluster->topology;
      out.domains = topology.size();
      out.hosts = topology.domains_at(topology.host_level()).size();
      out.devices = topology.device_count(tp::Topology::root());
      out.workloads = cluster->state->size();
      out.state_version = cluster->state->domain_version(tp::Topology::root());
    }
    out.cached_deciders = cluster->deciders.size();
    out.reused_reads = cluster->reused_reads;
    out.fresh_reads = cluster->fresh_reads;
    *info = out;
  });
}

void tp_workload_init(tp_workload* workload) {
  if (workload == nullptr) return;
  *workload = tp_workload{};
  workload->struct_size = sizeof(tp_workload);
  workload->preemptible = 1;
  workload->replicas = 1;
}

tp_status tp_cluster_workload_start(tp_cluster* cluster, const tp_workload* workload,
                                    const tp_placement_entry* entries, size_t entry_count) {
  return guarded(cluster, [&] {
    tp::Workload w = to_workload(*cluster, workload, "workload");
    if (cluster->state->contains(w.id)) fail(TP_E_CONFLICT, w.label() + " is already running");
    if (entries == nullptr && entry_count > 0) fail(TP_E_NULL, w.label() + ": entries is NULL");
    const tp::Topology& topology = *cluster->topology;
    tp::Placement placement;
    placement.replicas.resize(static_cast<std::size_t>(w.replicas));
    for (std::size_t e = 0; e < entry_count; ++e) {
      const tp_placement_entry& entry = entries[e];
      const std::string context = w.label() + ": placement entry " + std::to_string(e);
      if (entry.replica >= static_cast<std::uint32_t>(w.replicas)) {
        fail(TP_E_INVALID, context + ": replica " + std::to_string(entry.replica) +
                               " of a workload of " + std::to_string(w.replicas) + " replicas");
      }
      const tp::DomainId domain = resolve(*cluster, entry.host, entry.path, context);
      tp::ResourceVector amount =
          entry.amount_count == 0 && topology.is_device(domain)
              ? topology.local_capacity(domain)
              : to_vector(topology.schema(), entry.amounts, entry.amount_count, context);
      placement.replicas[entry.replica].entries.push_back({domain, std::move(amount)});
    }
    auto priorities = priorities_after(cluster->priorities, {w.priority}, {});
    cluster->state->add(std::move(w), placement);
    cluster->priorities = std::move(priorities);  // no-throw move
  });
}

tp_status tp_cluster_workload_finish(tp_cluster* cluster, uint64_t id) {
  return guarded(cluster, [&] {
    tp::Allocation& state = sealed_state(*cluster);
    if (!state.contains(tp::WorkloadId{id}))
      fail(TP_E_NOT_FOUND, "workload " + std::to_string(id) + " is not running");
    auto priorities =
        priorities_after(cluster->priorities, {}, {state.workload(tp::WorkloadId{id}).priority});
    state.remove(tp::WorkloadId{id});
    cluster->priorities = std::move(priorities);
  });
}

tp_status tp_cluster_workload_shrink(tp_cluster* cluster, uint64_t id, const int32_t* replicas,
                                     size_t count) {
  return guarded(cluster, [&] {
    tp::Allocation& state = sealed_state(*cluster);
    if (!state.contains(tp::WorkloadId{id}))
      fail(TP_E_NOT_FOUND, "workload " + std::to_string(id) + " is not running");
    if (replicas == nullptr && count > 0)
      fail(TP_E_NULL, "workload " + std::to_string(id) + ": replicas is NULL");
    if (count == 0) fail(TP_E_INVALID, "workload " + std::to_string(id) + ": no replica to drop");
    state.shrink(tp::WorkloadId{id}, std::span<const std::int32_t>(replicas, count));
  });
}

int tp_cluster_workload_running(const tp_cluster* cluster, uint64_t id) {
  if (cluster == nullptr || !cluster->state) return 0;
  return cluster->state->contains(tp::WorkloadId{id}) ? 1 : 0;
}

}  // extern "C"
