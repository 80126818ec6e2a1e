// SPDX-License-Identifier: MIT
// Building topologies with very many siblings (issue 11, item 9):
// - BM_AddSiblings: `TopologyBuilder::add` of N nodes under one parent, then `build()`. Sibling
//   names are checked through a hash of (parent, name), so the time per node must stay flat
//   from 100k to 1M (it grew linearly when every add scanned all siblings: 80k nodes took
//   4.7 s, 1M over 300 s). The counter `ns_per_node` makes the ratio readable at a glance.
// - BM_ClusterOf: `shapes::cluster` of N 8-GPU nodes in ONE rack (the `cluster_of` default):
//   N x 15 domains, the sibling-heavy shape a snapshot can ask for.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/topology.hpp"

namespace {

using namespace topopreempt;

void BM_AddSiblings(benchmark::State& state) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  for (auto _ : state) {
    TopologyBuilder builder({"cluster", "node", "gpu"}, ResourceSchema::standard(), "gpu", "node",
                            "cluster");
    for (std::uint32_t i = 0; i < nodes; ++i) {
      (void)builder.add(TopologyBuilder::root(), "node", "node" + std::to_string(i));
    }
    Topology topology = builder.build();
    benchmark::DoNotOptimize(topology);
  }
  // Seconds per (node x iteration), scaled to nanoseconds.
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(nodes) / 1e9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AddSiblings)
    ->Arg(100'000)
    ->Arg(300'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

void BM_ClusterOf(benchmark::State& state) {
  const auto nodes = static_cast<std::size_t>(state.range(0));
  const shapes::MachineShape shape = shapes::dense_8gpu_server();
  for (auto _ : state) {
    Topology topology = shapes::cluster(shape, nodes, nodes);
    benchmark::DoNotOptimize(topology);
  }
}
BENCHMARK(BM_ClusterOf)->Arg(100'000)->Arg(300'000)->Unit(benchmark::kMillisecond);

}  // namespace
