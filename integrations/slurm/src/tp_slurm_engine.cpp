// SPDX-License-Identifier: MIT
// The planner behind preempt/topopreempt: builds a topopreempt `Topology` and `Allocation` from
// the plain-data snapshot the C side read out of slurmctld, solves, verifies the plan with the
// library's independent verifier, checks that Slurm's select/cons_tres would start the job once
// the victims are gone, logs it, and remembers it per job until the state changes.
// Every entry point catches everything: an exception must never unwind into slurmctld.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"
#include "topopreempt/model/topology.hpp"
#include "tp_slurm_bridge.h"

namespace tp = topopreempt;

namespace {

/// topopreempt.conf: `key = value` lines, `#` comments. Unknown keys and bad values are errors.
struct Config {
  std::string solver = "branch_and_bound";       // branch_and_bound | knapsack | greedy
  std::string cost_model = "priority_weighted";  // priority_weighted | victim_count | lost_work
  double priority_offset = 1.0;                  // priority_weighted: tier + offset per victim
  std::int64_t time_limit_ms = 500;              // branch_and_bound only
  std::int64_t cycle_budget_ms = 500;            // planning time per scheduling cycle
  std::uint64_t node_limit = 200000;             // branch_and_bound only
  std::string plan_log;                          // JSON lines, one per plan; empty: none
  std::string relation = "partition_prio";       // partition_prio | qos: who may preempt whom
};

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

/// The whole of `value` as a number of type T, else "not a number" naming the key: a library
/// conversion's own message (`stoll`) means nothing to an administrator.
template <class T>
T parse_number(const std::string& key, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  T result{};
  if constexpr (std::is_floating_point_v<T>) {
    result = static_cast<T>(std::strtod(value.c_str(), &end));
  } else if constexpr (std::is_signed_v<T>) {
    result = static_cast<T>(std::strtoll(value.c_str(), &end, 10));
  } else {
    if (value.find('-') != std::string::npos) throw std::invalid_argument(key + " must be > 0");
    result = static_cast<T>(std::strtoull(value.c_str(), &end, 10));
  }
  if (value.empty() || end == value.c_str() || *end != '\0') {
    throw std::invalid_argument(key + " is not a number");
  }
  if (errno == ERANGE) throw std::invalid_argument(key + " is out of range");
  return result;
}

Config read_config(const char* path) {
  Config config;
  if (path == nullptr) return config;
  std::ifstream in(path);
  if (!in) return config;  // no file: defaults
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto equals = line.find('=');
    const auto where = std::string(path) + ":" + std::to_string(number) + ": ";
    if (equals == std::string::npos) throw std::invalid_argument(where + "expected key = value");
    const std::string key = trim(line.substr(0, equals));
    const std::string value = trim(line.substr(equals + 1));
    try {
      if (key == "solver") {
        if (value != "branch_and_bound" && value != "knapsack" && value != "greedy") {
          throw std::invalid_argument("solver must be branch_and_bound, knapsack or greedy");
        }
        config.solver = value;
      } else if (key == "cost_model") {
        if (value != "priority_weighted" && value != "victim_count" && value != "lost_work") {
          throw std::invalid_argument(
              "cost_model must be priority_weighted, victim_count or lost_work");
        }
        config.cost_model = value;
      } else if (key == "priority_offset") {
        config.priority_offset = parse_number<double>(key, value);
        if (!(config.priority_offset >= 0)) throw std::invalid_argument(key + " must be >= 0");
      } else if (key == "time_limit_ms") {
        config.time_limit_ms = parse_number<std::int64_t>(key, value);
        if (config.time_limit_ms <= 0) throw std::invalid_argument(key + " must be > 0");
      } else if (key == "cycle_budget_ms") {
        config.cycle_budget_ms = parse_number<std::int64_t>(key, value);
        if (config.cycle_budget_ms <= 0) throw std::invalid_argument(key + " must be > 0");
      } else if (key == "node_limit") {
        config.node_limit = parse_number<std::uint64_t>(key, value);
        if (config.node_limit == 0) throw std::invalid_argument(key + " must be > 0");
      } else if (key == "relation") {
        if (value != "partition_prio" && value != "qos") {
          throw std::invalid_argument("relation must be partition_prio or qos");
        }
        config.relation = value;
      } else if (key == "plan_log") {
        config.plan_log = value;
      } else {
        throw std::invalid_argument("unknown key '" + key + "'");
      }
    } catch (const std::exception& error) {
      throw std::invalid_argument(where + "'" + key + " = " + value + "': " + error.what());
    }
  }
  return config;
}

/// JSON string literal (control characters escaped).
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

/// The snapshot as a topopreempt model, and the way back from domains to Slurm names.
struct Model {
  std::shared_ptr<const tp::Topology> topology;
  std::unique_ptr<tp::Allocation> state;
  bool has_switches = false;
  bool memory = false;  // a pooled `memory` dimension (MB) on every node
  std::map<std::uint32_t, int> gpu_index;          // device domain -> GPU index on its node
  std::map<std::uint32_t, std::string> node_name;  // host domain -> Slurm node name
};

const std::vector<std::string>& base_levels() {
  static const std::vector<std::string> levels = {"node", "socket", "gpu"};
  return levels;
}

/// "switch" for Slurm's leaf level 0, "switch1", "switch2", ... above it.
std::string switch_level_name(int level) {
  return level == 0 ? std::string("switch") : "switch" + std::to_string(level);
}

/// A request the model cannot express: the job gets stock behaviour, told at info level.
struct unmappable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Whether the request may use snapshot node `n`.
bool eligible(const tp_request_t& request, int n) {
  return request.eligible == nullptr || request.eligible[n] != 0;
}

