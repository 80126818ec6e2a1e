// SPDX-License-Identifier: MIT
#pragma once
/// @file benchmarks/bench_kinds.hpp
/// The 9 preemptor kinds of BENCHMARKS.md (DESIGN.md §6), the 4 variants each is measured
/// with, and the cost model of the solver benchmarks; shared by the benchmark programs.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt_bench {

/// A preemptor kind of DESIGN.md §6.
struct Kind {
  const char* name;
  topopreempt::PreemptorSpec spec;
  bool saturated;  ///< measured on the 100 %-busy twin cluster
};

/// The 9 kinds. 1-GPU kinds run on a saturated twin cluster (100 % busy GPUs): at 92 % a 1-GPU
/// preemptor always finds an idle GPU, which measures nothing but the no-preemption fast path.
inline const std::vector<Kind>& kinds() {
  using topopreempt::PreemptorKind;
  static const std::vector<Kind> all{
      {"numa1", {PreemptorKind::numa, 1}, true},
      {"best_effort1", {PreemptorKind::best_effort, 1}, true},
      {"island4", {PreemptorKind::nvlink_island, 4}, false},
      {"numa4", {PreemptorKind::numa, 4}, false},
      {"socket4", {PreemptorKind::socket, 4}, false},
      {"best_effort4", {PreemptorKind::best_effort, 4}, false},
      {"node8", {PreemptorKind::node, 8}, false},
      {"island8", {PreemptorKind::nvlink_island, 8}, false},
      {"rack16", {PreemptorKind::rack_gang, 16, 2}, false},
  };
  return all;
}

/// The rotation of one kind: who may be preempted (priority) and how heavy the host side is.
inline std::vector<topopreempt::Workload> variants(const Kind& kind) {
  using topopreempt::Amount;
  struct Variant {
    std::int32_t priority;
    Amount cpu_milli_per_gpu;
    Amount memory_mib_per_gpu;
  };
  constexpr Amount gib = 1024;  // in MiB
  constexpr std::array<Variant, 4> table{
      {{topopreempt::generated_priority::preemptor, 6000, 64 * gib},
       {topopreempt::generated_priority::preemptor, 8000, 120 * gib},
       {700, 6000, 64 * gib},
       {400, 4000, 48 * gib}}};
  std::vector<topopreempt::Workload> result;
  for (const Variant& v : table) {
    topopreempt::PreemptorSpec spec = kind.spec;
    spec.priority = v.priority;
    spec.cpu_milli_per_gpu = v.cpu_milli_per_gpu;
    spec.memory_mib_per_gpu = v.memory_mib_per_gpu;
    result.push_back(topopreempt::make_preemptor(spec));
  }
  return result;
}

/// The DESIGN.md §6 cluster of `nodes` nodes (92 % busy GPUs, or 100 % when `saturated`),
/// generated once per process and kept.
inline const topopreempt::GeneratedCluster& cluster(std::int64_t nodes, bool saturated) {
  static std::map<std::pair<std::int64_t, bool>, std::unique_ptr<topopreempt::GeneratedCluster>>
      cache;
  auto& slot = cache[{nodes, saturated}];
  if (!slot) {
    topopreempt::ClusterSpec spec;
    spec.nodes = static_cast<std::size_t>(nodes);
    if (saturated) spec.target_occupancy = 1.0;
    slot = std::make_unique<topopreempt::GeneratedCluster>(topopreempt::generate_cluster(spec));
  }
  return *slot;
}

/// Rounds of 100 random changes to a state (a running workload removed, or the last one removed
/// started again where it ran), drawn from a fixed seed: `bench_index`'s `after_changes/...` and
/// `callgrind_after_changes.cpp` draw the same rounds through it. The caller keeps `state` alive.
class ChangeRounds {
 public:
  /// A removal of a running workload, or its start again where it ran.
  struct Change {
    bool start = false;
    topopreempt::Workload workload;
    topopreempt::Placement placement;
  };

  explicit ChangeRounds(topopreempt::Allocation& state)
      : state_(state), ids_(state.workload_ids()) {}

  /// Draws the next round's 100 changes and applies them.
  void draw() {
    changes_.clear();
    removed_.clear();
    for (int c = 0; c < 100; ++c) {
      if (!removed_.empty() && random_() % 2 == 0) {
        changes_.push_back({true, removed_.back().first, removed_.back().second});
        removed_.pop_back();
      } else {
        const topopreempt::WorkloadId id = ids_[random_() % ids_.size()];
        if (!state_.contains(id)) continue;
        removed_.emplace_back(state_.workload(id), state_.placement(id));
        changes_.push_back({false, removed_.back().first, removed_.back().second});
      }
      apply(changes_.back(), false);
    }
  }
  /// Undoes the round's changes, last first: the state is the one `draw` started from.
  void undo() {
    for (auto change = changes_.rbegin(); change != changes_.rend(); ++change) apply(*change, true);
  }
  /// Applies the round's changes again (after `undo`).
  void redo() {
    for (const Change& change : changes_) apply(change, false);
  }

 private:
  // A change, or (`undo`) its inverse.
  void apply(const Change& change, bool undo) {
    if (change.start != undo) {
      state_.add(change.workload, change.placement);
    } else {
      state_.remove(change.workload.id);
    }
  }

  topopreempt::Allocation& state_;
  std::vector<topopreempt::WorkloadId> ids_;
  std::mt19937_64 random_{42};
  std::vector<Change> changes_;
  std::vector<std::pair<topopreempt::Workload, topopreempt::Placement>> removed_;
};

/// Lost GPU-seconds since the last checkpoint plus model reload seconds (Compass): what evicting
/// a training or a serving job really costs. CPU-only jobs cost the two floors (2).
using BenchCost =
    topopreempt::cost::weighted_sum<topopreempt::cost::lost_work, topopreempt::cost::reload_time>;

}  // namespace topopreempt_bench
