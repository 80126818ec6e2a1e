// SPDX-License-Identifier: MIT
#pragma once
/// @file kube_default.hpp
/// `kube_default`: Kubernetes' DefaultPreemption (pkg/scheduler/framework/plugins/
/// defaultpreemption and framework/preemption) as a baseline solver. Its node fit check is a
/// node-level aggregate that ignores NUMA, socket and NVLink structure; the point of keeping it
/// is to measure what that blindness costs (victims evicted for a placement that then breaks the
/// preemptor's guaranteed scope).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/detail/common.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/detail/dependencies.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::baselines {

namespace detail {

/// One lower-priority pod of a node: one replica of a running workload (a gang of R replicas on
/// one node is R pods, as Kubernetes sees it).
struct KubePod {
  WorkloadId id;
  std::int32_t priority = 0;
  double start_time_s = 0.0;
  std::int32_t replica = 0;
  std::int32_t gang_replicas = 1;
  std::uint32_t entry_begin = 0;  ///< its entries in the node's `KubeNodeLedger` tables
  std::uint32_t entry_end = 0;
};

/// Kubernetes' `MoreImportantPod` (higher priority, then earlier start), then id and replica so
/// that equal pods still order deterministically.
[[nodiscard]] inline bool more_important(const KubePod& a, const KubePod& b) noexcept {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.start_time_s != b.start_time_s) return a.start_time_s < b.start_time_s;
  if (a.id != b.id) return a.id < b.id;
  return a.replica < b.replica;
}

/// What `SelectVictimsOnNode` leaves on one node, with the keys `pickOneNodeForPreemption`
/// compares.
struct KubeNodeCandidate {
  DomainId node;
  std::vector<KubePod> victims;    ///< most important first (the reprieve order)
  std::size_t reprieved = 0;       ///< pods added back
  std::int64_t priority_sum = 0;   ///< sum of (priority + 2^31), as Kubernetes sums
  double top_start_s = 0.0;        ///< earliest start among the highest-priority victims
  std::size_t ordinal = 0;         ///< the node's index among the host-level domains

  [[nodiscard]] std::int32_t highest_priority() const { return victims.front().priority; }
};

/// Compares two candidates by `pickOneNodeForPreemption`'s criteria (no PDBs here, so the first
/// one is skipped); ties go to the lower domain id. Returns the deciding criterion's name and
/// whether `a` wins.
[[nodiscard]] inline std::pair<std::string_view, bool> compare_nodes(const KubeNodeCandidate& a,
                                                                     const KubeNodeCandidate& b) {
  if (a.highest_priority() != b.highest_priority()) {
    return {"highest victim priority", a.highest_priority() < b.highest_priority()};
  }
  if (a.priority_sum != b.priority_sum) return {"sum of victim priorities", a.priority_sum < b.priority_sum};
  if (a.victims.size() != b.victims.size()) return {"number of victims", a.victims.size() < b.victims.size()};
  if (a.top_start_s != b.top_start_s) {
    return {"start time of the highest-priority victims", a.top_start_s > b.top_start_s};
  }
  return {"domain id (all criteria tie)", a.node < b.node};
}

