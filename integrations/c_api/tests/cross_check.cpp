// SPDX-License-Identifier: MIT
// The C interface answers exactly what the library answers: on random states mirrored into a
// tp_cluster event by event, every solver's plan through the C interface (incremental decider,
// verification, read-out) has the status, cost, bound, victims, target and placement of a cold
// `solver.solve` on the C++ state; and several preemptors planned together through the C
// interface's queue get exactly the library's `plan_queue` outcomes, round after round, with
// nominations carried between rounds.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topopreempt/topopreempt.hpp"
#include "topopreempt_c.h"

namespace tp = topopreempt;

namespace {

struct ClusterDeleter {
  void operator()(tp_cluster* cluster) const { tp_cluster_destroy(cluster); }
};
struct PlanDeleter {
  void operator()(tp_plan* plan) const { tp_plan_destroy(plan); }
};

const char* const scope_levels[] = {"numa", "pcie_switch", "socket", "node"};

/// A random workload the state can hold right now (1, 2 or 4 GPUs, some CPU).
tp::Workload random_workload(std::mt19937_64& random, std::uint64_t id,
                             const tp::Topology& topology) {
  tp::Workload w;
  w.id = tp::WorkloadId{id};
  w.priority = static_cast<std::int32_t>(random() % 5);
  w.demand.whole_devices = 1 << (random() % 3);
  w.demand.resources =
      topology.schema().make({{"cpu_milli", 1000 * static_cast<tp::Amount>(random() % 3)}});
  if (random() % 3 != 0)
    w.replica_scope = tp::TopologyRequirement::guaranteed(scope_levels[random() % 4]);
  w.cost.seconds_since_checkpoint = static_cast<double>(random() % 3600);
  w.cost.model_size_gib = static_cast<double>(random() % 80);
  return w;
}

/// `w` as the C interface's struct; `demand` keeps the amounts it points to.
tp_workload to_c(const tp::Workload& w, const tp::Topology& topology,
                 std::vector<tp_amount>& demand) {
  tp_workload c;
  tp_workload_init(&c);
  c.id = w.id.value;
  c.priority = w.priority;
  c.replicas = w.replicas;
  c.whole_devices = w.demand.whole_devices;
  demand.clear();
  for (std::size_t dim = 0; dim < topology.schema().size(); ++dim) {
    const tp::Amount amount =
        w.demand.resources.size() == 0 ? 0 : w.demand.resources(static_cast<Eigen::Index>(dim));
    if (amount != 0) demand.push_back({topology.schema()[dim].name.c_str(), amount});
  }
  c.demand = demand.data();
  c.demand_count = demand.size();
  if (w.replica_scope.mode == tp::RequirementMode::guaranteed) {
    c.replica_scope.mode = TP_SCOPE_GUARANTEED;
    c.replica_scope.level = w.replica_scope.level.c_str();
  }
  c.seconds_since_checkpoint = w.cost.seconds_since_checkpoint;
  c.model_size_gib = w.cost.model_size_gib;
  return c;
}

/// Starts `w` at `placement` in the C cluster, entries addressed by path from the root.
void mirror_start(tp_cluster* cluster, const tp::Workload& w, const tp::Placement& placement,
                  const tp::Topology& topology) {
  std::vector<tp_amount> demand;
  const tp_workload c = to_c(w, topology, demand);
  std::vector<std::string> paths;
  std::vector<std::vector<tp_amount>> amounts;
  for (const auto& replica : placement.replicas) {
    for (const auto& entry : replica.entries) {
      paths.push_back(topology.path(entry.domain));
      auto& list = amounts.emplace_back();
      for (std::size_t dim = 0; dim < topology.schema().size(); ++dim) {
        const tp::Amount amount = entry.amount(static_cast<Eigen::Index>(dim));
        if (amount != 0) list.push_back({topology.schema()[dim].name.c_str(), amount});
      }
    }
  }
  std::vector<tp_placement_entry> entries;
  std::size_t e = 0;
  for (std::size_t r = 0; r < placement.replicas.size(); ++r) {
    for (std::size_t i = 0; i < placement.replicas[r].entries.size(); ++i, ++e) {
      entries.push_back({static_cast<std::uint32_t>(r), nullptr, paths[e].c_str(),
                         amounts[e].data(), amounts[e].size()});
    }
  }
  REQUIRE_MESSAGE(tp_cluster_workload_start(cluster, &c, entries.data(), entries.size()) == TP_OK,
                  tp_cluster_last_error(cluster));
}

/// Compares the C interface's plan with the library's cold plan.
void check_same(const tp_plan* c_plan, const tp::PreemptionPlan& expected,
                const tp::Topology& topology) {
  tp_plan_info info;
  tp_plan_info_init(&info);
  REQUIRE(tp_plan_get_info(c_plan, &info) == TP_OK);
  CHECK(std::string(tp::to_string(expected.status)) ==
        std::string(tp::to_string(static_cast<tp::PlanStatus>(info.status))));
  CHECK(info.cost == expected.cost);
  CHECK(info.lower_bound == expected.lower_bound);
  CHECK(std::string(info.solver) == expected.solver);
  CHECK(std::string(info.explanation) == expected.explanation);
  CHECK(std::string(info.target) ==
        (expected.target_domain.valid() ? topology.path(expected.target_domain) : ""));
  const tp_victim* victims = nullptr;
  std::size_t count = 0;
  REQUIRE(tp_plan_get_victims(c_plan, &victims, &count) == TP_OK);
  REQUIRE(count == expected.victims.size());
  for (std::size_t v = 0; v < count; ++v) {
    CHECK(victims[v].id == expected.victims[v].id.value);
    CHECK((victims[v].action == TP_VICTIM_SHRINK) ==
          (expected.victims[v].action == tp::VictimAction::shrink));
    CHECK(victims[v].cost == expected.victims[v].cost);
  }
  const tp_plan_entry* entries = nullptr;
  REQUIRE(tp_plan_get_placement(c_plan, &entries, &count) == TP_OK);
  std::size_t e = 0;
  for (std::size_t r = 0; r < expected.placement.replicas.size(); ++r) {
    for (const auto& entry : expected.placement.replicas[r].entries) {
      REQUIRE(e < count);
      CHECK(entries[e].replica == r);
      CHECK(std::string(entries[e].path) == topology.path(entry.domain));
      ++e;
    }
  }
  CHECK(e == count);
}

template <class Solver, class Model>
void compare(tp_cluster* cluster, const Solver& solver, tp_solver c_solver, const Model& model,
             const tp_cost_term& term, const tp::Allocation& state, const tp::Workload& preemptor) {
  const tp::PreemptionPlan expected = solver.solve(state, preemptor, model);
  tp_plan_options options;
  tp_plan_options_init(&options);
  options.solver = c_solver;
  options.cost[0] = term;
  std::vector<tp_amount> demand;
  const tp_workload c = to_c(preemptor, state.topology(), demand);
  tp_plan* raw = nullptr;
  REQUIRE_MESSAGE(tp_cluster_plan(cluster, &c, &options, &raw) == TP_OK,
                  tp_cluster_last_error(cluster));
  const std::unique_ptr<tp_plan, PlanDeleter> plan(raw);
  INFO("solver " << expected.solver << ", cost " << Model::name << ", preemptor "
                 << preemptor.demand.whole_devices << " GPUs at " << preemptor.replica_scope.level);
  check_same(plan.get(), expected, state.topology());
}

struct QueueDeleter {
  void operator()(tp_queue* queue) const { tp_queue_destroy(queue); }
};

/// The library's name of a tp_nomination_status.
std::string_view status_name(std::int32_t status) {
  switch (status) {
    case TP_NOMINATION_KEPT:
      return "kept";
    case TP_NOMINATION_RESUMED:
      return "resumed";
    case TP_NOMINATION_PLANNED:
      return "planned";
    case TP_NOMINATION_REPLANNED:
      return "replanned";
    case TP_NOMINATION_INFEASIBLE:
      return "infeasible";
    case TP_NOMINATION_REJECTED:
      return "rejected";
    case TP_NOMINATION_UNKNOWN:
      return "unknown";
    default:
      return "not a tp_nomination_status";
  }
}

/// `plan_queue` on the C++ side and `tp_cluster_plan_queue` on the C side agree, outcome by
/// outcome; `nominations` and `queue` carry their nominations to the next round.
template <class Solver, class Model>
void compare_queue(tp_cluster* cluster, tp_queue* queue, const Solver& solver, tp_solver c_solver,
                   const Model& model, const tp_cost_term& term, const tp::Allocation& state,
                   const std::vector<tp::Workload>& pending, tp::Nominations& nominations) {
  const tp::QueueResult expected = tp::plan_queue(state, std::span(pending), solver, model,
                                                  nominations);
  tp_plan_options options;
  tp_plan_options_init(&options);
  options.solver = c_solver;
  options.cost[0] = term;
  std::vector<std::vector<tp_amount>> demands(pending.size());
  std::vector<tp_workload> c_pending;
  for (std::size_t i = 0; i < pending.size(); ++i)
    c_pending.push_back(to_c(pending[i], state.topology(), demands[i]));
  std::vector<const tp_workload*> pointers;
  for (const tp_workload& w : c_pending) pointers.push_back(&w);
  REQUIRE_MESSAGE(tp_cluster_plan_queue(cluster, queue, pointers.data(), pointers.size(),
                                        &options) == TP_OK,
                  tp_cluster_last_error(cluster));
  const tp_queued_plan* plans = nullptr;
  std::size_t count = 0;
  REQUIRE(tp_queue_get_plans(queue, &plans, &count) == TP_OK);
  REQUIRE(count == expected.plans.size());
  CHECK(tp_queue_nomination_count(queue) == nominations.size());
  for (std::size_t i = 0; i < count; ++i) {
    const tp::QueuedPlan& item = expected.plans[i];
    INFO("solver " << item.plan.solver << ", cost " << Model::name << ", outcome " << i << " for "
                   << item.preemptor.value << ": " << tp::to_string(item.status));
    CHECK(plans[i].preemptor == item.preemptor.value);
    CHECK(status_name(plans[i].status) == tp::to_string(item.status));
    CHECK(std::string(plans[i].error) == item.error);
    REQUIRE(plans[i].moved_count == item.moved.size());
    for (std::size_t m = 0; m < item.moved.size(); ++m)
      CHECK(std::string(plans[i].moved[m]) == state.topology().path(item.moved[m]));
    check_same(plans[i].plan, item.plan, state.topology());
  }
}

tp_cost_term term_of(tp_cost_model model) {
  tp_cost_term term;
  tp_cost_term_init(&term, model);
  return term;
}

/// Whether `fill_both` finishes a random workload now and then (one draw after each start).
enum class Finishes : bool { none, some };

/// Starts random workloads on `state` and, alike, on `cluster` (`attempts` draws; those that do
/// not fit are skipped), so that both hold the same running workloads.
void fill_both(std::mt19937_64& random, tp::Allocation& state, tp_cluster* cluster, int attempts,
               Finishes finishes) {
  const tp::Topology& topology = state.topology();
  std::uint64_t id = 1;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const tp::Workload w = random_workload(random, id, topology);
    const tp::PlacementSearchResult found = tp::find_placement(state, w);
    if (!found.found) continue;
    state.add(w, found.placement);
    mirror_start(cluster, w, found.placement, topology);
    ++id;
    if (finishes == Finishes::some && random() % 10 == 0) {
      const auto ids = state.workload_ids();
      const tp::WorkloadId gone = ids[random() % ids.size()];
      state.remove(gone);
      REQUIRE(tp_cluster_workload_finish(cluster, gone.value) == TP_OK);
    }
  }
  REQUIRE(state.size() > 10);
}

}  // namespace

