// SPDX-License-Identifier: MIT
// The planner behind preempt/topopreempt: builds a topopreempt `Topology` and `Allocation` from
// the plain-data snapshot the C side read out of slurmctld, solves, verifies the plan with the
// library's independent verifier, logs it, and remembers it until the state changes.
// Every entry point catches everything: an exception must never unwind into slurmctld.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/solvers/cost_model.hpp"
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
  std::uint64_t node_limit = 200000;             // branch_and_bound only
  std::string plan_log;                          // JSON lines, one per plan; empty: none
};

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
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
        config.priority_offset = std::stod(value);
        if (!(config.priority_offset >= 0)) throw std::invalid_argument("must be >= 0");
      } else if (key == "time_limit_ms") {
        config.time_limit_ms = std::stoll(value);
        if (config.time_limit_ms <= 0) throw std::invalid_argument("must be > 0");
      } else if (key == "node_limit") {
        config.node_limit = std::stoull(value);
        if (config.node_limit == 0) throw std::invalid_argument("must be > 0");
      } else if (key == "plan_log") {
        config.plan_log = value;
      } else {
        throw std::invalid_argument("unknown key");
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

Model build_model(const tp_snapshot_t& snapshot) {
  Model model;
  int top_level = -1;
  for (int s = 0; s < snapshot.switch_count; ++s) {
    top_level = std::max(top_level, snapshot.switches[s].level);
  }
  std::vector<std::string> levels = {"cluster"};
  for (int level = top_level; level >= 0; --level) levels.push_back(switch_level_name(level));
  for (const auto& level : base_levels()) levels.push_back(level);
  // `node_slot` (1 per node, demanded by the preemptor only) keeps two replicas of a Slurm job
  // off one node: `-N2` means two distinct nodes, and topopreempt has no anti-affinity of its
  // own (a gang's replicas may share a host). Running jobs hold none, so nodes stay shared.
  tp::ResourceSchema schema({{"gpu", tp::ResourceKind::device},
                             {"core", tp::ResourceKind::pooled},
                             {"node_slot", tp::ResourceKind::pooled}});
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
    const auto host = builder.add(parent, "node", node.name, schema.make({{"node_slot", 1}}));
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
              core_count(holdings[h]) == core_count(holdings[0]);
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
    w.demand.resources = model.topology->schema().make({{"core", core_count(shape)}});
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

tp::Workload preemptor_workload(const Model& model, const tp_request_t& request) {
  tp::Workload w;
  w.id = tp::WorkloadId{request.job_id};
  w.name = request.name != nullptr ? request.name : "";
  w.priority = request.priority;
  w.replicas = request.nodes;
  w.demand.whole_devices = request.gpus_per_node;
  w.demand.resources =
      model.topology->schema().make({{"core", request.cores_per_node}, {"node_slot", 1}});
  // A Slurm node's share never spans nodes: -N1 is the node scope.
  w.replica_scope = tp::TopologyRequirement::guaranteed(
      request.replica_scope == TP_SCOPE_SOCKET ? "socket" : "node");
  if (request.one_switch != 0) {
    if (!model.has_switches) {
      throw std::invalid_argument("--switches=1 without topology/tree switches");
    }
    w.gang_scope = tp::TopologyRequirement::guaranteed("switch");
  }
  return w;
}

}  // namespace

struct tp_engine {
  Config config;
  tp_log_fn log = nullptr;
  // The current plan: for which preemptor and state, and its victims in rank order.
  bool has_plan = false;
  std::uint32_t preemptor = 0;
  std::uint64_t fingerprint = 0;
  tp_plan_kind_t kind = TP_PLAN_NONE;
  std::map<std::uint32_t, int> victim_rank;

  void say(int severity, const std::string& message) const {
    if (log != nullptr) log(severity, message.c_str());
  }

  template <class Solver, class Cost>
  tp_plan_kind_t solve_with(const Solver& solver, const Cost& cost, const Model& model,
                            const tp::Workload& preemptor_job, std::uint64_t state_fingerprint);
  template <class Cost>
  tp_plan_kind_t solve_cost(const Cost& cost, const Model& model, const tp::Workload& preemptor_job,
                            std::uint64_t state_fingerprint);
  tp_plan_kind_t plan(const tp_snapshot_t& snapshot, const tp_request_t& request,
                      std::uint64_t state_fingerprint);
};

template <class Cost>
tp_plan_kind_t tp_engine::solve_cost(const Cost& cost, const Model& model,
                                     const tp::Workload& preemptor_job,
                                     std::uint64_t state_fingerprint) {
  if (config.solver == "greedy") {
    return solve_with(tp::solvers::greedy, cost, model, preemptor_job, state_fingerprint);
  }
  if (config.solver == "knapsack") {
    return solve_with(tp::solvers::knapsack, cost, model, preemptor_job, state_fingerprint);
  }
  const auto exact = tp::solvers::branch_and_bound_solver{}
                         .node_limit(config.node_limit)
                         .time_limit(std::chrono::milliseconds(config.time_limit_ms));
  return solve_with(exact, cost, model, preemptor_job, state_fingerprint);
}

template <class Solver, class Cost>
tp_plan_kind_t tp_engine::solve_with(const Solver& solver, const Cost& cost, const Model& model,
                                     const tp::Workload& preemptor_job,
                                     std::uint64_t state_fingerprint) {
  const tp::Allocation& state = *model.state;
  const tp::Topology& topology = *model.topology;
  const tp::PreemptionPlan plan = solver.solve(state, preemptor_job, cost);
  const tp::PlanVerdict verdict = tp::verify_plan(state, preemptor_job, plan, cost);

  // The victims in rank order: cheapest first, so a prefix would be the cheapest part.
  std::vector<const tp::Victim*> ordered;
  for (const tp::Victim& victim : plan.victims) ordered.push_back(&victim);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const tp::Victim* a, const tp::Victim* b) { return a->cost < b->cost; });

  tp_plan_kind_t result = TP_PLAN_NONE;
  std::string why;
  if (plan.status == tp::PlanStatus::infeasible) {
    result = TP_PLAN_NOTHING;
    why = "infeasible: no victim set lets it start inside its requirement; preempting nothing";
  } else if (plan.status == tp::PlanStatus::no_preemption_needed) {
    why = "fits without preemption; stock answers";
  } else if (!verdict.ok) {
    why = "plan REJECTED by verify_plan (" + verdict.summary() + "); stock answers";
  } else {
    result = TP_PLAN_VICTIMS;
    for (const tp::Victim* victim : ordered) {
      if (victim->action != tp::VictimAction::evict || victim->id.value >= slice_id_base) {
        result = TP_PLAN_NONE;
        why = "plan shrinks or splits a job, which Slurm cannot do; stock answers";
      }
    }
  }
  victim_rank.clear();
  if (result == TP_PLAN_VICTIMS) {
    for (std::size_t rank = 0; rank < ordered.size(); ++rank) {
      victim_rank[static_cast<std::uint32_t>(ordered[rank]->id.value)] = static_cast<int>(rank);
    }
  }

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
  say(result == TP_PLAN_NONE && plan.has_victims_plan() ? 2 : 1,
      "JobId=" + std::to_string(preemptor_job.id.value) + " " + plan.solver + "/" +
          std::string(Cost::name) + ": " + std::string(tp::to_string(plan.status)) + ", victims [" +
          victims_text + "], cost " + number(plan.cost) + ", target " + target +
          ", verify_plan: " + verdict.summary() + ", " + number(plan.statistics.seconds * 1000) +
          " ms; " + (why.empty() ? "imposing it" : why));

  if (!config.plan_log.empty()) {
    std::string violations;
    for (const auto& violation : verdict.violations) {
      violations += (violations.empty() ? "" : ",") + quoted(violation);
    }
    std::ofstream out(config.plan_log, std::ios::app);
    out << "{\"preemptor\":" << preemptor_job.id.value << ",\"fingerprint\":" << state_fingerprint
        << ",\"status\":" << quoted(tp::to_string(plan.status))
        << ",\"imposed\":" << (result == TP_PLAN_VICTIMS ? "true" : "false")
        << ",\"solver\":" << quoted(plan.solver) << ",\"cost_model\":" << quoted(Cost::name)
        << ",\"cost\":" << number(plan.cost) << ",\"lower_bound\":" << number(plan.lower_bound)
        << ",\"victims\":[" << victims_json << "],\"target\":" << quoted(target)
        << ",\"placement\":[" << placement_json
        << "],\"verified\":" << (verdict.ok ? "true" : "false") << ",\"violations\":[" << violations
        << "],\"running_jobs\":" << state.size()
        << ",\"seconds\":" << number(plan.statistics.seconds) << "}\n";
  }
  return result;
}

