// SPDX-License-Identifier: MIT
// Allocation's strong guarantee under injected allocation failures and hostile amounts.
//
// This program replaces the global operator new so that the k-th allocation after arming
// throws std::bad_alloc. Every operation of a long random sequence (add, remove, shrink, and
// invalid ones) is retried with k = 1, 2, ... until it completes; after each failed attempt
// the full observable state must equal, byte for byte, a dump taken before the attempt, and
// after each success the state must be self-consistent (no ghost record, no duplicate).
// Eigen's own buffers come from malloc and are not injected; everything else is.
// Exit status 0 when every check holds, 1 otherwise (the first failures are printed).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/solvers/greedy.hpp"

// --- Injection: the k-th operator new after arming throws
// ----------------------------------------- Test-only global state: this program is single-threaded
// and owns operator new.
namespace {
std::uint64_t allocations_since_armed = 0;
std::uint64_t fail_at = 0;  // 0 = disarmed

void* allocate(std::size_t size) {
  if (fail_at != 0 && ++allocations_since_armed == fail_at) throw std::bad_alloc();
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void* allocate_aligned(std::size_t size, std::align_val_t alignment) {
  if (fail_at != 0 && ++allocations_since_armed == fail_at) throw std::bad_alloc();
  const auto align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (std::max<std::size_t>(size, 1) + align - 1) / align * align;
  if (void* memory = std::aligned_alloc(align, rounded)) return memory;
  throw std::bad_alloc();
}
void arm(std::uint64_t k) {
  allocations_since_armed = 0;
  fail_at = k;
}
void disarm() { fail_at = 0; }
}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate_aligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate_aligned(size, alignment);
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them): left to the runtime, they
// would allocate with its allocator while the replaced deletes above free with std::free, a
// mismatch AddressSanitizer reports. They are never failed on purpose: a caller of a nothrow form
// copes with null by design (stable_sort sorts in place), so failing one proves nothing about the
// strong guarantee, and the sweep below stops at the first operation that completes.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  const auto align = static_cast<std::size_t>(alignment);
  return std::aligned_alloc(align, (std::max<std::size_t>(size, 1) + align - 1) / align * align);
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  const auto align = static_cast<std::size_t>(alignment);
  return std::aligned_alloc(align, (std::max<std::size_t>(size, 1) + align - 1) / align * align);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }

using namespace topopreempt;

namespace {

int failures = 0;

void fail(const std::string& what) {
  if (++failures <= 10) std::fprintf(stderr, "FAILED: %s\n", what.c_str());
}

/// Everything a caller can observe of `state`, as text: ids, contains(), size(), the visit of
/// for_each_workload, every workload and placement, and per domain the used amounts, idle
/// devices, device occupancy and host occupants.
std::string dump(const Allocation& state) {
  const Topology& topology = state.topology();
  std::ostringstream out;
  out << "size " << state.size() << "\nids";
  const std::vector<WorkloadId> ids = state.workload_ids();
  for (WorkloadId id : ids) out << ' ' << id.value << (state.contains(id) ? "" : "(denied)");
  std::vector<std::uint64_t> visited;
  state.for_each_workload([&](const Workload& w) { visited.push_back(w.id.value); });
  std::sort(visited.begin(), visited.end());
  out << "\nvisited";
  for (std::uint64_t id : visited) out << ' ' << id;
  out << '\n';
  for (WorkloadId id : ids) {
    const Workload& w = state.workload(id);
    out << w.label() << " p" << w.priority << " r" << w.replicas << " min"
        << (w.min_replicas ? *w.min_replicas : -1) << ": " << state.placement(id).describe(topology)
        << '\n';
  }
  for (std::uint32_t d = 0; d < topology.size(); ++d) {
    const DomainId domain{d};
    out << d << ':' << topology.schema().format(state.used(domain)) << " idle "
        << state.idle_devices(domain) << " v" << state.domain_version(domain);
    if (topology.is_device(domain)) out << " occ " << state.device_occupancy(domain);
    if (topology.level(domain) == topology.host_level()) {
      std::vector<std::uint64_t> occupants;
      for (WorkloadId id : state.occupants(domain)) occupants.push_back(id.value);
      std::sort(occupants.begin(), occupants.end());
      out << " on";
      for (std::uint64_t id : occupants) out << ' ' << id;
    }
    out << '\n';
  }
  return out.str();
}

/// The aggregates recomputed from the placements must equal the maintained ones, and every
/// visited workload must be known to contains() (no ghost, no duplicate).
void check_consistent(const Allocation& state, const std::string& context) {
  const Topology& topology = state.topology();
  std::vector<ResourceVector> used(topology.size(), topology.schema().zeros());
  std::size_t visited = 0;
  bool ghost = false;
  state.for_each_workload([&](const Workload& w) {
    ++visited;
    ghost = ghost || !state.contains(w.id);
  });
  if (ghost || visited != state.size() || state.workload_ids().size() != state.size()) {
    fail(context + ": for_each_workload visits " + std::to_string(visited) + ", size() says " +
         std::to_string(state.size()) +
         (ghost ? " (a visited workload is denied by contains)" : ""));
  }
  for (WorkloadId id : state.workload_ids()) {
    for (const auto& replica : state.placement(id).replicas) {
      for (const auto& entry : replica.entries) {
        for (DomainId at = entry.domain; at.valid(); at = topology.parent(at)) {
          used[at.value] += entry.amount;
          if (at == Topology::root()) break;
        }
      }
    }
  }
  for (std::uint32_t d = 0; d < topology.size(); ++d) {
    if (used[d] != state.used(DomainId{d})) {
      fail(context + ": used amounts of " + topology.describe(DomainId{d}) + " drifted");
      return;
    }
  }
}

/// Runs `operation` with the k-th allocation failing, k = 1, 2, ..., until it completes or
/// throws something other than std::bad_alloc. Returns whether it completed; counts the
/// injected failures in `injected`.
bool run_with_faults(Allocation& state, const std::string& name,
                     const std::function<void(Allocation&)>& operation, std::uint64_t& injected) {
  const std::string before = dump(state);
  for (std::uint64_t k = 1; k < 100000; ++k) {
    arm(k);
    try {
      operation(state);
      disarm();
      check_consistent(state, name + " (completed at k=" + std::to_string(k) + ")");
      return true;
    } catch (const std::bad_alloc&) {
      disarm();
      ++injected;
      if (dump(state) != before) {
        fail(name + ": state changed by a std::bad_alloc at allocation " + std::to_string(k));
        return false;
      }
    } catch (const std::exception&) {
      disarm();
      if (dump(state) != before) fail(name + ": state changed by a rejected operation");
      return false;
    }
  }
  fail(name + ": never completed");
  return false;
}

}  // namespace