/// Node-level aggregates of one host, as the topology-blind fit check sees them: free pooled
/// amounts summed over the node, and per device its occupancy and free device amounts. Pods are
/// taken out and put back in O(entries); buffers are reused from node to node.
class KubeNodeLedger {
 public:
  /// Loads the node's free capacity from `view` and forgets all pods.
  template <CapacityView View>
  void reset(const View& view, DomainId node) {
    const Topology& topology = view.topology();
    dims_ = topology.schema().size();
    devices_ = topology.domains_at(topology.device_level(), node);
    node_free_.resize(dims_);
    for (std::size_t i = 0; i < dims_; ++i) node_free_[i] = view.free(node, i);
    occupancy_.resize(devices_.size());
    device_free_.resize(devices_.size() * dims_);
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      occupancy_[d] = view.device_occupancy(devices_[d]);
      for (std::size_t i = 0; i < dims_; ++i) device_free_[d * dims_ + i] = view.free(devices_[d], i);
    }
    entry_device_.clear();
    entry_amount_.clear();
  }

  /// Records entries [first, last) of `workload` (one replica on this node); returns their
  /// [begin, end) range in the ledger's tables.
  std::pair<std::uint32_t, std::uint32_t> add_pod_entries(const Topology& topology,
                                                          const WorkloadView& workload,
                                                          std::size_t first, std::size_t last) {
    const auto begin = static_cast<std::uint32_t>(entry_device_.size());
    for (std::size_t e = first; e < last; ++e) {
      const DomainId domain = workload.domains[e];
      std::int32_t device = -1;
      if (topology.is_device(domain)) {
        const auto it = std::lower_bound(devices_.begin(), devices_.end(), domain);
        device = static_cast<std::int32_t>(it - devices_.begin());
      }
      entry_device_.push_back(device);
      for (std::size_t i = 0; i < dims_; ++i) entry_amount_.push_back(workload.amount(e, i));
    }
    return {begin, static_cast<std::uint32_t>(entry_device_.size())};
  }

  /// Frees (sign +1) or takes back (sign -1) what `pod` holds on the node.
  void move_pod(const KubePod& pod, int sign) {
    for (std::uint32_t e = pod.entry_begin; e < pod.entry_end; ++e) {
      const std::int32_t device = entry_device_[e];
      for (std::size_t i = 0; i < dims_; ++i) {
        const Amount amount = sign * entry_amount_[e * dims_ + i];
        node_free_[i] += amount;
        if (device >= 0) device_free_[static_cast<std::size_t>(device) * dims_ + i] += amount;
      }
      if (device >= 0) occupancy_[static_cast<std::size_t>(device)] -= sign;
    }
  }

  /// The topology-blind check: enough idle devices on the node (or one device with enough free
  /// share), and every pooled dimension's node-wide free sum covers the demand. NUMA, socket,
  /// NVLink, replica and gang scopes are ignored on purpose.
  [[nodiscard]] bool fits(const ResolvedDemand& demand) const {
    if (demand.whole_devices > 0) {
      std::int64_t idle = 0;
      for (std::int64_t occupancy : occupancy_) idle += occupancy == 0 ? 1 : 0;
      if (idle < demand.whole_devices) return false;
    } else if (demand.has_share) {
      bool any = false;
      for (std::size_t d = 0; d < devices_.size() && !any; ++d) {
        any = true;
        for (std::size_t i = 0; i < dims_; ++i) {
          const Amount need = demand.share(static_cast<Eigen::Index>(i));
          if (need > 0 && device_free_[d * dims_ + i] < need) any = false;
        }
      }
      if (!any) return false;
    }
    for (std::size_t i = 0; i < dims_; ++i) {
      if (node_free_[i] < demand.pooled(static_cast<Eigen::Index>(i))) return false;
    }
    return true;
  }

 private:
  std::size_t dims_ = 0;
  std::span<const DomainId> devices_;
  std::vector<Amount> node_free_;
  std::vector<std::int64_t> occupancy_;
  std::vector<Amount> device_free_;    // devices x dims
  std::vector<std::int32_t> entry_device_;  // per pod entry: device index or -1 (a pool)
  std::vector<Amount> entry_amount_;   // entries x dims
};

/// Why a node did not host a replica (`none`: it was a candidate, or never judged).
enum class VerdictKind : std::uint8_t { none, no_fit, zero_victims, lost };

/// Victim pods and their highest priority, for messages.
struct VictimTally {
  std::size_t victims = 0;
  std::int32_t highest = 0;
};

