// SPDX-License-Identifier: MIT
// topopreempt-whatif: "what would have to be preempted so that this workload can start?"
// Loads a cluster snapshot (docs/snapshot-format.md), runs one solver or all of them, checks
// every plan with the independent verifier, and prints the plans as JSON and/or text.
//
// Exit codes: 0 a plan exists (or no preemption is needed); 1 infeasible (proven); 2 usage or
// snapshot error (the message names the JSON path); 3 a solver failed or a plan failed
// verification; 4 unknown (a limit stopped the search before a plan or a proof).

#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/io/snapshot.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace {

using namespace topopreempt;
using nlohmann::json;

constexpr int exit_ok = 0;
constexpr int exit_infeasible = 1;
constexpr int exit_usage = 2;
constexpr int exit_failure = 3;
constexpr int exit_unknown = 4;

constexpr std::string_view usage_text = R"(usage: topopreempt-whatif SNAPSHOT.json [options]

Loads a cluster snapshot, asks a solver which running workloads must be preempted so that the
snapshot's preemptor can start, verifies the plan independently and prints it.

options:
  --solver NAME       greedy | knapsack | branch_and_bound | kube_default | exhaustive_subsets |
                      all (every solver, summarised side by side).
                      Default: the snapshot's "solver", else branch_and_bound.
  --cost NAME         victim_count | priority_weighted | lost_work | reload_time |
                      kubernetes_order. Default: the snapshot's "cost_model", else
                      priority_weighted. Parameters come from the snapshot when it names the
                      same model, else the model's defaults.
  --format FORMAT     text (default) | json | both (the JSON document, then the text).
  --time-limit-ms N   wall-clock limit for solvers that support limits (branch_and_bound,
                      exhaustive_subsets); a limited plan is "feasible" with its gap, or
                      "unknown" when the limit came before any plan or proof (even a limit of
                      0 searches the most promising domain). It bounds the whole solve (scan
                      and search), not loading the snapshot. At most 1099511627776 (2^40 ms);
                      larger values are an error.
  --help              this text.

exit codes: 0 a plan exists or no preemption is needed; 1 infeasible (proven); 2 usage or
snapshot error (the message names the JSON path, e.g. $.workloads[3].placement[0][1].domain); 3 a
solver failed or a non-baseline plan failed verification; 4 unknown: a limit stopped the search
before a plan or a proof of infeasibility.
)";

struct Options {
  std::string snapshot;
  std::optional<std::string> solver;
  std::optional<std::string> cost;
  std::string format = "text";
  std::optional<std::int64_t> time_limit_ms;
};

/// A command-line mistake: reported with the usage hint, exit 2.
struct UsageError {
  std::string message;
};

template <std::size_t N>
bool is_one_of(std::string_view value, const std::array<std::string_view, N>& names) {
  for (std::string_view name : names) {
    if (name == value) return true;
  }
  return false;
}

Options parse_arguments(int argc, char** argv) {
  Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    std::optional<std::string> inline_value;
    if (argument.rfind("--", 0) == 0) {
      if (const auto equals = argument.find('='); equals != std::string::npos) {
        inline_value = argument.substr(equals + 1);
        argument.resize(equals);
      }
    }
    const auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw UsageError{argument + " needs a value"};
      return argv[++i];
    };
    if (argument == "--help" || argument == "-h") {
      throw UsageError{};  // empty message: print the usage only
    } else if (argument == "--solver") {
      options.solver = value();
      if (!is_one_of(*options.solver, io::solver_names)) {
        throw UsageError{"unknown solver '" + *options.solver + "'"};
      }
    } else if (argument == "--cost") {
      options.cost = value();
      if (!is_one_of(*options.cost, io::cost_model_names)) {
        throw UsageError{"unknown cost model '" + *options.cost + "'"};
      }
    } else if (argument == "--format") {
      options.format = value();
      if (options.format != "json" && options.format != "text" && options.format != "both") {
        throw UsageError{"unknown format '" + options.format + "' (json, text or both)"};
      }
    } else if (argument == "--time-limit-ms") {
      const std::string text = value();
      std::int64_t limit = -1;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), limit);
      if (error != std::errc() || end != text.data() + text.size() || limit < 0 ||
          limit > io::max_time_limit_ms) {
        throw UsageError{"--time-limit-ms needs an integer in [0, " +
                         std::to_string(io::max_time_limit_ms) + "] (about 34.8 years), got '" +
                         text + "'"};
      }
      options.time_limit_ms = limit;
    } else if (argument.rfind("--", 0) == 0 || (argument.size() > 1 && argument[0] == '-')) {
      throw UsageError{"unknown option '" + argument + "'"};
    } else {
      positional.push_back(argument);
    }
  }
  if (positional.size() != 1) throw UsageError{"expected exactly one SNAPSHOT.json"};
  options.snapshot = positional.front();
  return options;
}