Model build_model(const tp_snapshot_t& snapshot, const tp_request_t& request) {
  Model model;
  model.memory = snapshot.memory_modelled != 0;
  int top_level = -1;
  for (int s = 0; s < snapshot.switch_count; ++s) {
    top_level = std::max(top_level, snapshot.switches[s].level);
  }
  std::vector<std::string> levels = {"cluster"};
  for (int level = top_level; level >= 0; --level) levels.push_back(switch_level_name(level));
  for (const auto& level : base_levels()) levels.push_back(level);
  // `eligible`: "this node admits the preemptor". A node the preemptor may use gets as much as
  // all its replicas demand (one each), so it never limits how many land there (the
  // preemptor's `distinct_hosts` keeps them on distinct nodes); a node it may not use
  // (partition, -x, backfill's reservations, features, DOWN/DRAIN...) gets none, so no replica
  // lands there while its running jobs still count. Running jobs hold none of it.
  std::vector<tp::ResourceDimension> dimensions = {
      {"gpu", tp::ResourceKind::device},
      {"core", tp::ResourceKind::pooled},
      {"eligible", tp::ResourceKind::pooled}};
  if (model.memory) dimensions.push_back({"memory", tp::ResourceKind::pooled});
  tp::ResourceSchema schema(dimensions);
  tp::TopologyBuilder builder(levels, schema, "gpu", "node", "cluster");

  // Switches top-down, so that every parent exists before its children.
  std::vector<tp::TopologyBuilder::Handle> switch_handle(
      static_cast<std::size_t>(snapshot.switch_count));
  std::vector<bool> added(static_cast<std::size_t>(snapshot.switch_count), false);
  for (int level = top_level; level >= 0; --level) {
    for (int s = 0; s < snapshot.switch_count; ++s) {
      const tp_switch_t& sw = snapshot.switches[s];
      if (sw.level != level) continue;
      const bool under_parent = sw.parent >= 0 && sw.parent < snapshot.switch_count &&
                                added[static_cast<std::size_t>(sw.parent)];
      const auto parent =
          under_parent ? switch_handle[static_cast<std::size_t>(sw.parent)] : builder.root();
      switch_handle[static_cast<std::size_t>(s)] =
          builder.add(parent, switch_level_name(level), sw.name);
      added[static_cast<std::size_t>(s)] = true;
    }
  }
  model.has_switches = snapshot.switch_count > 0;

  const tp::ResourceVector one_gpu = schema.make({{"gpu", 1}});
  for (int n = 0; n < snapshot.node_count; ++n) {
    const tp_node_t& node = snapshot.nodes[n];
    if (node.name == nullptr || node.name[0] == '\0') continue;
    const auto parent = node.leaf_switch >= 0 && node.leaf_switch < snapshot.switch_count
                            ? switch_handle[static_cast<std::size_t>(node.leaf_switch)]
                            : builder.root();
    const std::int64_t admits = eligible(request, n) ? std::max(1, request.nodes) : 0;
    tp::ResourceVector node_capacity = schema.make({{"eligible", admits}});
    if (model.memory) {
      if (node.memory_mb < 0) {
        throw std::invalid_argument(std::string("node ") + node.name + " has negative memory");
      }
      node_capacity = schema.make({{"eligible", admits}, {"memory", node.memory_mb}});
    }
    const auto host = builder.add(parent, "node", node.name, node_capacity);
    std::vector<tp::TopologyBuilder::Handle> sockets;
    for (int s = 0; s < node.sockets; ++s) {
      sockets.push_back(builder.add(host, "socket", "socket" + std::to_string(s),
                                    schema.make({{"core", node.cores_per_socket}})));
    }
    for (int g = 0; g < node.gpus; ++g) {
      const int socket = node.gpu_socket[g];
      const auto parent_of_gpu =
          socket >= 0 && socket < node.sockets ? sockets[static_cast<std::size_t>(socket)] : host;
      builder.add(parent_of_gpu, "gpu", "gpu" + std::to_string(g), one_gpu);
    }
  }
  model.topology = std::make_shared<const tp::Topology>(builder.build());
  const tp::Topology& topology = *model.topology;
  for (const tp::DomainId host : topology.domains_at(topology.host_level())) {
    model.node_name[host.value] = std::string(topology.local_name(host));
    for (const tp::DomainId device : topology.domains_at(topology.device_level(), host)) {
      model.gpu_index[device.value] = std::stoi(std::string(topology.local_name(device)).substr(3));
    }
  }
  model.state = std::make_unique<tp::Allocation>(model.topology);
  return model;
}

tp::DomainId node_domain(const Model& model, const tp_node_t& node) {
  const tp::Topology& topology = *model.topology;
  for (const tp::DomainId host : topology.domains_at(topology.host_level())) {
    if (topology.local_name(host) == node.name) return host;
  }
  throw std::invalid_argument(std::string("node ") + node.name + " is not in the topology");
}

/// One replica's entries for what a job holds on one node.
tp::ReplicaPlacement holding_entries(const Model& model, const tp_snapshot_t& snapshot,
                                     const tp_holding_t& holding) {
  const tp::Topology& topology = *model.topology;
  const tp_node_t& node = snapshot.nodes[holding.node];
  const tp::DomainId host = node_domain(model, node);
  if (node.gpus < 64 && (holding.gpu_mask >> node.gpus) != 0) {
    throw std::invalid_argument("a job holds a GPU index >= " + std::to_string(node.gpus) +
                                " on node " + node.name + ", which has " +
                                std::to_string(node.gpus) + " GPUs");
  }
  tp::ReplicaPlacement replica;
  for (int g = 0; g < node.gpus; ++g) {
    if ((holding.gpu_mask >> g & 1U) == 0) continue;
    const int socket = node.gpu_socket[g];
    const std::string path = topology.path(host) +
                             (socket >= 0 ? "/socket" + std::to_string(socket) : std::string()) +
                             "/gpu" + std::to_string(g);
    const auto device = topology.find(path);
    if (!device) throw std::invalid_argument("GPU " + path + " is not in the topology");
    replica.entries.push_back({*device, topology.local_capacity(*device)});
  }
  for (int s = 0; s < node.sockets && s < TP_MAX_SOCKETS; ++s) {
    if (holding.cores_on_socket[s] == 0) continue;
    const auto socket = topology.find(topology.path(host) + "/socket" + std::to_string(s));
    if (!socket) throw std::invalid_argument("socket missing on " + std::string(node.name));
    replica.entries.push_back(
        {*socket, topology.schema().make({{"core", holding.cores_on_socket[s]}})});
  }
  if (model.memory && holding.memory_mb > 0) {
    replica.entries.push_back({host, topology.schema().make({{"memory", holding.memory_mb}})});
  }
  return replica;
}