/// A node's verdict in compact form; formatted only for the few the plan keeps.
struct NodeVerdict {
  VerdictKind kind = VerdictKind::none;
  std::int32_t round = 0;
  std::size_t pods = 0;            ///< lower-priority pods (no_fit)
  std::string_view criterion;      ///< deciding criterion (lost)
  VictimTally own;                 ///< its victims (lost)
  VictimTally winner_tally;        ///< the winner's victims (lost)
  DomainId winner;                 ///< the winning node (lost)
};

/// One Kubernetes preemption pass over the cluster for a whole (possibly multi-replica)
/// preemptor, pod by pod, on an overlay of the state. Not part of the public API.
class KubeDefaultRun {
 public:
  /// How one victim workload came to be evicted.
  struct Eviction {
    WorkloadId id;
    DomainId node;
    std::int32_t replica_round = 0;  ///< which preemptor replica needed it
    std::int32_t pods_on_node = 0;   ///< its pods among the node's victims
  };

  KubeDefaultRun(const Allocation& state, const Workload& preemptor, const ResolvedDemand& demand)
      : state_(state), topology_(state.topology()), preemptor_(preemptor), overlay_(state) {
    single_ = demand;
    single_.replicas = 1;
    // Required pod anti-affinity (InterPodAffinity's filter): a node holding one of the gang's
    // pods is filtered out for the next ones, in the direct fit and in preemption alike.
    anti_affinity_ = demand.distinct_hosts;
    single_.distinct_hosts = false;
    // Each replica is scheduled as a lone pod: the default scheduler knows no gangs.
    single_.gang_required.reset();
    single_.gang_preferred.reset();
    relaxed_ = single_;
    relaxed_.unit_level = topology_.host_level();
    relaxed_.replica_preferred.reset();
  }

  /// The last verdict of every node that lost in some round and won in none, by domain id;
  /// formats the first `limit` only (formatting 10,000 reasons would dominate the decision).
  [[nodiscard]] std::vector<DomainVerdict> losers(std::size_t limit, std::uint64_t& total) const {
    std::vector<DomainVerdict> result;
    total = 0;
    const auto hosts = topology_.domains_at(topology_.host_level());
    // Every round may have placed its replica directly: then no node was ever judged.
    for (std::size_t h = 0; h < hosts.size() && h < verdicts_.size(); ++h) {
      const NodeVerdict& verdict = verdicts_[h];
      if (verdict.kind == VerdictKind::none ||
          std::find(replica_nodes.begin(), replica_nodes.end(), hosts[h]) != replica_nodes.end()) {
        continue;
      }
      ++total;
      if (result.size() < limit) result.push_back({hosts[h], describe(verdict)});
    }
    return result;
  }

  /// Schedules every replica in turn; false (with `failure`) when some replica has no
  /// candidate node at all.
  bool run() {
    for (std::int32_t r = 0; r < preemptor_.replicas; ++r) {
      // solve() already tried a lone replica against the unchanged state.
      if (!round(r, r > 0 || preemptor_.replicas > 1)) return false;
    }
    return true;
  }

  std::vector<Eviction> evictions;          ///< in eviction order
  Placement placement;                      ///< of the preemptor, replica by replica
  std::vector<DomainId> replica_nodes;      ///< node of each replica
  std::vector<bool> replica_scope_broken;   ///< placed with scopes relaxed
  std::vector<std::string> round_notes;     ///< one line per replica
  std::string failure;                      ///< why the last round found no node
  SolverStatistics statistics;

