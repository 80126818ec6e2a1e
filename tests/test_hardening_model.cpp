// SPDX-License-Identifier: MIT
// Regression tests for the model promises of issue 11: each case is the smallest known trigger
// of one defect, and every plan goes through the independent verifier.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

using namespace topopreempt;
using namespace topopreempt::test;

namespace {

/// Solvers that honour guaranteed scopes (every one but the topology-blind Kubernetes baseline).
using topology_aware_solvers =
    std::tuple<solvers::greedy_solver, solvers::knapsack_solver, solvers::branch_and_bound_solver,
               baselines::exhaustive_subsets_solver>;

/// Solves with `Solver` and requires the independent verifier to accept the plan.
template <class Solver, CostModel Model>
PreemptionPlan solve_verified(const Allocation& state, const Workload& preemptor,
                              const Model& model) {
  const PreemptionPlan plan = Solver{}.solve(state, preemptor, model);
  const PlanVerdict verdict = verify_plan(state, preemptor, plan, model);
  CHECK_MESSAGE(verdict.ok, Solver::name << ": " << verdict.summary() << "\n" << plan.explanation);
  return plan;
}

/// One node, one socket, two NUMA nodes of two GPUs each (CPU and memory on the NUMA nodes).
std::shared_ptr<const Topology> two_numa_node() {
  shapes::ShapeDomain socket{"socket", "socket0", {}, {}};
  int gpu = 0;
  for (int n = 0; n < 2; ++n) {
    shapes::ShapeDomain numa{
        "numa", "numa" + std::to_string(n), shapes::detail::host_pool(32000, 262144), {}};
    for (int g = 0; g < 2; ++g) numa.children.push_back(shapes::detail::gpu(gpu++, 81920));
    socket.children.push_back(std::move(numa));
  }
  shapes::MachineShape shape{
      "two-numa", {"node", "socket", "numa", "gpu"}, {"node", "node", {}, {std::move(socket)}}, {}};
  return shared(shapes::single_machine(shape));
}

/// A replica asking only for pooled resources.
Workload pooled_job(std::uint64_t id, std::int32_t priority, Amount cpu_milli, Amount memory_mib,
                    TopologyRequirement replica_scope) {
  Workload workload;
  workload.id = WorkloadId{id};
  workload.priority = priority;
  workload.demand.resources =
      ResourceSchema::standard().make({{"cpu_milli", cpu_milli}, {"memory_mib", memory_mib}});
  workload.replica_scope = std::move(replica_scope);
  return workload;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE(
    "issue 11 #5: a guaranteed gang scope is never loosened with a "
    "best-effort replica scope",
    Solver, gang_scope_kept) {
  Allocation state(two_numa_node());
  const Workload preemptor = gpu_job(100, 5, 4, 1, TopologyRequirement::best_effort("numa"),
                                     TopologyRequirement::guaranteed("numa"));
  SUBCASE("no workloads at all: no NUMA node has 4 GPUs") {
    const PreemptionPlan plan = solve_verified<Solver>(state, preemptor, cost::victim_count{});
    CHECK(plan.status == PlanStatus::infeasible);
    CHECK(plan.victims.empty());
  }
  SUBCASE("one workload holds all 4 GPUs") {
    start(state, gpu_job(1, 1, 4));
    const PreemptionPlan plan = solve_verified<Solver>(state, preemptor, cost::victim_count{});
    CHECK(plan.status == PlanStatus::infeasible);
  }
  SUBCASE("two replicas of 2 GPUs, gang guaranteed at numa, replicas best-effort at numa") {
    start(state, gpu_job(1, 1, 4));
    const Workload gang = gpu_job(101, 5, 2, 2, TopologyRequirement::best_effort("numa"),
                                  TopologyRequirement::guaranteed("numa"));
    const PreemptionPlan plan = solve_verified<Solver>(state, gang, cost::victim_count{});
    CHECK(plan.status == PlanStatus::infeasible);
  }
  SUBCASE("a 2-GPU preemptor still fits in one NUMA node after evicting the holder") {
    start(state, gpu_job(1, 1, 4));
    const Workload small = gpu_job(102, 5, 2, 1, TopologyRequirement::best_effort("numa"),
                                   TopologyRequirement::guaranteed("numa"));
    const PreemptionPlan plan = solve_verified<Solver>(state, small, cost::victim_count{});
    REQUIRE(plan.has_victims_plan());
    CHECK(plan.victims.size() == 1);
    CHECK(state.topology().levels()[plan.gang_level] == "numa");
  }
}
TEST_CASE_TEMPLATE_APPLY(gang_scope_kept, topology_aware_solvers);

TEST_CASE("issue 11 #5: find_placement keeps a single replica inside its guaranteed gang level") {
  Allocation state(two_numa_node());
  const Workload preemptor =
      gpu_job(100, 5, 4, 1, TopologyRequirement{}, TopologyRequirement::guaranteed("numa"));
  CHECK_FALSE(find_placement(state, preemptor).found);
  const ResolvedDemand demand = ResolvedDemand::of(preemptor, state.topology());
  CHECK(demand.unit_level == state.topology().level_index("numa"));
}

namespace {
using price_sum_checked_solvers =
    std::tuple<solvers::greedy_solver, solvers::knapsack_solver, solvers::branch_and_bound_solver,
               baselines::exhaustive_subsets_solver, baselines::kube_default_solver>;
}  // namespace

TEST_CASE_TEMPLATE_DEFINE("issue 11 #2: prices whose sum overflows are rejected, not 'infeasible'",
                          Solver, price_sum_checked) {
  Allocation state(shared(shapes::single_machine(shapes::hgx_h100())));
  for (std::uint64_t id = 1; id <= 8; ++id) start(state, gpu_job(id, 0, 1));
  const Workload preemptor = gpu_job(100, 1, 2);
  SUBCASE("offset 1e308: eight finite prices sum to +inf") {
    cost::priority_weighted model;
    model.offset = 1e308;
    try {
      (void)Solver{}.solve(state, preemptor, model);
      FAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& error) {
      CHECK(std::string(error.what()).find("priority_weighted") != std::string::npos);
      CHECK(std::string(error.what()).find("rescale") != std::string::npos);
    }
  }
  SUBCASE("offset 1e307: the sum stays finite and a 2-victim plan exists") {
    cost::priority_weighted model;
    model.offset = 1e307;
    const PreemptionPlan plan = Solver{}.solve(state, preemptor, model);
    VerifyOptions options;
    options.require_topology = !std::is_same_v<Solver, baselines::kube_default_solver>;
    const PlanVerdict verdict = verify_plan(state, preemptor, plan, model, options);
    CHECK_MESSAGE(verdict.ok, verdict.summary());
    REQUIRE(plan.has_victims_plan());
    CHECK(plan.victims.size() == 2);
    CHECK(plan.cost == doctest::Approx(2e307));
  }
}
TEST_CASE_TEMPLATE_APPLY(price_sum_checked, price_sum_checked_solvers);

TEST_CASE("issue 11 #3: amounts that wrap a signed sum are rejected by Allocation::add") {
  CHECK(sum_overflows(std::numeric_limits<Amount>::max(), 1));
  CHECK(sum_overflows(std::numeric_limits<Amount>::min(), -1));
  CHECK_FALSE(sum_overflows(std::numeric_limits<Amount>::max() - 1, 1));
  ResourceVector sum = ResourceSchema::standard().make({{"cpu_milli", 5}});
  const ResourceVector before = sum;
  ResourceVector huge = ResourceSchema::standard().zeros();
  huge(2) = std::numeric_limits<Amount>::max();
  CHECK_FALSE(checked_accumulate(sum, huge));
  CHECK(sum == before);

  const auto topology = shared(shapes::single_machine(shapes::hgx_h100()));
  Allocation state(topology);
  const Workload workload = pooled_job(1, 0, 1000, 0, {});
  const DomainId numa0 = topology->find("node0/socket0/numa0").value();
  const auto cpu = [&](Amount amount) {
    return ResourceSchema::standard().make({{"cpu_milli", amount}});
  };
  // INT64_MAX + INT64_MAX + 1002 wraps to 1000: the demand, and "within" the 56,000-cpu pool.
  Placement placement;
  placement.replicas.push_back({{{numa0, cpu(std::numeric_limits<Amount>::max())},
                                 {numa0, cpu(std::numeric_limits<Amount>::max())},
                                 {numa0, cpu(1002)}}});
  CHECK_THROWS_WITH_AS(state.add(workload, placement), doctest::Contains("overflow"),
                       std::invalid_argument);
  CHECK(state.size() == 0);
  CHECK(state.used(numa0, 2) == 0);
  // The honest placement still works.
  Placement honest;
  honest.replicas.push_back({{{numa0, cpu(1000)}}});
  state.add(workload, honest);
  CHECK(state.used(numa0, 2) == 1000);
}

TEST_CASE("issue 11 #1: a replica without devices scoped below its pools") {
  SUBCASE("HGX: CPU only, guaranteed at pcie_switch (CPUs live on the NUMA node): infeasible") {
    Allocation state(shared(shapes::single_machine(shapes::hgx_h100())));
    const Workload preemptor =
        pooled_job(1, 1, 1000, 0, TopologyRequirement::guaranteed("pcie_switch"));
    CHECK_FALSE(find_placement(state, preemptor).found);
    [&]<class... Solver>(std::tuple<Solver...>*) {
      (([&] {
         const PreemptionPlan plan = solve_verified<Solver>(state, preemptor, cost::victim_count{});
         CHECK_MESSAGE(plan.status == PlanStatus::infeasible, Solver::name);
       }()),
       ...);
    }(static_cast<topology_aware_solvers*>(nullptr));
    // The same replica at NUMA scope is placed, and add() agrees with the search.
    const Workload numa = pooled_job(2, 1, 1000, 0, TopologyRequirement::guaranteed("numa"));
    const auto found = find_placement(state, numa);
    REQUIRE(found.found);
    state.add(numa, found.placement);
  }
  SUBCASE("RTX 4090 server: CPU + memory at core_group (memory lives on the NUMA node)") {
    Allocation state(shared(shapes::single_machine(shapes::rtx4090_server())));
    const Topology& topology = state.topology();
    const Workload preemptor =
        pooled_job(1, 1, 2000, 4096, TopologyRequirement::guaranteed("core_group"));
    const auto found = find_placement(state, preemptor);
    REQUIRE(found.found);
    const DomainId footprint = found.placement.replica_domain(topology, 0);
    CHECK(topology.levels()[topology.level(footprint)] == "core_group");
    [&]<class... Solver>(std::tuple<Solver...>*) {
      (([&] {
         const PreemptionPlan plan = solve_verified<Solver>(state, preemptor, cost::victim_count{});
         CHECK_MESSAGE(plan.status == PlanStatus::no_preemption_needed, Solver::name);
       }()),
       ...);
    }(static_cast<topology_aware_solvers*>(nullptr));
    state.add(preemptor, found.placement);
    CHECK(state.used(footprint, topology.schema().index_of("cpu_milli")) == 2000);
  }
  SUBCASE("footprint: memory of an enclosing NUMA node does not widen a core group") {
    const auto topology = shared(shapes::single_machine(shapes::rtx4090_server()));
    const DomainId numa = topology->find("node0/socket0/numa0").value();
    const DomainId cores = topology->find("node0/socket0/numa0/cores0").value();
    const DomainId other = topology->find("node0/socket0/numa0/cores1").value();
    const ResourceVector some = ResourceSchema::standard().make({{"cpu_milli", 1}});
    CHECK(Placement::footprint_domain(*topology, {{cores, some}, {numa, some}}) == cores);
    CHECK(Placement::footprint_domain(*topology, {{cores, some}, {other, some}, {numa, some}}) ==
          numa);
    CHECK(Placement::footprint_domain(*topology, {{numa, some}}) == numa);
  }
}

TEST_CASE("issue 11 #4: an elastic workload keeps at least one replica") {
  const auto topology = shared(shapes::single_machine(shapes::hgx_h100()));
  Workload elastic = gpu_job(1, 0, 1, 2);
  elastic.min_replicas = 0;
  CHECK_THROWS_WITH_AS(validate(elastic, *topology), doctest::Contains("min_replicas"),
                       std::invalid_argument);
  Allocation state(topology);
  CHECK_THROWS_AS(start(state, elastic), std::invalid_argument);
  CHECK(state.size() == 0);
  elastic.min_replicas = 1;
  start(state, elastic);
  const std::vector<std::int32_t> both{0, 1};
  CHECK_THROWS_AS(state.shrink(elastic.id, both), std::invalid_argument);
  CHECK(state.workload(elastic.id).replicas == 2);
  const std::vector<std::int32_t> one{1};
  state.shrink(elastic.id, one);
  CHECK(state.workload(elastic.id).replicas == 1);
}

namespace {

/// Every victim costs exactly the CPU it frees (in cores): the fractional bound is the deficit
/// itself, which even CPU amounts can never hit exactly for an odd deficit, so proving the
/// optimum takes an exhaustive search: the hard case for a node budget.
struct cpu_priced {
  static constexpr std::string_view name = "cpu_priced";
  [[nodiscard]] double evict(const Workload& victim) const {
    return static_cast<double>(victim.demand.resources(2)) / 1000.0;
  }
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t) const { return evict(victim); }
};

/// The paper's server filled with 40 CPU-only jobs of even sizes, each in one core group.
Allocation cpu_packed_server() {
  Allocation state(shared(shapes::single_machine(shapes::rtx4090_server())));
  std::uint64_t seed = 7;
  for (std::uint64_t id = 1; id <= 40; ++id) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const Amount cpu = 2 * (250 + static_cast<Amount>((seed >> 33) % 950));
    const Workload job = pooled_job(id, static_cast<std::int32_t>(id % 10), cpu, 0,
                                    TopologyRequirement::guaranteed("core_group"));
    const auto found = find_placement(state, job);
    if (found.found) state.add(job, found.placement);
  }
  return state;
}

}  // namespace