int popcount(std::uint64_t mask) { return __builtin_popcountll(mask); }

int core_count(const tp_holding_t& holding) {
  int total = 0;
  for (const int cores : holding.cores_on_socket) total += cores;
  return total;
}

/// Slice ids for jobs that are not a gang of identical per-node shares (see add_job).
constexpr std::uint64_t slice_id_base = std::uint64_t{1} << 40;

/// Adds one running Slurm job. A job holding the same GPUs and cores on each of its nodes is a
/// gang of one replica per node. Any other job cannot be a gang of identical replicas, so each
/// node's share becomes its own non-preemptible workload: the plan never counts on evicting
/// it (sound, possibly not minimal), and the Slurm side never calls it preemptable.
void add_job(Model& model, const tp_snapshot_t& snapshot, const tp_job_t& job) {
  if (job.holding_count == 0) return;
  const tp_holding_t* holdings = snapshot.holdings + job.first_holding;
  bool uniform = true;
  for (int h = 1; h < job.holding_count; ++h) {
    uniform = uniform && popcount(holdings[h].gpu_mask) == popcount(holdings[0].gpu_mask) &&
              core_count(holdings[h]) == core_count(holdings[0]) &&
              (!model.memory || holdings[h].memory_mb == holdings[0].memory_mb);
  }
  const auto workload_for = [&](std::uint64_t id, int replicas, const tp_holding_t& shape,
                                bool preemptible) {
    tp::Workload w;
    w.id = tp::WorkloadId{id};
    w.name = job.name != nullptr ? job.name : "";
    w.priority = job.priority;
    w.preemptible = preemptible;
    w.replicas = replicas;
    w.demand.whole_devices = popcount(shape.gpu_mask);
    w.demand.resources =
        model.memory ? model.topology->schema().make(
                           {{"core", core_count(shape)}, {"memory", std::max<std::int64_t>(0, shape.memory_mb)}})
                     : model.topology->schema().make({{"core", core_count(shape)}});
    w.cost.start_time_s = job.start_time;
    w.cost.seconds_since_checkpoint = std::max(0.0, snapshot.now - job.start_time);
    return w;
  };
  if (uniform) {
    tp::Placement placement;
    for (int h = 0; h < job.holding_count; ++h) {
      placement.replicas.push_back(holding_entries(model, snapshot, holdings[h]));
    }
    model.state->add(workload_for(job.job_id, job.holding_count, holdings[0], job.preemptible != 0),
                     placement);
    return;
  }
  for (int h = 0; h < job.holding_count; ++h) {
    tp::Placement placement;
    placement.replicas.push_back(holding_entries(model, snapshot, holdings[h]));
    const std::uint64_t id =
        slice_id_base + std::uint64_t{job.job_id} * 4096 + static_cast<std::uint64_t>(h);
    model.state->add(workload_for(id, 1, holdings[h], false), placement);
  }
}

/// What each of the preemptor's nodes must give it. --exclusive asks for a whole node: every GPU,
/// core and megabyte, which only an empty node has (as cons_tres requires). That is exact only
/// when the nodes the job may use are alike; otherwise the job gets stock behaviour.
struct NodeShare {
  int gpus = 0;
  int cores = 0;
  std::int64_t memory_mb = 0;
};

NodeShare node_share(const tp_snapshot_t& snapshot, const tp_request_t& request) {
  NodeShare share{request.gpus_per_node, request.cores_per_node, request.memory_per_node_mb};
  if (request.exclusive == 0) return share;
  bool first = true;
  for (int n = 0; n < snapshot.node_count; ++n) {
    const tp_node_t& node = snapshot.nodes[n];
    if (node.name == nullptr || node.name[0] == '\0' || !eligible(request, n)) continue;
    const NodeShare whole{node.gpus, node.sockets * node.cores_per_socket,
                          snapshot.memory_modelled != 0 ? node.memory_mb : 0};
    if (first) {
      if (whole.gpus < share.gpus || whole.cores < share.cores) {
        throw unmappable("--exclusive asks for more than a whole node");
      }
      share = whole;
      first = false;
    } else if (whole.gpus != share.gpus || whole.cores != share.cores ||
               whole.memory_mb != share.memory_mb) {
      throw unmappable("--exclusive over nodes of different sizes");
    }
  }
  return share;
}

tp::Workload preemptor_workload(const Model& model, const tp_request_t& request,
                                const NodeShare& share) {
  tp::Workload w;
  w.id = tp::WorkloadId{request.job_id};
  w.name = request.name != nullptr ? request.name : "";
  w.priority = request.priority;
  w.replicas = request.nodes;
  // -N<n> means n distinct nodes.
  w.distinct_hosts = true;
  w.demand.whole_devices = share.gpus;
  // One unit of `eligible` per replica: only nodes that admit the preemptor have it.
  w.demand.resources =
      model.memory ? model.topology->schema().make(
                         {{"core", share.cores}, {"eligible", 1}, {"memory", share.memory_mb}})
                   : model.topology->schema().make({{"core", share.cores}, {"eligible", 1}});
  // A Slurm node's share never spans nodes: -N1 is the node scope.
  w.replica_scope = tp::TopologyRequirement::guaranteed(
      request.replica_scope == TP_SCOPE_SOCKET ? "socket" : "node");
  if (request.one_switch != 0) {
    if (!model.has_switches) throw unmappable("--switches=1 without topology/tree switches");
    w.gang_scope = tp::TopologyRequirement::guaranteed("switch");
  }
  return w;
}