int main() {
  const auto topology = std::make_shared<const Topology>(shapes::cluster(shapes::hgx_h100(), 4, 2));
  Allocation state(topology);
  std::mt19937_64 random(20241111);
  const auto below = [&](std::uint64_t n) { return static_cast<std::int64_t>(random() % n); };
  const ResourceSchema& schema = topology->schema();
  std::uint64_t next_id = 1;
  std::uint64_t injected = 0;
  std::uint64_t completed = 0;
  std::uint64_t rejected = 0;

  for (int step = 0; step < 600; ++step) {
    const std::int64_t choice = below(10);
    const std::vector<WorkloadId> running = state.workload_ids();
    std::string name;
    std::function<void(Allocation&)> operation;
    bool expect_rejection = false;
    if (choice < 5 || running.empty()) {
      Workload workload;
      workload.id = WorkloadId{next_id++};
      workload.name = "w" + std::to_string(workload.id.value);
      workload.priority = static_cast<std::int32_t>(below(10));
      workload.replicas = static_cast<std::int32_t>(1 + below(3));
      workload.demand.whole_devices = static_cast<std::int32_t>(1 + below(2));
      workload.demand.resources = schema.make({{"cpu_milli", 1000 * (1 + below(4))}});
      if (workload.replicas > 1 && below(2) == 0) workload.min_replicas = 1;
      if (below(3) == 0) workload.replica_scope = TopologyRequirement::guaranteed("numa");
      const auto found = find_placement(state, workload);
      if (!found.found) continue;
      name = "add " + workload.label();
      operation = [workload, placement = found.placement](Allocation& s) {
        s.add(workload, placement);
      };
    } else if (choice < 7) {
      const WorkloadId id = running[static_cast<std::size_t>(below(running.size()))];
      name = "remove " + std::to_string(id.value);
      operation = [id](Allocation& s) { s.remove(id); };
    } else if (choice < 9) {
      const WorkloadId id = running[static_cast<std::size_t>(below(running.size()))];
      const Workload& w = state.workload(id);
      std::vector<std::int32_t> drop;
      if (w.min_replicas && w.replicas > *w.min_replicas) {
        drop.push_back(static_cast<std::int32_t>(below(static_cast<std::uint64_t>(w.replicas))));
      } else {
        drop = {0, 0};  // invalid: repeated index (or not elastic): must be rejected
        expect_rejection = true;
      }
      name = "shrink " + std::to_string(id.value);
      operation = [id, drop](Allocation& s) { s.shrink(id, drop); };
    } else {
      // Hostile amounts: three CPU entries on one NUMA pool whose signed sum wraps to the demand.
      Workload workload;
      workload.id = WorkloadId{next_id++};
      workload.demand.resources = schema.make({{"cpu_milli", 1000}});
      const DomainId numa = topology->domains_at(topology->level_index("numa"))[0];
      const auto cpu = [&](Amount amount) { return schema.make({{"cpu_milli", amount}}); };
      Placement placement;
      placement.replicas.push_back({{{numa, cpu(std::numeric_limits<Amount>::max())},
                                     {numa, cpu(std::numeric_limits<Amount>::max())},
                                     {numa, cpu(1002)}}});
      name = "overflowing add " + workload.label();
      expect_rejection = true;
      operation = [workload, placement](Allocation& s) { s.add(workload, placement); };
    }
    const bool done = run_with_faults(state, name, operation, injected);
    if (done && expect_rejection) fail(name + ": accepted");
    (done ? completed : rejected) += 1;
  }
  // commit(): plans of every shape (evictions, shrinks, no preemption) applied under faults;
  // each failed attempt must leave the state as it was, the first completion must land it.
  std::uint64_t commits = 0;
  std::uint64_t conflicts = 0;
  for (int step = 0; step < 60; ++step) {
    Workload preemptor;
    preemptor.id = WorkloadId{next_id++};
    preemptor.name = "p" + std::to_string(preemptor.id.value);
    preemptor.priority = static_cast<std::int32_t>(10 + below(3));
    preemptor.replicas = static_cast<std::int32_t>(1 + below(2));
    preemptor.demand.whole_devices = static_cast<std::int32_t>(1 + below(4));
    preemptor.demand.resources = schema.make({{"cpu_milli", 1000}});
    const PreemptionPlan plan =
        solvers::greedy_solver{}.solve(state, preemptor, cost::priority_weighted{});
    if (plan.status == PlanStatus::infeasible) continue;
    bool landed = false;
    const bool done = run_with_faults(
        state, "commit for " + preemptor.label(),
        [&](Allocation& s) { landed = commit(s, plan, preemptor).committed; }, injected);
    if (!done || !landed) fail("commit for " + preemptor.label() + " did not land");
    commits += landed ? 1 : 0;
    // The same plan again is stale (its preemptor now runs): rejected, state unchanged.
    const std::string before = dump(state);
    try {
      static_cast<void>(commit(state, plan, preemptor));
      fail("a second commit of the plan for " + preemptor.label() + " was accepted");
    } catch (const std::invalid_argument&) {
      ++conflicts;
    }
    if (dump(state) != before) fail("a rejected commit changed the state");
    // Make room again so that later preemptors still need victims.
    if (below(2) == 0) state.remove(preemptor.id);
  }
  if (commits < 20) fail("only " + std::to_string(commits) + " commits exercised");

  // Allocation::reserve: a failed reservation changes nothing; a completed one neither.
  for (const std::size_t workloads : {std::size_t{64}, std::size_t{4096}}) {
    if (!run_with_faults(state, "reserve(" + std::to_string(workloads) + ")",
                         [&](Allocation& s) { s.reserve(workloads); }, injected)) {
      fail("reserve did not complete");
    }
  }

  // TopologyBuilder::add (flat storage: names, capacities and links appended together): every
  // injected failure leaves the builder as it was, so the tree built after the retries equals
  // one built without faults. 20 nodes under one rack cross the sibling hash's threshold (16).
  const auto build_tree = [&](bool faults) {
    TopologyBuilder builder({"cluster", "rack", "node", "gpu"}, ResourceSchema::standard(), "gpu",
                            "node");
    const auto add = [&](TopologyBuilder::Handle parent, const char* level, std::string name,
                         const ResourceVector& capacity) {
      for (std::uint64_t k = 1; faults && k < 1000; ++k) {
        const std::size_t size_before = builder.size();
        arm(k);
        try {
          const auto handle = builder.add(parent, level, name, capacity);
          disarm();
          return handle;
        } catch (const std::bad_alloc&) {
          disarm();
          ++injected;
          if (builder.size() != size_before) fail("a failed add changed the builder's size");
        }
      }
      return builder.add(parent, level, std::move(name), capacity);
    };
    const auto rack = add(TopologyBuilder::root(), "rack", "rack0", ResourceVector());
    for (int n = 0; n < 20; ++n) {
      const auto node = add(rack, "node", "node" + std::to_string(n),
                            schema.make({{"cpu_milli", 1000 * (n + 1)}}));
      (void)add(node, "gpu", "gpu0", schema.make({{"gpu_milli", 1000}}));
    }
    try {
      (void)builder.add(rack, "node", "node17");
      fail("a duplicate node name was accepted");
    } catch (const std::invalid_argument&) {
    }
    return builder.build();
  };
  const Topology clean = build_tree(false);
  const Topology faulted = build_tree(true);
  if (faulted.size() != clean.size() || faulted.capacities() != clean.capacities()) {
    fail("a topology built through injected failures differs from a clean one");
  }
  for (std::uint32_t d = 0; d < clean.size(); ++d) {
    if (faulted.describe(DomainId{d}) != clean.describe(DomainId{d})) {
      fail("domain " + clean.describe(DomainId{d}) + " differs after injected failures");
    }
  }

  std::printf(
      "fault injection: %llu commits, %llu stale commits rejected\n",
      static_cast<unsigned long long>(commits), static_cast<unsigned long long>(conflicts));
  std::printf(
      "fault injection: %llu operations completed, %llu rejected, %llu injected "
      "std::bad_alloc, %d failures\n",
      static_cast<unsigned long long>(completed), static_cast<unsigned long long>(rejected),
      static_cast<unsigned long long>(injected), failures);
  if (completed < 100 || injected < 1000) {
    std::fprintf(stderr, "FAILED: too little exercised\n");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