/// Shortest text that reads back to the same double ("4294967319", "0.25").
std::string number(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}

/// `value` with `decimals` digits after the point ("66.67").
std::string fixed(double value, int decimals) {
  char buffer[64];
  const auto [end, error] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}

/// One solver's outcome.
struct Result {
  std::string solver;
  bool baseline = false;
  bool limits_applied = false;
  std::optional<PreemptionPlan> plan;
  PlanVerdict verdict;
  std::string failure;  ///< the solver threw
};

/// Applies the time / node limits a solver supports; its setters either mutate in place
/// (returning a reference) or return a modified copy.
template <class Solver>
Solver with_limits(Solver solver, const io::SolverSpec& spec, bool& applied) {
  if constexpr (supports_limits_v<Solver>) {
    if (spec.time_limit_ms) {
      const std::chrono::milliseconds limit(*spec.time_limit_ms);
      if constexpr (std::is_lvalue_reference_v<decltype(solver.time_limit(limit))>) {
        solver.time_limit(limit);
      } else {
        solver = solver.time_limit(limit);
      }
      applied = true;
    }
    if (spec.node_limit) {
      if constexpr (std::is_lvalue_reference_v<decltype(solver.node_limit(*spec.node_limit))>) {
        solver.node_limit(*spec.node_limit);
      } else {
        solver = solver.node_limit(*spec.node_limit);
      }
      applied = true;
    }
  }
  return solver;
}

/// What the verifier established. An infeasible plan has nothing to apply; what was checked is
/// the claim itself (no victims, no placement, and no placement even after evicting every
/// eligible victim), so it does not say "plan ok" as if there were a plan.
std::string verification_text(const PreemptionPlan& plan, const PlanVerdict& verdict) {
  if (plan.status == PlanStatus::infeasible) {
    return verdict.ok ? "infeasible confirmed (no placement even after evicting every eligible "
                        "victim); nothing to apply"
                      : verdict.summary();
  }
  if (plan.status == PlanStatus::unknown) {
    return verdict.ok ? "unknown: nothing claimed, nothing to apply" : verdict.summary();
  }
  return verdict.summary() +
         (verdict.topology_ok ? " (guaranteed topology holds)" : " (guaranteed topology BROKEN)");
}

template <class Solver, class Model>
Result run(const Solver& prototype, const io::Snapshot& snapshot, const io::SolverSpec& spec,
           const Model& model) {
  Result result;
  result.solver = std::string(Solver::name);
  result.baseline = is_baseline_v<Solver>;
  try {
    const Solver solver = with_limits(prototype, spec, result.limits_applied);
    result.plan = solver.solve(snapshot.state, snapshot.preemptor, model);
    // A topology-blind baseline may knowingly break the guarantee (and says so in the plan):
    // its topology is then measured, not required. Every other plan is judged strictly.
    VerifyOptions verify;
    verify.require_topology = !(result.baseline && !result.plan->topology_satisfied);
    result.verdict = verify_plan(snapshot.state, snapshot.preemptor, *result.plan, model, verify);
  } catch (const std::exception& error) {
    result.failure = error.what();
  }
  return result;
}

template <class Model>
std::vector<Result> run_all(const std::string& which, const io::Snapshot& snapshot,
                            const io::SolverSpec& spec, const Model& model) {
  std::vector<Result> results;
  const auto wanted = [&](std::string_view name) { return which == "all" || which == name; };
  if (wanted("greedy")) results.push_back(run(solvers::greedy, snapshot, spec, model));
  if (wanted("knapsack")) results.push_back(run(solvers::knapsack, snapshot, spec, model));
  if (wanted("branch_and_bound")) {
    results.push_back(run(solvers::branch_and_bound, snapshot, spec, model));
  }
  if (wanted("kube_default"))
    results.push_back(run(baselines::kube_default, snapshot, spec, model));
  if (wanted("exhaustive_subsets")) {
    results.push_back(run(baselines::exhaustive_subsets, snapshot, spec, model));
  }
  return results;
}