/// The check cons_tres will make, done on the snapshot itself and independent of the model and
/// the solver: with `victims` gone, are there `nodes` distinct nodes the job may use (all under
/// one leaf switch for --switches=1), each with the GPUs (on one socket for the socket scope),
/// cores (on that socket too) and memory of one share, and empty for --exclusive? Returns ""
/// when the job starts, else what stops it. Slurm then preempts the plan's victims only if this
/// holds, so a plan that fails it is not imposed.
std::string cons_tres_refusal(const tp_snapshot_t& snapshot, const tp_request_t& request,
                              const NodeShare& share, const std::map<std::uint32_t, int>& victims) {
  struct Free {
    std::uint64_t gpus = 0;
    std::vector<int> cores;
    std::int64_t memory_mb = 0;
    int jobs = 0;
  };
  std::vector<Free> free(static_cast<std::size_t>(snapshot.node_count));
  for (int n = 0; n < snapshot.node_count; ++n) {
    const tp_node_t& node = snapshot.nodes[n];
    Free& f = free[static_cast<std::size_t>(n)];
    f.gpus = node.gpus >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << node.gpus) - 1;
    f.cores.assign(static_cast<std::size_t>(std::max(0, node.sockets)), node.cores_per_socket);
    f.memory_mb = node.memory_mb;
  }
  for (int j = 0; j < snapshot.job_count; ++j) {
    const tp_job_t& job = snapshot.jobs[j];
    if (victims.count(job.job_id) != 0) continue;
    for (int h = job.first_holding; h < job.first_holding + job.holding_count; ++h) {
      const tp_holding_t& holding = snapshot.holdings[h];
      if (holding.node < 0 || holding.node >= snapshot.node_count) continue;
      Free& f = free[static_cast<std::size_t>(holding.node)];
      f.gpus &= ~holding.gpu_mask;
      for (std::size_t s = 0; s < f.cores.size() && s < TP_MAX_SOCKETS; ++s) {
        f.cores[s] -= holding.cores_on_socket[s];
      }
      f.memory_mb -= holding.memory_mb;
      ++f.jobs;
    }
  }
  const auto fits = [&](int n) {
    const tp_node_t& node = snapshot.nodes[n];
    const Free& f = free[static_cast<std::size_t>(n)];
    if (request.exclusive != 0 && f.jobs > 0) return false;
    if (snapshot.memory_modelled != 0 && f.memory_mb < share.memory_mb) return false;
    if (request.replica_scope == TP_SCOPE_SOCKET) {
      for (int s = 0; s < static_cast<int>(f.cores.size()); ++s) {
        int gpus = 0;
        for (int g = 0; g < node.gpus && g < 64; ++g) {
          gpus += (f.gpus >> g & 1U) != 0 && node.gpu_socket[g] == s ? 1 : 0;
        }
        if (gpus >= share.gpus && f.cores[static_cast<std::size_t>(s)] >= share.cores) return true;
      }
      return false;
    }
    int cores = 0;
    for (const int c : f.cores) cores += c;
    return popcount(f.gpus) >= share.gpus && cores >= share.cores;
  };
  std::map<int, int> fitting_per_group;  // leaf switch (or -1 for all) -> nodes that fit
  for (int n = 0; n < snapshot.node_count; ++n) {
    const tp_node_t& node = snapshot.nodes[n];
    if (node.name == nullptr || node.name[0] == '\0' || !eligible(request, n) || !fits(n)) continue;
    if (request.one_switch != 0) {
      if (node.leaf_switch >= 0) ++fitting_per_group[node.leaf_switch];
    } else {
      ++fitting_per_group[-1];
    }
  }
  for (const auto& [group, count] : fitting_per_group) {
    if (count >= request.nodes) return "";
  }
  return "after the victims leave, fewer than " + std::to_string(request.nodes) +
         " usable node(s)" + (request.one_switch != 0 ? " under one leaf switch" : "") +
         " have its share free (GPUs, cores" +
         (snapshot.memory_modelled != 0 ? ", memory" : "") +
         (request.exclusive != 0 ? ", empty for --exclusive" : "") + ")";
}

/// Identifies a request: a pending job's options change rarely, but backfill's exclusions
/// differ from the main scheduler's, and each gets its own cached plan.
std::uint64_t request_fingerprint(const tp_request_t& request, int node_count) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&hash](std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xffU;
      hash *= 0x100000001b3ULL;
    }
  };
  mix(request.job_id);
  mix(static_cast<std::uint64_t>(request.priority));
  mix(static_cast<std::uint64_t>(request.nodes));
  mix(static_cast<std::uint64_t>(request.gpus_per_node));
  mix(static_cast<std::uint64_t>(request.cores_per_node));
  mix(static_cast<std::uint64_t>(request.replica_scope));
  mix(static_cast<std::uint64_t>(request.one_switch));
  mix(static_cast<std::uint64_t>(request.exclusive));
  mix(static_cast<std::uint64_t>(request.memory_per_node_mb));
  mix(static_cast<std::uint64_t>(node_count));
  for (int n = 0; n < node_count; ++n) mix(eligible(request, n) ? 1U : 0U);
  return hash;
}

/// Mixes `value` into an FNV-1a digest byte by byte (deterministic on every platform).
void fnv_mix(std::uint64_t& hash, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xffU;
    hash *= 0x100000001b3ULL;
  }
}

