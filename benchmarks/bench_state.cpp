// SPDX-License-Identifier: MIT
// The cost of the cluster state itself, at 100 / 1,000 / 10,000 dense 8-GPU nodes (DESIGN.md §6):
// - BM_Generate: building the synthetic cluster (the generator must stay O(nodes));
// - BM_PriorityScan: reading every running workload record once (priority, GPUs), the lower
//   floor under any decision;
// - BM_FootprintScan: reading every placement entry (domain, amounts) of every running workload,
//   host by host: what a decision really depends on (see scan_floors.hpp);
// - BM_AddRemove: one incremental remove + add of a running workload (O(depth x footprint));
// - BM_Memory: bytes per node and per workload, and whether 10,000 nodes with ~60,000
//   workloads fit in 64 MiB.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "scan_floors.hpp"
#include "topopreempt/model/cluster_generator.hpp"

namespace {

using namespace topopreempt;

ClusterSpec spec_for(std::int64_t nodes) {
  ClusterSpec spec;
  spec.nodes = static_cast<std::size_t>(nodes);
  return spec;
}

/// One generated cluster per size for the whole process (generation is not what the scans
/// and BM_AddRemove measure). Only the AddRemove benchmark mutates it, and it restores it.
GeneratedCluster& cluster(std::int64_t nodes) {
  static std::map<std::int64_t, std::unique_ptr<GeneratedCluster>> cache;
  auto& slot = cache[nodes];
  if (!slot) slot = std::make_unique<GeneratedCluster>(generate_cluster(spec_for(nodes)));
  return *slot;
}

/// Heap bytes in use (glibc), to cross-check the self-reported `memory_bytes()`.
std::size_t heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  return mallinfo2().uordblks;
#else
  return 0;
#endif
}

void BM_Generate(benchmark::State& state) {
  const ClusterSpec spec = spec_for(state.range(0));
  std::size_t workloads = 0;
  for (auto _ : state) {
    GeneratedCluster generated = generate_cluster(spec);
    workloads = generated.state.size();
    benchmark::DoNotOptimize(workloads);
  }
  state.counters["nodes"] = static_cast<double>(spec.nodes);
  state.counters["workloads"] = static_cast<double>(workloads);
}

/// The priority floor: one pass over every running workload record, summing its eligibility
/// and size, so the compiler cannot drop the pass.
void BM_PriorityScan(benchmark::State& state) {
  const Allocation& allocation = cluster(state.range(0)).state;
  for (auto _ : state) benchmark::DoNotOptimize(topopreempt_bench::priority_scan(allocation));
  const auto workloads = static_cast<double>(allocation.size());
  state.counters["workloads"] = workloads;
  state.counters["time_per_workload"] = benchmark::Counter(
      workloads, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// The footprint floor: host by host, every occupant and each of its placement entries on that
/// host (domain id and all amounts).
void BM_FootprintScan(benchmark::State& state) {
  const Allocation& allocation = cluster(state.range(0)).state;
  std::int64_t entries = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(topopreempt_bench::footprint_scan(allocation, &entries));
  const auto workloads = static_cast<double>(allocation.size());
  state.counters["workloads"] = workloads;
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["time_per_workload"] = benchmark::Counter(
      workloads, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["time_per_entry"] = benchmark::Counter(
      static_cast<double>(entries),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// One remove + add of a running workload (rotating over 512 of them, gangs included), back
/// to the same state: the incremental maintenance of every aggregate along the ancestor chains.
void BM_AddRemove(benchmark::State& state) {
  Allocation& allocation = cluster(state.range(0)).state;
  struct Saved {
    Workload workload;
    Placement placement;
  };
  std::vector<Saved> saved;
  const std::vector<WorkloadId> ids = allocation.workload_ids();
  const std::size_t stride = std::max<std::size_t>(1, ids.size() / 512);
  for (std::size_t i = 0; i < ids.size() && saved.size() < 512; i += stride) {
    saved.push_back({allocation.workload(ids[i]), allocation.placement(ids[i])});
  }
  std::size_t next = 0;
  double entries = 0.0;
  for (auto _ : state) {
    const Saved& item = saved[next];
    allocation.remove(item.workload.id);
    allocation.add(item.workload, item.placement);
    next = next + 1 == saved.size() ? 0 : next + 1;
  }
  for (const Saved& item : saved) {
    for (const auto& replica : item.placement.replicas)
      entries += static_cast<double>(replica.entries.size());
  }
  state.counters["entries_per_workload"] = entries / static_cast<double>(saved.size());
  // Each iteration is two operations.
  state.counters["time_per_op"] = benchmark::Counter(
      2.0, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// Memory: self-reported bytes (topology + state) and the heap growth of building them.
void BM_Memory(benchmark::State& state) {
  const std::size_t before = heap_in_use();
  std::size_t reported = 0;
  std::size_t topology_bytes = 0;
  std::size_t heap = 0;
  std::size_t nodes = 0;
  std::size_t workloads = 0;
  for (auto _ : state) {
    GeneratedCluster generated = generate_cluster(spec_for(state.range(0)));
    heap = heap_in_use() - before;
    topology_bytes = generated.topology->memory_bytes();
    reported = topology_bytes + generated.state.memory_bytes();
    nodes = generated.topology->domains_at(generated.topology->host_level()).size();
    workloads = generated.state.size();
    benchmark::DoNotOptimize(reported);
  }
  constexpr double mib = 1024.0 * 1024.0;
  state.counters["workloads"] = static_cast<double>(workloads);
  state.counters["reported_MiB"] = static_cast<double>(reported) / mib;
  state.counters["heap_MiB"] = static_cast<double>(heap) / mib;
  state.counters["topology_MiB"] = static_cast<double>(topology_bytes) / mib;
  state.counters["state_MiB"] = static_cast<double>(reported - topology_bytes) / mib;
  state.counters["bytes_per_node"] = static_cast<double>(reported) / static_cast<double>(nodes);
  state.counters["bytes_per_workload"] =
      static_cast<double>(reported) / static_cast<double>(workloads);
  constexpr std::size_t limit = std::size_t{64} * 1024 * 1024;
  state.counters["fits_64MiB"] = reported <= limit && heap <= limit ? 1 : 0;
}

BENCHMARK(BM_Generate)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PriorityScan)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FootprintScan)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AddRemove)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Memory)->Arg(100)->Arg(1000)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