json result_json(const Result& result, const io::Snapshot& snapshot) {
  json item{{"solver", result.solver},
            {"baseline", result.baseline},
            {"limits_applied", result.limits_applied}};
  if (!result.failure.empty()) {
    item["error"] = result.failure;
    return item;
  }
  item["plan"] = io::to_json(*result.plan, snapshot.state);
  item["verification"] = {{"ok", result.verdict.ok},
                          {"topology_ok", result.verdict.topology_ok},
                          {"violations", result.verdict.violations}};
  return item;
}

std::string describe_demand(const Workload& workload, const Topology& topology) {
  std::string text = std::to_string(workload.replicas) + " replica(s) x ";
  if (workload.demand.whole_devices > 0) {
    text += std::to_string(workload.demand.whole_devices) + " " +
            topology.levels()[topology.device_level()] + "(s) + ";
  }
  text += topology.schema().format(workload.demand.resources);
  const auto scope = [&](std::string_view label, const TopologyRequirement& requirement) {
    if (requirement.mode == RequirementMode::none) return;
    text += std::string(", ") + std::string(label) + " " +
            (requirement.mode == RequirementMode::guaranteed ? "guaranteed" : "best-effort") +
            " in one " + requirement.level;
  };
  scope("each replica", workload.replica_scope);
  scope("gang", workload.gang_scope);
  return text;
}