/// What a verdict that names no victims (`infeasible`, `unknown`, `no_preemption_needed`)
/// depends on: the part of the cluster the job may land on. A replica lands only on a node the
/// request makes eligible, and a victim only matters for what it frees there, so these verdicts
/// are functions of the eligible nodes (their configuration and leaf switch), of every job that
/// holds something on one of them (all its holdings: whether its shares are identical decides
/// whether the model may evict it), of the switch tree and of whether memory is modelled.
/// Jobs, nodes and their changes elsewhere do not enter: a kept verdict survives them. The
/// request itself (eligibility included) is the cache key, not part of this digest.
///
/// This stands in for the library's domain versions (`Allocation::domain_version` of the
/// eligible hosts): the plugin builds a fresh model from a fresh snapshot for every plan, and
/// versions digest a model's change history, workloads' cost fields included (lost_work reads
/// the clock), so they do not compare across two snapshots of an unchanged cluster. Start times
/// and names are left out here because no verdict without victims depends on a cost.
std::uint64_t eligible_state_digest(const tp_snapshot_t& snapshot, const tp_request_t& request) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  fnv_mix(hash, static_cast<std::uint64_t>(snapshot.memory_modelled != 0));
  fnv_mix(hash, static_cast<std::uint64_t>(snapshot.switch_count));
  for (int s = 0; s < snapshot.switch_count; ++s) {
    const tp_switch_t& sw = snapshot.switches[s];
    for (const char* c = sw.name != nullptr ? sw.name : ""; *c != '\0'; ++c) {
      fnv_mix(hash, static_cast<unsigned char>(*c));
    }
    fnv_mix(hash, static_cast<std::uint64_t>(sw.level));
    fnv_mix(hash, static_cast<std::uint64_t>(sw.parent));
  }
  for (int n = 0; n < snapshot.node_count; ++n) {
    if (!eligible(request, n)) continue;
    const tp_node_t& node = snapshot.nodes[n];
    fnv_mix(hash, static_cast<std::uint64_t>(n));
    for (const char* c = node.name != nullptr ? node.name : ""; *c != '\0'; ++c) {
      fnv_mix(hash, static_cast<unsigned char>(*c));
    }
    fnv_mix(hash, static_cast<std::uint64_t>(node.leaf_switch));
    fnv_mix(hash, static_cast<std::uint64_t>(node.sockets));
    fnv_mix(hash, static_cast<std::uint64_t>(node.cores_per_socket));
    fnv_mix(hash, static_cast<std::uint64_t>(node.gpus));
    for (int g = 0; g < node.gpus && g < TP_MAX_GPUS; ++g) {
      fnv_mix(hash, static_cast<std::uint64_t>(node.gpu_socket[g]));
    }
    fnv_mix(hash, static_cast<std::uint64_t>(snapshot.memory_modelled != 0 ? node.memory_mb : 0));
  }
  // Jobs enter as a sum of their own digests, so that job_list's order does not matter.
  std::uint64_t jobs = 0;
  for (int j = 0; j < snapshot.job_count; ++j) {
    const tp_job_t& job = snapshot.jobs[j];
    bool touches = false;
    for (int h = job.first_holding; h < job.first_holding + job.holding_count; ++h) {
      const int n = snapshot.holdings[h].node;
      touches = touches || (n >= 0 && n < snapshot.node_count && eligible(request, n));
    }
    if (!touches) continue;
    std::uint64_t digest = 0xcbf29ce484222325ULL;
    fnv_mix(digest, job.job_id);
    fnv_mix(digest, static_cast<std::uint64_t>(job.priority));
    fnv_mix(digest, static_cast<std::uint64_t>(job.preemptible != 0));
    fnv_mix(digest, static_cast<std::uint64_t>(job.holding_count));
    for (int h = job.first_holding; h < job.first_holding + job.holding_count; ++h) {
      const tp_holding_t& holding = snapshot.holdings[h];
      fnv_mix(digest, static_cast<std::uint64_t>(holding.node));
      fnv_mix(digest, holding.gpu_mask);
      for (const int cores : holding.cores_on_socket) {
        fnv_mix(digest, static_cast<std::uint64_t>(cores));
      }
      fnv_mix(digest, static_cast<std::uint64_t>(holding.memory_mb));
    }
    jobs += digest;
  }
  fnv_mix(hash, jobs);
  return hash;
}

/// "unknown": a limit stopped the search before anything was proven (see docs/model.md).
bool is_unknown(tp::PlanStatus status) { return status == tp::PlanStatus::unknown; }

/// How the log names a status: "optimal" only when the solver proved it, a time-limited or
/// greedy plan is the best found, "infeasible" is a proof, "unknown" is not.
std::string status_text(tp::PlanStatus status) {
  if (status == tp::PlanStatus::feasible) return "best found (feasible, not proven optimal)";
  if (status == tp::PlanStatus::infeasible) return "infeasible (proven)";
  if (is_unknown(status)) return "unknown (a limit stopped the search before anything was proven)";
  return std::string(tp::to_string(status));
}

}  // namespace

struct tp_engine {
  /// One plan: for which request and state, what Slurm is told, and its victims in rank order.
  /// `keep`: a verdict without victims (infeasible, unknown at the full time limit, fits as
  /// is), which stays valid while `dependency` (eligible_state_digest) is unchanged.
  struct Plan {
    std::uint64_t fingerprint = 0;
    tp_plan_kind_t kind = TP_PLAN_NONE;
    std::map<std::uint32_t, int> victim_rank;
    bool keep = false;
    std::string status;
  };
  /// A kept verdict: the answer (always stock) and what it depends on.
  struct Kept {
    std::uint64_t dependency = 0;
    std::string status;
  };
  using Key = std::pair<std::uint32_t, std::uint64_t>;  // job id, request fingerprint

  Config config;
  tp_log_fn log = nullptr;
  // Plans per (job, request), all for the state `cached_state`: a pass of the main scheduler
  // or of backfill asks about many pending jobs in turn, and each is solved once per state.
  std::map<Key, Plan> plans;
  std::uint64_t cached_state = 0;
  const Plan* current = nullptr;
  // Verdicts without victims per (job, request), across state changes: an impossible job is
  // planned again only when something on the nodes it may use changes.
  std::map<Key, Kept> kept;
  // Planning time spent per scheduling cycle (tp_engine_set_cycle), the most recent cycles
  // last; a handful are live at once (main scheduler, backfill, RPC threads).
  std::vector<std::pair<std::uint64_t, double>> cycle_spent_ms;
  std::uint64_t cycle = 0;
  // Why each job got stock behaviour, as last told: said once per job and reason.
  std::map<std::uint32_t, std::string> told;
  bool plan_log_failed = false;