TEST_CASE("the C interface plans what the library plans, on random states") {
  std::uint64_t reused_reads = 0;  // some seeds' questions fit unread: counted over all
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 random(seed);
    auto topology = std::make_shared<const tp::Topology>(
        tp::shapes::cluster(tp::shapes::dense_8gpu_server(), 6, 3));
    tp::Allocation state(topology);
    const std::unique_ptr<tp_cluster, ClusterDeleter> cluster(tp_cluster_create());
    REQUIRE(tp_cluster_define_shape(cluster.get(), "dense_8gpu_server", 6, 3) == TP_OK);
    REQUIRE(tp_cluster_seal(cluster.get()) == TP_OK);

    // Fill to ~90% with random workloads, finishing a few on the way (both sides alike).
    fill_both(random, state, cluster.get(), 200, Finishes::some);

    for (int question = 0; question < 3; ++question) {
      tp::Workload preemptor;
      preemptor.id = tp::WorkloadId{1000 + static_cast<std::uint64_t>(question)};
      preemptor.priority = 3 + question;
      preemptor.demand.whole_devices = 1 << (random() % 4);
      preemptor.replica_scope = tp::TopologyRequirement::guaranteed(scope_levels[random() % 4]);
      const auto bnb = tp::solvers::branch_and_bound;
      compare(cluster.get(), bnb, TP_SOLVER_BRANCH_AND_BOUND, tp::cost::priority_weighted{},
              term_of(TP_COST_PRIORITY_WEIGHTED), state, preemptor);
      compare(cluster.get(), bnb, TP_SOLVER_BRANCH_AND_BOUND, tp::cost::lost_work{},
              term_of(TP_COST_LOST_WORK), state, preemptor);
      compare(cluster.get(), tp::solvers::knapsack, TP_SOLVER_KNAPSACK, tp::cost::victim_count{},
              term_of(TP_COST_VICTIM_COUNT), state, preemptor);
      compare(cluster.get(), tp::solvers::greedy, TP_SOLVER_GREEDY,
              tp::cost::kubernetes_order::of(state), term_of(TP_COST_KUBERNETES_ORDER), state,
              preemptor);
      compare(cluster.get(), tp::solvers::greedy, TP_SOLVER_GREEDY, tp::cost::reload_time{},
              term_of(TP_COST_RELOAD_TIME), state, preemptor);
      // Asked again after a change: the decider reuses reads and still agrees.
      const auto ids = state.workload_ids();
      const tp::WorkloadId gone = ids[random() % ids.size()];
      state.remove(gone);
      REQUIRE(tp_cluster_workload_finish(cluster.get(), gone.value) == TP_OK);
      compare(cluster.get(), bnb, TP_SOLVER_BRANCH_AND_BOUND, tp::cost::priority_weighted{},
              term_of(TP_COST_PRIORITY_WEIGHTED), state, preemptor);
    }
    tp_cluster_info info;
    tp_cluster_info_init(&info);
    REQUIRE(tp_cluster_get_info(cluster.get(), &info) == TP_OK);
    CHECK(info.workloads == state.size());
    reused_reads += info.reused_reads;
  }
  CHECK(reused_reads > 0);
}