 private:
  bool round(std::int32_t r, bool try_direct) {
    const std::string who = "replica " + std::to_string(r);
    // The scheduler's own (topology-aware) filter runs first; preemption is its PostFilter
    // fallback.
    if (try_direct) {
      const PlacementSearchResult direct = direct_placement();
      if (direct.found) {
        const ReplicaPlacement& replica = direct.placement.replicas.front();
        const DomainId node =
            replica.entries.empty()
                ? DomainId{}
                : topology_.ancestor_at(replica.entries.front().domain, topology_.host_level());
        place(replica, node, false);
        round_notes.push_back(who + ": scheduled without preemption");
        return true;
      }
    }
    // Kubernetes' filter (NodeResourcesFit) is topology-blind: a pod that fits some node by
    // node-level aggregates is bound there and nothing is preempted, even if no placement on
    // that node honours its scopes (the kubelet's topology manager decides only after binding).
    if (const std::optional<DomainId> node = first_blind_fit()) {
      const PlacementSearchResult on_node = find_placement(overlay_, single_, *node);
      const PlacementSearchResult& chosen =
          on_node.found ? on_node : find_placement(overlay_, relaxed_, *node);
      if (!chosen.found) {
        throw std::logic_error("kube_default: aggregate fit on " + topology_.describe(*node) +
                               " but no relaxed placement (internal inconsistency)");
      }
      place(chosen.placement.replicas.front(), *node, !on_node.found);
      round_notes.push_back(
          who + ": bound to " + topology_.path(*node) +
          " without preemption: it fits there by node-level aggregate" +
          (on_node.found ? "" : ", but no placement there honours its guaranteed replica scope "
                                "(a wasted placement)"));
      return true;
    }
    candidate_count_ = 0;
    std::size_t rejected_here = 0;
    const auto hosts = topology_.domains_at(topology_.host_level());
    verdicts_.resize(hosts.size());
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      if (holds_a_replica(hosts[h])) continue;  // filtered out by anti-affinity
      ++statistics.domains_considered;
      const VerdictKind kind = select_victims_on_node(hosts[h]);
      if (kind == VerdictKind::none) {
        ++statistics.domains_solved;
        candidates_[candidate_count_ - 1].ordinal = h;
      } else {
        ++statistics.domains_pruned;
        ++rejected_here;
        verdicts_[h] = {kind, r, pods_.size(), {}, {}, {}, {}};
      }
    }
    if (candidate_count_ == 0) {
      failure = who + ": no node can host it even after removing every lower-priority pod (" +
                std::to_string(rejected_here) + " nodes rejected)";
      return false;
    }
    std::size_t best = 0;
    for (std::size_t c = 1; c < candidate_count_; ++c) {
      if (compare_nodes(candidates_[c], candidates_[best]).second) best = c;
    }
    const KubeNodeCandidate& chosen = candidates_[best];
    for (std::size_t c = 0; c < candidate_count_; ++c) {
      if (c == best) continue;
      verdicts_[candidates_[c].ordinal] = {VerdictKind::lost,
                                           r,
                                           0,
                                           compare_nodes(candidates_[c], chosen).first,
                                           tally(candidates_[c]),
                                           tally(chosen),
                                           chosen.node};
    }
    evict(chosen, r);
    // Kubernetes nominates the node; the topology-aware placement on it may still fail.
    const PlacementSearchResult on_node = find_placement(overlay_, single_, chosen.node);
    if (on_node.found) {
      place(on_node.placement.replicas.front(), chosen.node, false);
      round_notes.push_back(who + ": preempted on " + topology_.path(chosen.node) + " (" +
                            summary(chosen) + ", " + std::to_string(chosen.reprieved) +
                            " reprieved); placement honours its scopes");
      return true;
    }
    const PlacementSearchResult relaxed = find_placement(overlay_, relaxed_, chosen.node);
    if (!relaxed.found) {
      throw std::logic_error("kube_default: aggregate fit on " + topology_.describe(chosen.node) +
                             " but no relaxed placement (internal inconsistency)");
    }
    place(relaxed.placement.replicas.front(), chosen.node, true);
    round_notes.push_back(who + ": preempted on " + topology_.path(chosen.node) + " (" +
                          summary(chosen) + ", " + std::to_string(chosen.reprieved) +
                          " reprieved), but the node-level fit was topology-blind: no placement "
                          "there honours its guaranteed replica scope, so it is placed with "
                          "scopes relaxed (wasted preemption)");
    return true;
  }

  /// Whether anti-affinity filters `node` out: it already holds a replica of the preemptor.
  [[nodiscard]] bool holds_a_replica(DomainId node) const {
    return anti_affinity_ &&
           std::find(replica_nodes.begin(), replica_nodes.end(), node) != replica_nodes.end();
  }

  /// The scheduler's own filter: `find_placement` of one pod over the cluster, or, under
  /// anti-affinity, over the nodes not holding a replica yet (fewest idle devices first, then
  /// the first node: find_placement's best fit).
  [[nodiscard]] PlacementSearchResult direct_placement() const {
    if (!anti_affinity_) return find_placement(overlay_, single_, Topology::root());
    PlacementSearchResult best;
    DomainId best_node;
    for (DomainId host : topology_.domains_at(topology_.host_level())) {
      if (holds_a_replica(host)) continue;
      if (best_node.valid() && overlay_.idle_devices(host) >= overlay_.idle_devices(best_node))
        continue;
      PlacementSearchResult found = find_placement(overlay_, single_, host);
      if (!found.found) continue;
      best = std::move(found);
      best_node = host;
    }
    return best;
  }

  /// The first node (in domain order) where the pod fits by the topology-blind aggregate check
  /// as the overlay stands. Upstream scores the fitting nodes; we take the first (documented).
  [[nodiscard]] std::optional<DomainId> first_blind_fit() {
    for (DomainId host : topology_.domains_at(topology_.host_level())) {
      if (holds_a_replica(host)) continue;
      ledger_.reset(overlay_, host);
      if (ledger_.fits(single_)) return host;
    }
    return std::nullopt;
  }

  /// `SelectVictimsOnNode`: remove every lower-priority pod, check the fit, reprieve in
  /// priority order. Appends a candidate (returns `none`), or says why the node is none.
  VerdictKind select_victims_on_node(DomainId node) {
    ledger_.reset(overlay_, node);
    pods_.clear();
    // Pods are sorted below by importance; the ledger's entry order does not matter.
    state_.for_each_occupant_unordered(node, [&](const WorkloadView& view) {
      const Workload& workload = view.workload;
      if (!workload.preemptible || workload.priority >= preemptor_.priority) return;
      if (std::binary_search(evicted_.begin(), evicted_.end(), workload.id)) return;
      for (std::size_t r = 0; r < view.replica_begin.size(); ++r) {
        const auto [first, last] = view.replica_entries(r);
        // A replica never spans hosts, so its first entry tells where it runs.
        if (first == last ||
            topology_.ancestor_at(view.domains[first], topology_.host_level()) != node) {
          continue;
        }
        const auto [begin, end] = ledger_.add_pod_entries(topology_, view, first, last);
        pods_.push_back({workload.id, workload.priority, workload.cost.start_time_s,
                         static_cast<std::int32_t>(r), workload.replicas, begin, end});
      }
    });
    statistics.victims_considered += pods_.size();
    for (const KubePod& pod : pods_) ledger_.move_pod(pod, +1);
    if (!ledger_.fits(single_)) return VerdictKind::no_fit;
    std::sort(pods_.begin(), pods_.end(), more_important);
    // Candidate slots are reused from round to round and node to node: no allocation once
    // their victim lists have grown.
    if (candidate_count_ == candidates_.size()) candidates_.emplace_back();
    KubeNodeCandidate& candidate = candidates_[candidate_count_];
    candidate.node = node;
    candidate.victims.clear();
    candidate.reprieved = 0;
    candidate.priority_sum = 0;
    for (const KubePod& pod : pods_) {
      ledger_.move_pod(pod, -1);
      if (ledger_.fits(single_)) {
        ++candidate.reprieved;
      } else {
        ledger_.move_pod(pod, +1);
        candidate.victims.push_back(pod);
      }
    }
    if (candidate.victims.empty()) {
      // Kubernetes' DryRunPreemption: a node that "fits" without victims after the filter
      // rejected it is not a candidate ("expected at least one victim pod on node").
      return VerdictKind::zero_victims;
    }
    constexpr std::int64_t offset = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
    candidate.top_start_s = std::numeric_limits<double>::infinity();
    for (const KubePod& pod : candidate.victims) {
      candidate.priority_sum += pod.priority + offset;
      if (pod.priority == candidate.highest_priority()) {
        candidate.top_start_s = std::min(candidate.top_start_s, pod.start_time_s);
      }
    }
    ++candidate_count_;
    return VerdictKind::none;
  }

  void evict(const KubeNodeCandidate& chosen, std::int32_t r) {
    for (const KubePod& pod : chosen.victims) {
      const auto it = std::lower_bound(evicted_.begin(), evicted_.end(), pod.id);
      if (it != evicted_.end() && *it == pod.id) continue;
      evicted_.insert(it, pod.id);
      // Preempting one pod of a gang takes every replica down, wherever it runs.
      overlay_.release(state_.placement(pod.id));
      const auto pods = std::count_if(chosen.victims.begin(), chosen.victims.end(),
                                      [&](const KubePod& p) { return p.id == pod.id; });
      evictions.push_back({pod.id, chosen.node, r, static_cast<std::int32_t>(pods)});
    }
  }

  void place(const ReplicaPlacement& replica, DomainId node, bool broken) {
    overlay_.consume(replica.entries);
    placement.replicas.push_back(replica);
    replica_nodes.push_back(node);
    replica_scope_broken.push_back(broken);
  }

  [[nodiscard]] static VictimTally tally(const KubeNodeCandidate& c) {
    return {c.victims.size(), c.highest_priority()};
  }
  [[nodiscard]] static std::string summary(const VictimTally& t) {
    return count_of(t.victims, "victim pod") + ", highest priority " + std::to_string(t.highest);
  }
  [[nodiscard]] static std::string summary(const KubeNodeCandidate& c) { return summary(tally(c)); }

  [[nodiscard]] std::string describe(const NodeVerdict& v) const {
    const std::string who = "replica " + std::to_string(v.round) + ": ";
    switch (v.kind) {
      case VerdictKind::no_fit:
        return who + (v.pods == 0 ? "does not fit and has no lower-priority pods"
                                  : "does not fit even without its " +
                                        count_of(v.pods, "lower-priority pod"));
      case VerdictKind::zero_victims:
        return who + "fits by node-level aggregate without victims but not with its topology";
      case VerdictKind::lost:
        return who + "lost on " + std::string(v.criterion) + " (" + summary(v.own) + " vs " +
               summary(v.winner_tally) + " on " + topology_.path(v.winner) + ")";
      case VerdictKind::none: break;
    }
    return {};
  }

  const Allocation& state_;
  const Topology& topology_;
  const Workload& preemptor_;
  ResolvedDemand single_;
  ResolvedDemand relaxed_;
  bool anti_affinity_ = false;  ///< the preemptor's replicas go to distinct nodes
  OverlayView<Allocation> overlay_;
  KubeNodeLedger ledger_;
  std::vector<KubePod> pods_;
  std::vector<WorkloadId> evicted_;  // sorted
  std::vector<KubeNodeCandidate> candidates_;  // the first candidate_count_ are this round's
  std::size_t candidate_count_ = 0;
  std::vector<NodeVerdict> verdicts_;  // per host ordinal: its last verdict
};

}  // namespace detail

