// SPDX-License-Identifier: MIT
// Loading snapshots must be near-linear in the input (issue 19): each benchmark loads generated
// documents at two sizes (N and 2N), so the time ratio shows the growth (2 = linear):
// - BM_ClusterOfOneRack: `cluster_of` HGX H100 nodes (affinity hosts) all in one rack;
// - BM_ClusterOfRacks32: the same in racks of 32;
// - BM_ExplicitReplicas: one workload whose replicas are all placed explicitly, one share per
//   GPU of RTX 4090 servers (paths, placement entries and their validation).
// Results and ratios are in BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "topopreempt/io/snapshot.hpp"

namespace {

using namespace topopreempt;

std::string cluster_document(std::int64_t nodes, std::int64_t per_rack) {
  return R"({"format": "topopreempt-snapshot/1", "topology": {"cluster_of": {"shape": "hgx_h100",
            "nodes": )" +
         std::to_string(nodes) + R"(, "nodes_per_rack": )" + std::to_string(per_rack) +
         R"(}}, "workloads": [], "preemptor": {"id": 1, "priority": 1,
            "demand": {"whole_devices": 1}}})";
}

/// `replicas` GPU shares, one per GPU of 8-GPU RTX 4090 servers in racks of 32.
std::string replicas_document(std::int64_t replicas) {
  const std::int64_t nodes = (replicas + 7) / 8;
  std::string placement;
  placement.reserve(static_cast<std::size_t>(replicas) * 90);
  for (std::int64_t r = 0; r < replicas; ++r) {
    const std::int64_t node = r / 8;
    const std::int64_t gpu = r % 8;
    if (r > 0) placement += ',';
    placement += R"([{"domain":"rack)" + std::to_string(node / 32) + "/node" + std::to_string(node) +
                 "/socket" + std::to_string(gpu / 4) + "/numa" + std::to_string(gpu) + "/gpu" +
                 std::to_string(gpu) + R"(","amount":{"gpu_milli":100}}])";
  }
  return R"({"format":"topopreempt-snapshot/1","topology":{"cluster_of":{"shape":"rtx4090_server",)"
         R"("nodes":)" +
         std::to_string(nodes) + R"(,"nodes_per_rack":32}},"workloads":[{"id":5,"priority":1,)"
         R"("replicas":)" +
         std::to_string(replicas) +
         R"(,"demand":{"resources":{"gpu_milli":100}},"placement":[)" + placement +
         R"(]}],"preemptor":{"id":1,"priority":9,"demand":{"whole_devices":1}}})";
}

void load(benchmark::State& state, const std::string& text) {
  for (auto _ : state) {
    io::Snapshot snapshot = io::load_snapshot_text(text);
    benchmark::DoNotOptimize(snapshot);
  }
  state.counters["bytes"] = static_cast<double>(text.size());
}

void BM_ClusterOfOneRack(benchmark::State& state) {
  const std::string text = cluster_document(state.range(0), state.range(0));
  load(state, text);
  state.counters["domains"] = static_cast<double>(state.range(0) * 17 + 2);
}
BENCHMARK(BM_ClusterOfOneRack)->Arg(20'000)->Arg(40'000)->Unit(benchmark::kMillisecond);

void BM_ClusterOfRacks32(benchmark::State& state) {
  const std::string text = cluster_document(state.range(0), 32);
  load(state, text);
}
BENCHMARK(BM_ClusterOfRacks32)->Arg(20'000)->Arg(40'000)->Unit(benchmark::kMillisecond);

void BM_ExplicitReplicas(benchmark::State& state) {
  const std::string text = replicas_document(state.range(0));
  load(state, text);
}
BENCHMARK(BM_ExplicitReplicas)->Arg(20'000)->Arg(40'000)->Unit(benchmark::kMillisecond);

}  // namespace