  void say(int severity, const std::string& message) const {
    if (log != nullptr) log(severity, message.c_str());
  }

  void tell_stock(std::uint32_t job_id, const std::string& reason) {
    auto [it, inserted] = told.try_emplace(job_id, reason);
    if (!inserted && it->second == reason) return;
    it->second = reason;
    // Bounded: job ids only grow, and a forgotten job is at worst told once more.
    if (told.size() > 100000) told.erase(told.begin());
    say(1, "JobId=" + std::to_string(job_id) + ": " + reason + "; stock behaviour");
  }

  void append_plan_log(const std::string& line) {
    std::ofstream out(config.plan_log, std::ios::app);
    out << line;
    if (!out) {
      if (!plan_log_failed) say(2, "cannot append to plan_log " + config.plan_log);
      plan_log_failed = true;
    }
  }

  /// The planning time already spent in the current cycle (a new cycle starts at 0).
  double& spent_in_cycle() {
    for (auto& [token, spent] : cycle_spent_ms) {
      if (token == cycle) return spent;
    }
    if (cycle_spent_ms.size() >= 16) cycle_spent_ms.erase(cycle_spent_ms.begin());
    return cycle_spent_ms.emplace_back(cycle, 0.0).second;
  }

  template <class Solver, class Cost>
  tp_plan_kind_t solve_with(const Solver& solver, const Cost& cost, const Model& model,
                            const tp::Workload& preemptor_job, const tp_snapshot_t& snapshot,
                            const tp_request_t& request, const NodeShare& share,
                            std::uint64_t state_fingerprint, bool full_limit, Plan& out);
  template <class Cost>
  tp_plan_kind_t solve_cost(const Cost& cost, const Model& model, const tp::Workload& preemptor_job,
                            const tp_snapshot_t& snapshot, const tp_request_t& request,
                            const NodeShare& share, std::uint64_t state_fingerprint,
                            std::int64_t time_limit_ms, Plan& out);
  tp_plan_kind_t plan(const tp_snapshot_t& snapshot, const tp_request_t& request,
                      std::uint64_t state_fingerprint);
  int use_cached(const tp_request_t& request, int node_count, std::uint64_t state_fingerprint);
};

template <class Cost>
tp_plan_kind_t tp_engine::solve_cost(const Cost& cost, const Model& model,
                                     const tp::Workload& preemptor_job,
                                     const tp_snapshot_t& snapshot, const tp_request_t& request,
                                     const NodeShare& share, std::uint64_t state_fingerprint,
                                     std::int64_t time_limit_ms, Plan& out) {
  if (config.solver == "greedy") {
    return solve_with(tp::solvers::greedy, cost, model, preemptor_job, snapshot, request, share,
                      state_fingerprint, true, out);
  }
  if (config.solver == "knapsack") {
    return solve_with(tp::solvers::knapsack, cost, model, preemptor_job, snapshot, request, share,
                      state_fingerprint, true, out);
  }
  const auto exact = tp::solvers::branch_and_bound_solver{}
                         .node_limit(config.node_limit)
                         .time_limit(std::chrono::milliseconds(time_limit_ms));
  return solve_with(exact, cost, model, preemptor_job, snapshot, request, share, state_fingerprint,
                    time_limit_ms >= config.time_limit_ms, out);
}