void print_text(const Result& result, const io::Snapshot& snapshot, bool limits_requested,
                std::ostream& out) {
  const Topology& topology = *snapshot.topology;
  out << "solver: " << result.solver << (result.baseline ? " (baseline)" : "") << "\n";
  if (!result.failure.empty()) {
    out << "  FAILED: " << result.failure << "\n";
    return;
  }
  const PreemptionPlan& plan = *result.plan;
  out << "  status: " << to_string(plan.status) << "   cost: " << number(plan.cost)
      << "   lower bound: " << number(plan.lower_bound) << "   gap: " << fixed(plan.gap() * 100, 2)
      << "%\n";
  if (plan.target_domain.valid())
    out << "  target: " << topology.describe(plan.target_domain) << "\n";
  out << "  victims (" << plan.victims.size() << "):\n";
  for (const Victim& victim : plan.victims) {
    const bool known = snapshot.state.contains(victim.id);
    out << "    - " << (victim.action == VictimAction::evict ? "evict " : "shrink ")
        << (known ? snapshot.state.workload(victim.id).label()
                  : "workload " + std::to_string(victim.id.value));
    if (known) out << " (priority " << snapshot.state.workload(victim.id).priority << ")";
    if (victim.action == VictimAction::shrink) {
      out << " dropping " << victim.dropped_replicas.size() << " replica(s)";
    }
    out << ", cost " << number(victim.cost) << (victim.reason.empty() ? "" : ": " + victim.reason)
        << "\n";
  }
  if (!plan.placement.replicas.empty()) {
    out << "  placement: " << plan.placement.describe(topology) << "\n";
  }
  out << "  verification: " << verification_text(plan, result.verdict) << "\n";
  if (!plan.explanation.empty()) {
    out << "  explanation:\n";
    std::istringstream lines(plan.explanation);
    for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
  }
  if (limits_requested && !result.limits_applied) {
    out << "  (limits requested but not supported by " << result.solver << ": ignored)\n";
  }
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

void print_table(const std::vector<Result>& results, std::ostream& out) {
  const std::vector<std::pair<std::string, std::size_t>> columns{
      {"solver", 20}, {"status", 22},      {"victims", 9},   {"cost", 22},
      {"gap", 10},    {"topology ok", 13}, {"verified", 10}, {"time ms", 10}};
  for (const auto& [title, width] : columns) out << pad(title, width);
  out << "\n";
  for (const Result& result : results) {
    if (!result.failure.empty()) {
      out << pad(result.solver, 20) << "FAILED: " << result.failure << "\n";
      continue;
    }
    const PreemptionPlan& plan = *result.plan;
    const std::vector<std::string> cells{result.solver + (result.baseline ? "*" : ""),
                                         std::string(to_string(plan.status)),
                                         std::to_string(plan.victims.size()),
                                         number(plan.cost),
                                         fixed(plan.gap() * 100, 2) + "%",
                                         result.verdict.topology_ok ? "yes" : "NO",
                                         result.verdict.ok ? "yes" : "NO",
                                         fixed(plan.statistics.seconds * 1e3, 3)};
    for (std::size_t c = 0; c < cells.size(); ++c) out << pad(cells[c], columns[c].second);
    out << "\n";
  }
  out << "(* baseline; a plan that admits breaking the guarantee is verified with the "
         "preemptor's scopes relaxed)\n";
  for (const Result& result : results) {
    if (result.failure.empty() && !result.verdict.ok) {
      out << result.solver << ": " << result.verdict.summary() << "\n";
    }
  }
}

int exit_code(const std::vector<Result>& results) {
  bool any_aware = false;
  bool feasible = false;
  for (const Result& result : results) {
    if (!result.failure.empty()) return exit_failure;
    if (!result.baseline && !result.verdict.ok) return exit_failure;
    any_aware = any_aware || !result.baseline;
  }
  // Infeasibility follows the topology-aware solvers; a blind baseline "succeeding" on a
  // placement that breaks the guarantee does not make the request satisfiable.
  bool unknown = false;
  for (const Result& result : results) {
    if (any_aware && result.baseline) continue;
    const PlanStatus status = result.plan->status;
    feasible = feasible || (status != PlanStatus::infeasible && status != PlanStatus::unknown);
    unknown = unknown || status == PlanStatus::unknown;
  }
  // Infeasible only when every solver that counts proved it.
  if (feasible) return exit_ok;
  return unknown ? exit_unknown : exit_infeasible;
}

int run_tool(const Options& options) {
  std::optional<io::Snapshot> loaded;
  try {
    loaded.emplace(io::load_snapshot_file(options.snapshot));
  } catch (const io::SnapshotError& error) {
    std::cerr << "topopreempt-whatif: " << options.snapshot << ": " << error.what() << "\n";
    return exit_usage;
  }
  const io::Snapshot& snapshot = *loaded;
  io::SolverSpec spec = snapshot.solver.value_or(io::SolverSpec{});
  if (options.solver) spec.name = *options.solver;
  if (options.time_limit_ms) spec.time_limit_ms = options.time_limit_ms;
  io::CostModelSpec cost =
      snapshot.cost_model.value_or(io::CostModelSpec{cost::priority_weighted{}});
  if (options.cost && *options.cost != io::cost_model_name(cost))
    cost = *io::make_cost_model(*options.cost);

  // A cost model that cannot price this snapshot's victims (their prices sum past the largest
  // double) is an input error, exit 2, not a solver failure: say where the model came from.
  try {
    io::visit_cost_model(cost, snapshot.state, [&](const auto& model) {
      check_price_sum(snapshot.state, snapshot.preemptor, model);
    });
  } catch (const std::invalid_argument& error) {
    std::cerr << "topopreempt-whatif: " << options.snapshot << ": "
              << (options.cost ? "--cost" : "$.cost_model") << ": " << error.what() << "\n";
    return exit_usage;
  }

  const std::vector<Result> results = io::visit_cost_model(
      cost, snapshot.state,
      [&](const auto& model) { return run_all(spec.name, snapshot, spec, model); });

  if (options.format == "json" || options.format == "both") {
    json document{{"snapshot", options.snapshot},
                  {"cost_model", io::to_json(cost)},
                  {"preemptor", io::to_json(snapshot.preemptor, *snapshot.topology)},
                  {"results", json::array()}};
    for (const Result& result : results)
      document["results"].push_back(result_json(result, snapshot));
    std::cout << document.dump(2) << "\n";
  }
  if (options.format == "text" || options.format == "both") {
    if (options.format == "both") std::cout << "\n";
    std::cout << "snapshot: " << options.snapshot << " (" << snapshot.state.size()
              << " running workloads, " << snapshot.topology->size() << " domains)\n";
    if (!snapshot.description.empty()) std::cout << "  " << snapshot.description << "\n";
    std::cout << "preemptor: " << snapshot.preemptor.label() << ", priority "
              << snapshot.preemptor.priority << ": "
              << describe_demand(snapshot.preemptor, *snapshot.topology) << "\n"
              << "cost model: " << io::cost_model_name(cost) << "\n\n";
    if (spec.name == "all") {
      print_table(results, std::cout);
    } else {
      const bool limits_requested = spec.time_limit_ms.has_value() || spec.node_limit.has_value();
      for (const Result& result : results) {
        print_text(result, snapshot, limits_requested, std::cout);
      }
    }
  }
  return exit_code(results);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_arguments(argc, argv);
  } catch (const UsageError& error) {
    if (error.message.empty()) {
      std::cout << usage_text;
      return exit_ok;
    }
    std::cerr << "topopreempt-whatif: " << error.message << "\n" << usage_text;
    return exit_usage;
  }
  try {
    return run_tool(options);
  } catch (const std::exception& error) {
    std::cerr << "topopreempt-whatif: " << error.what() << "\n";
    return exit_failure;
  }
}