TEST_CASE("the C interface's queue plans what the library's plan_queue plans, round after round") {
  std::size_t kept = 0;             // that nominations were carried: counted over all seeds
  std::size_t resumed = 0;          // that a nomination outlived one of its victims' eviction
  std::size_t planned_apart = 0;    // preemptors whose queued plan differs from their plan alone
  for (std::uint64_t seed = 11; seed <= 14; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 random(seed);
    auto topology = std::make_shared<const tp::Topology>(
        tp::shapes::cluster(tp::shapes::dense_8gpu_server(), 4, 2));
    tp::Allocation state(topology);
    const std::unique_ptr<tp_cluster, ClusterDeleter> cluster(tp_cluster_create());
    REQUIRE(tp_cluster_define_shape(cluster.get(), "dense_8gpu_server", 4, 2) == TP_OK);
    REQUIRE(tp_cluster_seal(cluster.get()) == TP_OK);
    fill_both(random, state, cluster.get(), 150, Finishes::none);

    // Five preemptors of mixed sizes and priorities (two share a priority: ties go by id).
    std::vector<tp::Workload> pending;
    for (std::uint64_t k = 0; k < 5; ++k) {
      tp::Workload preemptor;
      preemptor.id = tp::WorkloadId{2000 + (k * 7) % 5};
      preemptor.priority = 5 + static_cast<std::int32_t>(k % 4);
      preemptor.demand.whole_devices = 1 << (random() % 3);
      preemptor.replica_scope = tp::TopologyRequirement::guaranteed(scope_levels[random() % 4]);
      pending.push_back(preemptor);
    }

    // One queue per solver and cost, each carried over three rounds with changes between them:
    // a victim of some nomination finishes (its eviction done), an unrelated workload finishes.
    struct Lane {
      std::unique_ptr<tp_queue, QueueDeleter> queue{tp_queue_create()};
      tp::Nominations nominations;
    };
    Lane bnb_priority;
    Lane bnb_lost_work;
    Lane knapsack_count;
    Lane greedy_reload;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      const auto bnb = tp::solvers::branch_and_bound;
      compare_queue(cluster.get(), bnb_priority.queue.get(), bnb, TP_SOLVER_BRANCH_AND_BOUND,
                    tp::cost::priority_weighted{}, term_of(TP_COST_PRIORITY_WEIGHTED), state,
                    pending, bnb_priority.nominations);
      compare_queue(cluster.get(), bnb_lost_work.queue.get(), bnb, TP_SOLVER_BRANCH_AND_BOUND,
                    tp::cost::lost_work{}, term_of(TP_COST_LOST_WORK), state, pending,
                    bnb_lost_work.nominations);
      compare_queue(cluster.get(), knapsack_count.queue.get(), tp::solvers::knapsack,
                    TP_SOLVER_KNAPSACK, tp::cost::victim_count{}, term_of(TP_COST_VICTIM_COUNT),
                    state, pending, knapsack_count.nominations);
      compare_queue(cluster.get(), greedy_reload.queue.get(), tp::solvers::greedy,
                    TP_SOLVER_GREEDY, tp::cost::reload_time{}, term_of(TP_COST_RELOAD_TIME), state,
                    pending, greedy_reload.nominations);
      // kubernetes_order prices by the running set, so each round is a fresh queue on both sides.
      {
        Lane fresh;
        compare_queue(cluster.get(), fresh.queue.get(), tp::solvers::greedy, TP_SOLVER_GREEDY,
                      tp::cost::kubernetes_order::of(state), term_of(TP_COST_KUBERNETES_ORDER),
                      state, pending, fresh.nominations);
      }
      const tp_queued_plan* plans = nullptr;
      std::size_t count = 0;
      REQUIRE(tp_queue_get_plans(bnb_priority.queue.get(), &plans, &count) == TP_OK);
      for (std::size_t i = 0; i < count; ++i) {
        kept += plans[i].status == TP_NOMINATION_KEPT;
        resumed += plans[i].status == TP_NOMINATION_RESUMED;
        const auto it = std::find_if(pending.begin(), pending.end(), [&](const tp::Workload& w) {
          return w.id.value == plans[i].preemptor;
        });
        REQUIRE(it != pending.end());
        tp_plan_info info;
        tp_plan_info_init(&info);
        REQUIRE(tp_plan_get_info(plans[i].plan, &info) == TP_OK);
        const tp::PreemptionPlan alone =
            tp::solvers::branch_and_bound.solve(state, *it, tp::cost::priority_weighted{});
        planned_apart += (alone.target_domain.valid() ? topology->path(alone.target_domain) : "") !=
                         std::string(info.target);
      }
      // Between rounds: the first victim of the first nomination with victims leaves (an
      // eviction done), and so does one unrelated workload.
      for (std::size_t i = 0; i < count; ++i) {
        const tp_victim* victims = nullptr;
        std::size_t victim_count = 0;
        REQUIRE(tp_plan_get_victims(plans[i].plan, &victims, &victim_count) == TP_OK);
        if (victim_count == 0 || !state.contains(tp::WorkloadId{victims[0].id})) continue;
        state.remove(tp::WorkloadId{victims[0].id});
        REQUIRE(tp_cluster_workload_finish(cluster.get(), victims[0].id) == TP_OK);
        break;
      }
      const auto ids = state.workload_ids();
      const tp::WorkloadId gone = ids[random() % ids.size()];
      state.remove(gone);
      REQUIRE(tp_cluster_workload_finish(cluster.get(), gone.value) == TP_OK);
    }
  }
  CHECK(kept > 0);
  CHECK(resumed > 0);
  CHECK(planned_apart > 0);
}