/// Kubernetes' DefaultPreemption, modelled as a baseline.
///
/// For each replica of the preemptor in turn (the default scheduler knows no gangs: a
/// multi-replica preemptor is scheduled pod by pod, and victims accumulate across nodes):
/// 1. the scheduler's own filter runs first and is topology-blind (node-level aggregates, as
///    below, with nothing removed): if the pod fits some node, it is bound there and nothing is
///    preempted for it, placed honouring its scopes when that node allows it, else with scopes
///    relaxed (`topology_satisfied = false`: a wasted placement, not `infeasible`). Where a
///    placement honouring the scopes exists anywhere, that one is taken (generous to the
///    baseline: upstream's scoring could pick a worse fitting node);
/// 2. otherwise, on every node (`SelectVictimsOnNode`): remove every lower-priority pod
///    (preemptible, priority < the preemptor's; a gang replica on the node is one pod), check a
///    node-level aggregate fit that is topology-blind (idle devices on the node >= whole devices,
///    or some device with enough free share; pooled dimensions summed over the node), then
///    reprieve pods in `MoreImportantPod` order (priority descending, earlier start first, then
///    id) while the pod still fits. A node that fits with no victims is no candidate, as in
///    `DryRunPreemption`;
/// 3. pick the node as `pickOneNodeForPreemption` does (no PDBs here): lowest highest-victim
///    priority, smallest sum of (priority + 2^31), fewest victim pods, latest *earliest* start
///    time among the highest-priority victims (Kubernetes' `GetEarliestPodStartTime`), then the
///    lowest domain id;
/// 4. evict the victims: preempting one pod of a gang evicts the whole gang, wherever it runs;
/// 5. place the replica on the chosen node honouring its scopes; when the topology-blind fit
///    was wrong, place it with scopes relaxed and report `topology_satisfied = false`, the
///    wasted preemption the baseline exists to show. A broken guaranteed gang scope (replicas
///    placed pod by pod) is reported the same way.
///
/// Where it knowingly differs from upstream: docs/baselines.md.
///
/// Status: `no_preemption_needed` when no pod needed victims (with `topology_satisfied = false`
/// when some were bound topology-blind, breaking their scopes); `feasible` with victims (no optimality claim; `lower_bound` = 0), `infeasible` when
/// some replica has no candidate node. Cost = sum of `cost_model.evict` over the victims; elastic
/// victims are always evicted whole. Thread-safety: `solve` is const and reads `state` only.
struct kube_default_solver {
  /// The name plans and reports carry.
  static constexpr std::string_view name = "kube_default";
  /// A reference for comparison, not a solver to deploy (`is_baseline_v`).
  static constexpr bool is_baseline = true;