template <class Solver, class Cost>
tp_plan_kind_t tp_engine::solve_with(const Solver& solver, const Cost& cost, const Model& model,
                                     const tp::Workload& preemptor_job,
                                     const tp_snapshot_t& snapshot, const tp_request_t& request,
                                     const NodeShare& share, std::uint64_t state_fingerprint,
                                     bool full_limit, Plan& out) {
  const tp::Allocation& state = *model.state;
  const tp::Topology& topology = *model.topology;
  const tp::PreemptionPlan plan = solver.solve(state, preemptor_job, cost);
  const tp::PlanVerdict verdict = tp::verify_plan(state, preemptor_job, plan, cost);

  // The victims in rank order: cheapest first, so a prefix would be the cheapest part.
  std::vector<const tp::Victim*> ordered;
  for (const tp::Victim& victim : plan.victims) ordered.push_back(&victim);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const tp::Victim* a, const tp::Victim* b) { return a->cost < b->cost; });
  std::map<std::uint32_t, int> ranks;
  for (std::size_t rank = 0; rank < ordered.size(); ++rank) {
    ranks[static_cast<std::uint32_t>(ordered[rank]->id.value)] = static_cast<int>(rank);
  }

  tp_plan_kind_t result = TP_PLAN_NONE;
  std::string why;
  // Kept until something on the eligible nodes changes. An `unknown` only when the search had
  // its full time limit: one cut short by the cycle's budget gets a full try in a later cycle.
  out.keep = plan.status == tp::PlanStatus::infeasible ||
             plan.status == tp::PlanStatus::no_preemption_needed ||
             (is_unknown(plan.status) && full_limit);
  out.status = tp::to_string(plan.status);
  if (plan.status == tp::PlanStatus::infeasible) {
    // The model is stricter than Slurm in places (identical shares on distinct nodes), so
    // "no victim set in the model" does not prove Slurm cannot start the job: stock decides.
    why = "no victim set lets the job start in the model; stock answers (cons_tres preempts "
          "only if the job then starts)";
  } else if (is_unknown(plan.status)) {
    why = std::string("nothing proven within the ") +
          (full_limit ? "solver's limits" : "cycle's planning budget") +
          "; stock answers, exactly as preempt/partition_prio (or preempt/qos) would";
  } else if (plan.status == tp::PlanStatus::no_preemption_needed) {
    why = "fits without preemption; stock answers";
  } else if (!verdict.ok) {
    why = "plan REJECTED by verify_plan (" + verdict.summary() + "); stock answers";
  } else {
    for (const tp::Victim* victim : ordered) {
      if (victim->action != tp::VictimAction::evict || victim->id.value >= slice_id_base) {
        why = "plan shrinks or splits a job, which Slurm cannot do; stock answers";
      }
    }
    if (why.empty()) {
      const std::string refusal = cons_tres_refusal(snapshot, request, share, ranks);
      if (refusal.empty()) {
        result = TP_PLAN_VICTIMS;
      } else {
        why = "cons_tres check failed: " + refusal + "; stock answers";
      }
    }
  }
  out.kind = result;
  out.victim_rank.clear();
  if (result == TP_PLAN_VICTIMS) out.victim_rank = std::move(ranks);

  std::string victims_text;
  std::string victims_json;
  for (const tp::Victim* victim : ordered) {
    victims_text += (victims_text.empty() ? "" : ",") + std::to_string(victim->id.value);
    victims_json += std::string(victims_json.empty() ? "" : ",") +
                    "{\"job_id\":" + std::to_string(victim->id.value) +
                    ",\"cost\":" + number(victim->cost) + "}";
  }
  std::string placement_json;
  for (const auto& replica : plan.placement.replicas) {
    tp::DomainId host;
    std::string gpus;
    for (const auto& entry : replica.entries) {
      host = topology.ancestor_at(entry.domain, topology.host_level());
      if (!topology.is_device(entry.domain)) continue;
      gpus += (gpus.empty() ? "" : ",") + std::to_string(model.gpu_index.at(entry.domain.value));
    }
    if (!host.valid()) continue;
    placement_json += std::string(placement_json.empty() ? "" : ",") +
                      "{\"node\":" + quoted(model.node_name.at(host.value)) + ",\"gpus\":[" + gpus +
                      "]}";
  }
  const std::string target =
      plan.target_domain.valid() ? topology.describe(plan.target_domain) : std::string("none");
  // A job that fits as it is (most of a queue) is told at debug level: at info it would be a
  // line per submitted job.
  int severity = 1;
  if (result == TP_PLAN_NONE && plan.has_victims_plan()) severity = 2;
  if (plan.status == tp::PlanStatus::no_preemption_needed) severity = 0;
  say(severity,
      "JobId=" + std::to_string(preemptor_job.id.value) + " " + plan.solver + "/" +
          std::string(Cost::name) + ": " + status_text(plan.status) + ", victims [" +
          victims_text + "], cost " + number(plan.cost) + ", target " + target +
          ", verify_plan: " + verdict.summary() + ", " + number(plan.statistics.seconds * 1000) +
          " ms; " + (why.empty() ? "imposing it" : why));

  if (!config.plan_log.empty()) {
    std::string violations;
    for (const auto& violation : verdict.violations) {
      violations += (violations.empty() ? "" : ",") + quoted(violation);
    }
    int excluded = 0;
    for (int n = 0; n < snapshot.node_count; ++n) excluded += eligible(request, n) ? 0 : 1;
    std::ostringstream line;
    line << "{\"preemptor\":" << preemptor_job.id.value << ",\"fingerprint\":" << state_fingerprint
         << ",\"status\":" << quoted(tp::to_string(plan.status))
         << ",\"imposed\":" << (result == TP_PLAN_VICTIMS ? "true" : "false")
         << ",\"why\":" << quoted(why)
         << ",\"exc_node_bitmap\":" << (request.exc_node_bitmap != 0 ? "true" : "false")
         << ",\"excluded_nodes\":" << excluded << ",\"solver\":" << quoted(plan.solver)
         << ",\"cost_model\":" << quoted(Cost::name) << ",\"cost\":" << number(plan.cost)
         << ",\"lower_bound\":" << number(plan.lower_bound) << ",\"victims\":[" << victims_json
         << "],\"target\":" << quoted(target) << ",\"placement\":[" << placement_json
         << "],\"verified\":" << (verdict.ok ? "true" : "false") << ",\"violations\":["
         << violations << "],\"running_jobs\":" << state.size()
         << ",\"seconds\":" << number(plan.statistics.seconds) << "}\n";
    append_plan_log(line.str());
  }
  return result;
}

int tp_engine::use_cached(const tp_request_t& request, int node_count,
                          std::uint64_t state_fingerprint) {
  current = nullptr;
  if (state_fingerprint != cached_state) return -1;
  const auto it = plans.find({request.job_id, request_fingerprint(request, node_count)});
  if (it == plans.end()) return -1;
  current = &it->second;
  return current->kind;
}