TEST_CASE("issue 11 #14: knapsack over its cell limit reports a structured downgrade") {
  Allocation state(shared(shapes::single_machine(shapes::hgx_h100())));
  for (std::uint64_t id = 1; id <= 8; ++id)
    start(state, gpu_job(id, static_cast<std::int32_t>(id), 1));
  const Workload preemptor = gpu_job(100, 50, 2);
  const cost::priority_weighted model;
  const PreemptionPlan exact = solvers::knapsack_solver{}.solve(state, preemptor, model);
  CHECK(exact.status == PlanStatus::optimal);
  CHECK(exact.downgrades.empty());
  const PreemptionPlan capped =
      solvers::knapsack_solver{}.max_cells(1).solve(state, preemptor, model);
  CHECK(verify_plan(state, preemptor, capped, model).ok);
  REQUIRE(capped.has_victims_plan());
  REQUIRE_FALSE(capped.downgrades.empty());
  CHECK(capped.downgrades.front().reason == DowngradeReason::cell_limit);
  CHECK(capped.downgrades.front().domain == state.topology().find("node0").value());
  CHECK(capped.downgrades.front().detail.find("cells") != std::string::npos);
  CHECK(to_string(DowngradeReason::cell_limit) == "cell_limit");
}

TEST_CASE("issue 11 #14: branch_and_bound may spend its whole node budget on a single domain") {
  const Allocation state = cpu_packed_server();
  REQUIRE(state.size() >= 30);
  const Topology& topology = state.topology();
  const DomainId node = topology.find("node0").value();
  // Free CPU plus an odd deficit of 20,001 milli-cores: no subset of even victims frees it exactly.
  const Amount free = state.free(node, topology.schema().index_of("cpu_milli"));
  const Workload hungry = pooled_job(1000, 100, free + 20001, 0, {});
  const std::uint64_t budget = 40'000;
  const PreemptionPlan plan =
      solvers::branch_and_bound_solver{}.node_limit(budget).solve(state, hungry, cpu_priced{});
  CHECK(verify_plan(state, hungry, plan, cpu_priced{}).ok);
  REQUIRE(plan.has_victims_plan());
  // Before, a lone domain stopped at a quarter of the budget (10,000 nodes here).
  CHECK(plan.statistics.nodes_explored > budget / 4 + 5'000);
  CHECK(plan.statistics.nodes_explored <= budget + 1'000);
  REQUIRE(plan.status == PlanStatus::feasible);
  REQUIRE(plan.downgrades.size() == 1);
  CHECK(plan.downgrades.front().reason == DowngradeReason::node_limit);
  CHECK(plan.downgrades.front().domain == node);
}

namespace {

/// Starts `workload` inside `within` where the placement search puts it.
void start_in(Allocation& state, const Workload& workload, const std::string& within) {
  const auto found = find_placement(state, ResolvedDemand::of(workload, state.topology()),
                                    state.topology().find(within).value());
  REQUIRE_MESSAGE(found.found, workload.label());
  state.add(workload, found.placement);
}

}  // namespace

TEST_CASE("issue 11 #6: greedy lets a cheap shrink of a big elastic gang compete from the start") {
  // node0: 4 ineligible jobs, 2 single-GPU victims (price 10 each), 2 replicas of an elastic
  // 5-replica gang (eviction 24, dropping 2 replicas 24 x 2 / 5 = 9.6, rounded up to a whole 10:
  // priority_weighted's costs are exact integers); nodes 1-3: 7 ineligible jobs and one
  // gang replica each. The preemptor needs 2 GPUs in one node: only node0 can host it.
  Allocation state(shared(shapes::cluster(shapes::hgx_h100(), 4, 4)));
  std::uint64_t id = 1;
  for (int j = 0; j < 4; ++j) start_in(state, gpu_job(id++, 100, 1), "rack0/node0");
  start_in(state, gpu_job(id++, 10, 1), "rack0/node0");
  start_in(state, gpu_job(id++, 10, 1), "rack0/node0");
  for (int node = 1; node < 4; ++node) {
    for (int j = 0; j < 7; ++j)
      start_in(state, gpu_job(id++, 100, 1), "rack0/node" + std::to_string(node));
  }
  Workload gang = gpu_job(id++, 24, 1, 5);
  gang.min_replicas = 1;
  start(state, gang);
  const Workload preemptor = gpu_job(1000, 50, 2, 1, TopologyRequirement::guaranteed("node"));
  cost::priority_weighted model;
  model.offset = 0.0;
  const PreemptionPlan exact =
      solve_verified<solvers::branch_and_bound_solver>(state, preemptor, model);
  REQUIRE(exact.status == PlanStatus::optimal);
  CHECK(exact.cost == 10.0);
  const PreemptionPlan greedy = solve_verified<solvers::greedy_solver>(state, preemptor, model);
  REQUIRE(greedy.has_victims_plan());
  CHECK(greedy.cost == 10.0);  // before: 20, two evictions of single jobs
  REQUIRE(greedy.victims.size() == 1);
  CHECK(greedy.victims.front().action == VictimAction::shrink);
}

namespace {

/// Declares a cost grid of 1 but prices a victim at 1.5: solvers must refuse it.
struct off_grid_model {
  static constexpr std::string_view name = "off_grid";
  [[nodiscard]] double evict(const Workload&) const noexcept { return 1.5; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return 1.5; }
  [[nodiscard]] double cost_grid() const noexcept { return 1.0; }
};

/// Declares a grid that is not a power of two.
struct odd_grid_model {
  static constexpr std::string_view name = "odd_grid";
  [[nodiscard]] double evict(const Workload&) const noexcept { return 3.0; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return 3.0; }
  [[nodiscard]] double cost_grid() const noexcept { return 3.0; }
};

}  // namespace

TEST_CASE("issue 19: exact-cost declarations are checked, with an error naming the model") {
  Allocation state(shared(shapes::single_machine(shapes::hgx_h100())));
  for (std::uint64_t id = 1; id <= 8; ++id) start(state, gpu_job(id, 1, 1));
  const Workload preemptor = gpu_job(100, 5, 2);
  const std::size_t before = state.size();
  const auto message = [&](const auto& model) {
    try {
      (void)solvers::branch_and_bound.solve(state, preemptor, model);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("<no error>");
  };
  CHECK(message(off_grid_model{}).find("not a multiple of its declared cost_grid() 1") != std::string::npos);
  CHECK(message(odd_grid_model{}).find("it must be 0 (none) or a power of two") != std::string::npos);
  // Whole prices past 2^53 in sum would round: refused instead of compared inexactly.
  cost::priority_weighted huge;
  huge.offset = 2251799813685248.0;  // 2^51: eight victims sum to 2^54
  CHECK(message(huge).find("past 2^53") != std::string::npos);
  CHECK(state.size() == before);  // nothing changed
  // kubernetes_order: a weight past 2^53 (base 1024, 7 ranks) and a fractional base.
  CHECK_THROWS_WITH_AS(cost::kubernetes_order({0, 1, 2, 3, 4, 5, 6}, 1024.0),
                       doctest::Contains("passes 2^53"), std::invalid_argument);
  CHECK_THROWS_AS(cost::kubernetes_order({0, 1}, 2.5), std::invalid_argument);
  // The exact mixed radix: one victim of a rank outweighs every listed workload below it.
  const cost::kubernetes_order order({0, 0, 0, 1, 1, 2});
  Workload low = gpu_job(200, 0, 1);
  Workload mid = gpu_job(201, 1, 1);
  Workload top = gpu_job(202, 2, 1);
  CHECK(order.evict(low) == 1.0);
  CHECK(order.evict(mid) == 4.0);   // > 3 x 1
  CHECK(order.evict(top) == 12.0);  // > 3 x 1 + 2 x 4
}

TEST_CASE("issue 19: branch-and-bound's default budget is deterministic (nodes, no clock)") {
  const solvers::branch_and_bound_solver solver{};  // limits() refers into the solver
  const auto& limits = solver.limits();
  CHECK(limits.max_nodes == 2'000'000);
  CHECK(limits.time_limit == std::chrono::nanoseconds::max());
}

TEST_CASE("issue 19: a scope at a level the footprint's branch skips holds nowhere") {
  // On the RTX 4090 server a GPU's parent is its NUMA node: the branch skips `core_group`, so a
  // GPU share with CPU from the core group beside it lies in no core group. `add`, the
  // verifier and the placement search must all refuse a guarantee there; the GPU level holds.
  const auto topology = shared(shapes::single_machine(shapes::rtx4090_server()));
  const DomainId gpu = topology->find("node0/socket0/numa0/gpu0").value();
  const DomainId cores = topology->find("node0/socket0/numa0/cores0").value();
  CHECK(topology->lies_within_level(gpu, topology->level_index("gpu")));
  CHECK(topology->lies_within_level(gpu, topology->level_index("numa")));
  CHECK_FALSE(topology->lies_within_level(gpu, topology->level_index("core_group")));
  CHECK(topology->lies_within_level(cores, topology->level_index("core_group")));
  CHECK_FALSE(
      topology->lies_within_level(topology->parent(cores), topology->level_index("core_group")));

  const ResourceSchema& schema = topology->schema();
  Workload workload;
  workload.id = WorkloadId{1};
  workload.name = "share";
  workload.priority = 1;
  workload.demand.resources = schema.make({{"gpu_milli", 500}, {"cpu_milli", 2000}});
  Placement placement;
  placement.replicas.push_back(ReplicaPlacement{
      {{gpu, schema.make({{"gpu_milli", 500}})}, {cores, schema.make({{"cpu_milli", 2000}})}}});
  SUBCASE("replica scope") {
    workload.replica_scope = TopologyRequirement::guaranteed("core_group");
  }
  SUBCASE("gang scope") { workload.gang_scope = TopologyRequirement::guaranteed("core_group"); }
  Allocation state(topology);
  CHECK_THROWS_WITH_AS(state.add(workload, placement), doctest::Contains("lies in no core_group"),
                       std::invalid_argument);
  CHECK(state.size() == 0);
  CHECK_FALSE(detail::verification::guaranteed_scopes_hold(*topology, workload, placement));
  CHECK_FALSE(find_placement(state, workload).found);
  CHECK_FALSE(
      guarantee_without_devices(*topology, workload, ResolvedDemand::of(workload, *topology))
          .empty());
  // The same placement guaranteed at the GPU holds everywhere.
  workload.replica_scope = TopologyRequirement::guaranteed("gpu");
  workload.gang_scope = {};
  CHECK(detail::verification::guaranteed_scopes_hold(*topology, workload, placement));
  CHECK(guarantee_without_devices(*topology, workload, ResolvedDemand::of(workload, *topology))
            .empty());
  state.add(workload, placement);
  CHECK(state.size() == 1);
}

namespace {

/// Declares `least_price()` 2 but prices the victim `liar` at 1: a broken declaration that
/// solvers can only see where they read.
struct floor_liar_model {
  static constexpr std::string_view name = "floor_liar";
  WorkloadId liar;
  [[nodiscard]] double evict(const Workload& w) const noexcept { return w.id == liar ? 1.0 : 2.0; }
  [[nodiscard]] double shrink(const Workload& w, std::int32_t) const noexcept { return evict(w); }
  [[nodiscard]] double least_price() const noexcept { return 2.0; }
};

/// Prices every victim NaN: any read of a victim throws.
struct nan_model {
  static constexpr std::string_view name = "nan_prices";
  [[nodiscard]] double evict(const Workload&) const noexcept { return std::nan(""); }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return std::nan(""); }
};

}  // namespace

TEST_CASE_TEMPLATE("issue 22 #2: solvers price and check the victims of the domains they read, "
                   "and nothing when the preemptor fits",
                   Solver, solvers::greedy_solver, solvers::knapsack_solver,
                   solvers::branch_and_bound_solver) {
  // Two full 8-GPU nodes of single-GPU victims; the preemptor needs 8 GPUs on one node.
  Allocation state(shared(shapes::cluster(shapes::hgx_h100(), 2, 2)));
  std::uint64_t id = 1;
  for (const char* node : {"rack0/node0", "rack0/node1"}) {
    for (int j = 0; j < 8; ++j) start_in(state, gpu_job(id++, 1, 1), node);
  }
  const Workload preemptor = gpu_job(100, 5, 8, 1, TopologyRequirement::guaranteed("node"));
  const auto message = [&](const auto& model) {
    try {
      (void)Solver{}.solve(state, preemptor, model);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("<no error>");
  };
  SUBCASE("a broken price in a read domain is rejected, naming the model and the victim") {
    const std::string refused = message(floor_liar_model{WorkloadId{3}});
    CHECK(refused.find("floor_liar") != std::string::npos);
    CHECK(refused.find("workload 3") != std::string::npos);
    CHECK(refused.find("below its declared least_price() 2") != std::string::npos);
    CHECK(message(nan_model{}).find("nan_prices") != std::string::npos);
  }
  SUBCASE("a domain never read is bounded by the declaration: the model's contract") {
    // One GPU anywhere on a node: node0's cheapest plan costs the declared floor 2, so node1
    // (bound: the floor) is pruned unread and its lying victim is never priced. The
    // whole-cluster check, for a scheduler vetting a model, sees the lie.
    const Workload small = gpu_job(101, 5, 1, 1, TopologyRequirement::guaranteed("node"));
    const floor_liar_model model{WorkloadId{12}};
    const PreemptionPlan plan = Solver{}.solve(state, small, model);
    REQUIRE(plan.has_victims_plan());
    CHECK(plan.cost == 2.0);
    CHECK(plan.victims.front().id.value < 9);  // on node0
    CHECK_THROWS_WITH_AS(check_price_sum(state, small, model), doctest::Contains("workload 12"),
                         std::invalid_argument);
    // With the lie on node0, which is read, the solver refuses the model.
    CHECK(message(floor_liar_model{WorkloadId{2}}).find("workload 2") != std::string::npos);
  }
  SUBCASE("the preemptor fits: nothing is priced, so even NaN prices answer") {
    state.remove(WorkloadId{9});  // node1 keeps 7 victims: still no room for 8 GPUs
    for (std::uint64_t v = 10; v <= 16; ++v) state.remove(WorkloadId{v});
    const PreemptionPlan plan = Solver{}.solve(state, preemptor, nan_model{});
    CHECK(plan.status == PlanStatus::no_preemption_needed);
    CHECK_THROWS_AS(check_price_sum(state, preemptor, nan_model{}), std::invalid_argument);
  }
}