  /// Chooses victims for `preemptor` (see the type's documentation). Throws
  /// `std::invalid_argument` naming the preemptor if it is invalid or already running, and the
  /// cost model's error for an invalid price; `state` is never modified.
  template <CostModel M>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const M& cost_model) const {
    const auto started = std::chrono::steady_clock::now();
    const Topology& topology = state.topology();
    const ResolvedDemand demand = detail::resolve_preemptor(state, preemptor, name);
    check_price_sum(state, preemptor, cost_model);
    PreemptionPlan plan;
    plan.solver = std::string(name);
    plan.lower_bound = 0.0;
    const auto finish = [&]() -> PreemptionPlan {
      plan.statistics.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      topopreempt::detail::record_dependencies(state, preemptor, plan);  // what commit checks
      // Like the solvers' explanations, it ends its last line: a caller that prints something
      // after it starts on a line of its own.
      if (!plan.explanation.ends_with('\n')) plan.explanation += '\n';
      return std::move(plan);
    };

    if (detail::fits_already(state, demand, plan)) {
      plan.explanation = "kube_default: " + preemptor.label() +
                         " fits as the cluster stands; no preemption needed (placed in " +
                         topology.describe(plan.target_domain) + ")";
      return finish();
    }

    detail::KubeDefaultRun run(state, preemptor, demand);
    const bool placed = run.run();
    plan.statistics = run.statistics;
    if (!placed) {
      plan.status = PlanStatus::infeasible;
      plan.rejected = run.losers(detail::max_rejected_verdicts, plan.rejected_total);
      plan.explanation = "kube_default: " + preemptor.label() + " is infeasible: " + run.failure;
      if (!run.evictions.empty()) {
        plan.explanation += " (earlier replicas would already have preempted " +
                            std::to_string(run.evictions.size()) + " workloads)";
      }
      return finish();
    }

    // Victims, sorted by id, priced by the cost model.
    std::vector<detail::KubeDefaultRun::Eviction> evictions = run.evictions;
    std::sort(evictions.begin(), evictions.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    for (const auto& eviction : evictions) {
      const Workload& victim = state.workload(eviction.id);
      Victim v;
      v.id = eviction.id;
      v.action = VictimAction::evict;
      v.cost = checked_cost(static_cast<double>(cost_model.evict(victim)), M::name, victim);
      v.reason = "priority " + std::to_string(victim.priority) + " < " +
                 std::to_string(preemptor.priority) + "; " + std::to_string(eviction.pods_on_node) +
                 " of its pods stayed victims after the reprieve on " +
                 topology.path(eviction.node) + " for preemptor replica " +
                 std::to_string(eviction.replica_round);
      if (victim.replicas > eviction.pods_on_node) {
        v.reason += "; preempting it evicts the whole gang of " + std::to_string(victim.replicas) +
                    " replicas";
      }
      plan.cost += v.cost;
      plan.victims.push_back(std::move(v));
    }

    plan.placement = std::move(run.placement);
    const bool broken = std::find(run.replica_scope_broken.begin(), run.replica_scope_broken.end(),
                                  true) != run.replica_scope_broken.end();
    const DomainId enclosing = plan.placement.enclosing_domain(topology);
    const bool gang_broken =
        demand.gang_required && !topology.lies_within_level(enclosing, *demand.gang_required);
    plan.topology_satisfied = !broken && !gang_broken;
    // The node (or the lowest domain holding every replica's node): replicas never span hosts.
    plan.target_domain = run.replica_nodes.front();
    for (DomainId node : run.replica_nodes) {
      plan.target_domain = topology.lowest_common_ancestor(plan.target_domain, node);
    }
    detail::set_levels(plan, topology);
    // Pods bound without victims (by the topology-blind filter, or each fitting alone while
    // breaking the gang's guarantee) needed no preemption, as Kubernetes sees it; the broken
    // topology is reported by `topology_satisfied = false`, the wasted placement.
    plan.status = plan.victims.empty() ? PlanStatus::no_preemption_needed : PlanStatus::feasible;
    plan.rejected = run.losers(detail::max_rejected_verdicts, plan.rejected_total);

    std::string text = "kube_default: " + preemptor.label() + " (priority " +
                       std::to_string(preemptor.priority) + ", " +
                       std::to_string(preemptor.replicas) + " replica" +
                       (preemptor.replicas == 1 ? "" : "s") + ", scheduled pod by pod): ";
    for (std::size_t i = 0; i < run.round_notes.size(); ++i) {
      text += (i == 0 ? "" : "; ") + run.round_notes[i];
    }
    text += ". " + std::to_string(plan.victims.size()) + " victim" +
            (plan.victims.size() == 1 ? "" : "s") + ", cost " + std::to_string(plan.cost) + " (" +
            std::string(M::name) + ")";
    for (const Victim& v : plan.victims) {
      text += "; " + state.workload(v.id).label() + ": " + v.reason;
    }
    if (gang_broken) {
      text += ". Its guaranteed gang scope '" + preemptor.gang_scope.level +
              "' is broken: the replicas span " + topology.describe(enclosing);
    }
    text += plan.topology_satisfied ? ". Topology requirements hold."
                                    : ". Topology requirements are NOT satisfied.";
    detail::append_losers(text, plan, topology, "node");
    plan.explanation = std::move(text);
    return finish();
  }
};

/// Ready-to-use instance: `kube_default.solve(state, preemptor, cost_model)`.
inline constexpr kube_default_solver kube_default{};

}  // namespace topopreempt::baselines