tp_plan_kind_t tp_engine::plan(const tp_snapshot_t& snapshot, const tp_request_t& request,
                               std::uint64_t state_fingerprint) {
  current = nullptr;
  if (state_fingerprint != cached_state) {
    plans.clear();  // every plan was for another state
    cached_state = state_fingerprint;
  }
  const Key key = std::make_pair(request.job_id, request_fingerprint(request, snapshot.node_count));
  plans.erase(key);
  Plan made;
  made.fingerprint = state_fingerprint;

  // A verdict without victims whose nodes did not change is still the answer: no model, no
  // search. This is what keeps an impossible job cheap at every state change elsewhere.
  const std::uint64_t dependency = eligible_state_digest(snapshot, request);
  if (const auto it = kept.find(key); it != kept.end()) {
    if (it->second.dependency == dependency) {
      say(0, "JobId=" + std::to_string(request.job_id) + ": " + it->second.status +
                 " kept (nothing on the nodes it may use changed); stock answers");
      made.status = it->second.status;
      current = &(plans[key] = std::move(made));
      return current->kind;
    }
    kept.erase(it);
  }

  // The cycle's planning budget: what is not planned in this cycle gets stock answers now and a
  // plan in a later cycle (not cached, so the next cycle asks again).
  double& spent = spent_in_cycle();
  const double left_ms = static_cast<double>(config.cycle_budget_ms) - spent;
  if (left_ms <= 0) {
    tell_stock(request.job_id,
               "not planned in this cycle: its planning budget (cycle_budget_ms = " +
                   std::to_string(config.cycle_budget_ms) + ") is spent");
    return TP_PLAN_NONE;
  }
  const std::int64_t time_limit_ms = std::min<std::int64_t>(
      config.time_limit_ms, std::max<std::int64_t>(1, static_cast<std::int64_t>(left_ms)));
  const auto started = std::chrono::steady_clock::now();
  try {
    const NodeShare share = node_share(snapshot, request);
    Model model = build_model(snapshot, request);
    for (int j = 0; j < snapshot.job_count; ++j) add_job(model, snapshot, snapshot.jobs[j]);
    const tp::Workload preemptor_job = preemptor_workload(model, request, share);
    if (config.cost_model == "victim_count") {
      solve_cost(tp::cost::victim_count{}, model, preemptor_job, snapshot, request, share,
                 state_fingerprint, time_limit_ms, made);
    } else if (config.cost_model == "lost_work") {
      solve_cost(tp::cost::lost_work{}, model, preemptor_job, snapshot, request, share,
                 state_fingerprint, time_limit_ms, made);
    } else {
      solve_cost(tp::cost::priority_weighted{.offset = config.priority_offset}, model,
                 preemptor_job, snapshot, request, share, state_fingerprint, time_limit_ms, made);
    }
  } catch (const unmappable& reason) {
    tell_stock(request.job_id, reason.what());
    made.kind = TP_PLAN_NONE;
    made.victim_rank.clear();
    made.keep = false;
  } catch (const std::exception& error) {
    // Cached like any answer: the same state would fail the same way in every pass.
    say(2, "JobId=" + std::to_string(request.job_id) + ": " + error.what() + "; stock behaviour");
    made.kind = TP_PLAN_NONE;
    made.victim_rank.clear();
    made.keep = false;
  }
  spent += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
               .count();
  if (made.keep) {
    // Bounded like `told`: job ids only grow, and a forgotten verdict is at worst planned again.
    if (kept.size() > 100000) kept.erase(kept.begin());
    kept[key] = Kept{dependency, made.status};
  }
  current = &(plans[key] = std::move(made));
  return current->kind;
}

extern "C" {

tp_engine_t* tp_engine_create(const char* config_path, tp_log_fn log) {
  try {
    auto engine = std::make_unique<tp_engine>();
    engine->log = log;
    engine->config = read_config(config_path);
    if (!engine->config.plan_log.empty()) {
      // Said at start: a plan log that cannot be written would otherwise fail unnoticed.
      std::ofstream probe(engine->config.plan_log, std::ios::app);
      if (!probe) {
        engine->plan_log_failed = true;
        engine->say(2, "plan_log " + engine->config.plan_log +
                           " cannot be opened for appending; plans are logged to slurmctld's "
                           "log only");
      }
    }
    // After the error above, this line must not name the path as if plans went there.
    const std::string plan_log =
        engine->config.plan_log.empty() ? ""
        : engine->plan_log_failed       ? ", no plan log (see the error above)"
                                        : ", plan log " + engine->config.plan_log;
    engine->say(1, "solver " + engine->config.solver + ", cost model " + engine->config.cost_model +
                       ", relation " + engine->config.relation + ", cycle budget " +
                       std::to_string(engine->config.cycle_budget_ms) + " ms" + plan_log);
    return engine.release();
  } catch (const std::exception& error) {
    if (log != nullptr) log(2, error.what());
  } catch (...) {
    if (log != nullptr) log(2, "unknown error while reading the configuration");
  }
  return nullptr;
}

void tp_engine_destroy(tp_engine_t* engine) { delete engine; }

tp_plan_kind_t tp_engine_plan(tp_engine_t* engine, const tp_snapshot_t* snapshot,
                              const tp_request_t* request, std::uint64_t fingerprint) {
  if (engine == nullptr || snapshot == nullptr || request == nullptr) return TP_PLAN_NONE;
  try {
    return engine->plan(*snapshot, *request, fingerprint);
  } catch (const std::exception& error) {
    engine->say(
        2, "JobId=" + std::to_string(request->job_id) + ": " + error.what() + "; stock behaviour");
  } catch (...) {
    engine->say(2, "JobId=" + std::to_string(request->job_id) + ": unknown error; stock behaviour");
  }
  engine->current = nullptr;
  return TP_PLAN_NONE;
}

int tp_engine_use_cached(tp_engine_t* engine, const tp_request_t* request, int node_count,
                         std::uint64_t fingerprint) {
  if (engine == nullptr || request == nullptr) return -1;
  try {
    return engine->use_cached(*request, node_count, fingerprint);
  } catch (...) {
    engine->current = nullptr;
    return -1;
  }
}

void tp_engine_set_cycle(tp_engine_t* engine, std::uint64_t cycle) {
  if (engine != nullptr) engine->cycle = cycle;
}

int tp_engine_relation_is_qos(const tp_engine_t* engine) {
  return engine != nullptr && engine->config.relation == "qos" ? 1 : 0;
}

int tp_engine_victim_rank(const tp_engine_t* engine, std::uint32_t job_id) {
  if (engine == nullptr || engine->current == nullptr) return -1;
  const auto it = engine->current->victim_rank.find(job_id);
  return it == engine->current->victim_rank.end() ? -1 : it->second;
}

void tp_engine_tell_stock(tp_engine_t* engine, std::uint32_t job_id, const char* reason) {
  if (engine == nullptr || reason == nullptr) return;
  try {
    engine->tell_stock(job_id, reason);
  } catch (...) {
    // Logging must never unwind into slurmctld; a lost message is the lesser harm.
  }
}

}  // extern "C"