tp_plan_kind_t tp_engine::plan(const tp_snapshot_t& snapshot, const tp_request_t& request,
                               std::uint64_t state_fingerprint) {
  if (has_plan && preemptor == request.job_id && fingerprint == state_fingerprint) return kind;
  has_plan = false;
  victim_rank.clear();
  Model model = build_model(snapshot);
  for (int j = 0; j < snapshot.job_count; ++j) add_job(model, snapshot, snapshot.jobs[j]);
  const tp::Workload preemptor_job = preemptor_workload(model, request);
  tp_plan_kind_t result = TP_PLAN_NONE;
  if (config.cost_model == "victim_count") {
    result = solve_cost(tp::cost::victim_count{}, model, preemptor_job, state_fingerprint);
  } else if (config.cost_model == "lost_work") {
    result = solve_cost(tp::cost::lost_work{}, model, preemptor_job, state_fingerprint);
  } else {
    result = solve_cost(tp::cost::priority_weighted{.offset = config.priority_offset}, model,
                        preemptor_job, state_fingerprint);
  }
  has_plan = true;
  preemptor = request.job_id;
  fingerprint = state_fingerprint;
  kind = result;
  return result;
}

extern "C" {

tp_engine_t* tp_engine_create(const char* config_path, tp_log_fn log) {
  try {
    auto engine = std::make_unique<tp_engine>();
    engine->log = log;
    engine->config = read_config(config_path);
    engine->say(
        1, "solver " + engine->config.solver + ", cost model " + engine->config.cost_model +
               (engine->config.plan_log.empty() ? "" : ", plan log " + engine->config.plan_log));
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
  engine->has_plan = false;
  engine->victim_rank.clear();
  return TP_PLAN_NONE;
}

int tp_engine_victim_rank(const tp_engine_t* engine, std::uint32_t job_id) {
  if (engine == nullptr) return -1;
  const auto it = engine->victim_rank.find(job_id);
  return it == engine->victim_rank.end() ? -1 : it->second;
}

}  // extern "C"
