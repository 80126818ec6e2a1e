// SPDX-License-Identifier: MIT
#pragma once
// A 0-1 knapsack instance (Pisinger's format, or generated like his types 1-3) as a preemption
// problem with one domain: each item is a running workload holding `weight` units of one pooled
// resource and priced at its `profit`; the node holds exactly the items; the preemptor needs
// everything but `capacity` units. Evicting a minimum-profit set of weight >= total - capacity
// keeps a maximum-profit set of weight <= capacity: the plan costs total profit - optimum.
// Shared by the tests and the benchmarks (no test framework here).
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::test {

/// Profits, weights and capacity of one 0-1 knapsack instance.
struct KnapsackItems {
  std::int64_t capacity = 0;
  std::vector<std::int64_t> profits;
  std::vector<std::int64_t> weights;
};

/// Reads "n capacity" then n "profit weight" pairs (Pisinger's large_scale files); throws
/// `std::runtime_error` naming the file when it cannot.
[[nodiscard]] inline KnapsackItems read_pisinger(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) throw std::runtime_error("cannot open " + path);
  std::int64_t n = 0;
  KnapsackItems items;
  if (!(in >> n >> items.capacity) || n <= 0) throw std::runtime_error("bad header in " + path);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t profit = 0;
    std::int64_t weight = 0;
    if (!(in >> profit >> weight)) throw std::runtime_error("short item list in " + path);
    items.profits.push_back(profit);
    items.weights.push_back(weight);
  }
  return items;
}

/// Reads the single number of an optimum file.
[[nodiscard]] inline std::int64_t read_pisinger_optimum(const std::string& path) {
  std::ifstream in(path);
  std::int64_t optimum = 0;
  if (!(in >> optimum)) throw std::runtime_error("cannot read an optimum from " + path);
  return optimum;
}

/// An instance generated as Pisinger's generator does for types 1-3 with range R = 1000 and
/// instance 1 of 100 (capacity = total weight / 101): 1 uncorrelated, 2 weakly correlated,
/// 3 strongly correlated. Deterministic in `seed` (own integer mapping, identical everywhere).
[[nodiscard]] inline KnapsackItems generate_pisinger(int type, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  const auto between = [&](std::int64_t low, std::int64_t high) {
    return low + static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(high - low + 1));
  };
  constexpr std::int64_t range = 1000;
  KnapsackItems items;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t weight = between(1, range);
    std::int64_t profit = 0;
    if (type == 1) {
      profit = between(1, range);
    } else if (type == 2) {
      profit = std::max<std::int64_t>(1, weight + between(-range / 10, range / 10));
    } else {
      profit = weight + range / 10;
    }
    items.weights.push_back(weight);
    items.profits.push_back(profit);
    total += weight;
  }
  items.capacity = total / 101;
  return items;
}

/// Prices a victim at its `CostInputs::extra_cost` (the item's profit): whole numbers.
struct item_profit {
  static constexpr std::string_view name = "item_profit";
  [[nodiscard]] double evict(const Workload& victim) const noexcept { return victim.cost.extra_cost; }
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t) const noexcept {
    return victim.cost.extra_cost;
  }
  /// Integer profits: exact costs.
  [[nodiscard]] double cost_grid() const noexcept { return 1.0; }
};

/// The knapsack as a one-node preemption problem (see the file comment).
struct KnapsackDomain {
  std::shared_ptr<const Topology> topology;
  std::unique_ptr<Allocation> state;
  Workload preemptor;
  std::int64_t total_profit = 0;
};

/// Builds the domain: one node with `total weight` units, one workload per item.
[[nodiscard]] inline KnapsackDomain knapsack_domain(const KnapsackItems& items) {
  const ResourceSchema schema({{"gpu_milli", ResourceKind::device}, {"units", ResourceKind::pooled}});
  std::int64_t total_weight = 0;
  for (const std::int64_t weight : items.weights) total_weight += weight;
  TopologyBuilder builder({"cluster", "node", "gpu"}, schema, "gpu", "node", "cluster");
  ResourceVector capacity = schema.zeros();
  capacity(1) = total_weight;
  const auto node = builder.add(TopologyBuilder::root(), "node", "node0", capacity);
  ResourceVector device = schema.zeros();
  device(0) = 1000;
  (void)builder.add(node, "gpu", "gpu0", device);
  KnapsackDomain domain;
  domain.topology = std::make_shared<const Topology>(builder.build());
  domain.state = std::make_unique<Allocation>(domain.topology);
  for (std::size_t i = 0; i < items.weights.size(); ++i) {
    Workload item;
    item.id = WorkloadId{i + 1};
    item.priority = 0;
    item.demand.resources = schema.zeros();
    item.demand.resources(1) = items.weights[i];
    item.cost.extra_cost = static_cast<double>(items.profits[i]);
    domain.total_profit += items.profits[i];
    const auto found = find_placement(*domain.state, item);
    if (!found.found) throw std::logic_error("knapsack_domain: item " + std::to_string(i) + " does not fit");
    domain.state->add(item, found.placement);
  }
  domain.preemptor.id = WorkloadId{items.weights.size() + 1};
  domain.preemptor.name = "knapsack";
  domain.preemptor.priority = 1;
  domain.preemptor.demand.resources = schema.zeros();
  domain.preemptor.demand.resources(1) = total_weight - items.capacity;
  return domain;
}

}  // namespace topopreempt::test
