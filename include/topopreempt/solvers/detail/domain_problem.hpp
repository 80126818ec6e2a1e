// SPDX-License-Identifier: MIT
#pragma once
/// @file domain_problem.hpp
/// What a decision works on inside one target domain: victim options and candidates, topology
/// tiers, scan workspaces and caches, the problem a `DomainSearch` solves and its outcome, and
/// search limits.

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/index_band.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/detail/dependencies.hpp"
#include "topopreempt/plan/detail/statistics.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt::detail {

using Clock = std::chrono::steady_clock;

/// One way to treat a candidate victim: evict it (no dropped replicas) or drop some replicas.
struct VictimOption {
  double cost = 0.0;
  std::vector<std::int32_t> dropped;  ///< empty = evict the whole gang
  std::vector<double> gain;           ///< freed per relaxation dimension (upper bound)
};

/// A running workload that may be preempted for the current target domain.
struct CandidateVictim {
  WorkloadId id;
  const Workload* workload = nullptr;
  std::vector<VictimOption> options;  ///< [0] = evict; then every shrink, fewest dropped first
  bool options_complete = true;       ///< false when shrink subsets were too many to list
};

/// Elastic victims with at most this many replicas in reach get every subset of them as a
/// shrink option (which replicas go matters); beyond it, prefixes only (and no exactness claim).
inline constexpr std::size_t max_enumerated_replicas = 7;

/// A relaxation dimension that cannot be covered: `have` of `need` (capacity, or what all
/// `victims` eligible victims would free).
struct Shortfall {
  std::size_t dim = 0;
  double have = 0.0;
  double need = 0.0;
  std::size_t victims = 0;
};

/// One topology tier: the demand with its levels made concrete (best-effort levels become
/// guaranteed at the tier's level) and the level of the candidate target domains.
struct Tier {
  ResolvedDemand demand;
  LevelIndex target_level = 0;
  int penalty = 0;  ///< levels short of the preferred ones (0 = preferred met)
  std::string label;
  std::vector<std::size_t> dims;  ///< relaxation dimensions (see PreemptionContext)
};

/// Reusable buffers of the per-domain scan, so scanning 10,000 domains allocates nothing
/// after the first few.
struct ScanWorkspace {
  /// Per-target accumulators of a batch.
  struct Target {
    DomainId reach;
    bool in_reach = false;
    std::size_t victims = 0;
    double dearest_sum = 0.0;  // the victims' dearest prices: bounds every sum a search forms
    std::vector<DomainId> measured_in;
    std::vector<double> need;
    std::vector<double> total;
    std::vector<double> gain;
    // Per dim: the least price of one action on a victim that frees some of it. A plan that
    // must free some of a dim acts on one such victim at least: a bound the fractional cover
    // misses when one victim frees more than the deficit (a 4-GPU victim for a 1-GPU gap).
    std::vector<double> least_action;
    std::vector<std::vector<std::pair<double, double>>> items;  // per dim: (cost ratio, gain)
  };
  std::vector<WorkloadId> seen;
  std::vector<Target> targets;
  std::vector<std::size_t> device_dims;  // relaxation dims fed by device entries
  std::vector<std::size_t> pooled_dims;  // relaxation dims fed by pool entries
  // Per host of a gang's target (the per-host bound, `PreemptionContext::scan_batch`): the
  // victims' (share of cheapest price per device entry, device entries on the host).
  std::vector<std::vector<std::pair<double, double>>> host_items;
  std::vector<std::pair<std::size_t, double>> victim_hosts;  // one victim: (host, entries)
  std::vector<DomainId> victim_host_ids;                     // one victim: hosts it touches
  std::vector<double> host_costs;

  /// Makes room for `batch` targets of `dims` dimensions (keeps capacity).
  void resize(std::size_t batch, std::size_t dims) {
    if (targets.size() < batch) targets.resize(batch);
    for (std::size_t t = 0; t < batch; ++t) {
      if (targets[t].need.size() == dims) continue;
      auto& target = targets[t];
      target.measured_in.resize(dims);
      target.need.resize(dims);
      target.total.resize(dims);
      target.gain.resize(dims);
      target.least_action.resize(dims);
      target.items.resize(dims);
    }
  }
};

/// What the cheap scan learns about one target.
struct ScanResult {
  std::optional<Shortfall> shortfall;
  double bound = 0.0;
  std::size_t victims = 0;
};

/// What a per-domain search found.
struct DomainOutcome {
  bool found = false;
  double cost = 0.0;
  std::vector<std::int32_t> choice;  ///< per victim: -1 = spared, else option index
  bool exact = false;                ///< proven minimum for this domain
  bool limit_reached = false;
  double lower_bound = 0.0;                  ///< proven bound for this domain (== cost when exact)
  std::string note;                          ///< e.g. why an exact method was not applicable
  std::optional<DowngradeReason> downgrade;  ///< set when not exact for that reason (note: detail)
};

/// The victim-selection problem inside one target domain.
struct DomainProblem {
  DomainId target;
  const Tier* tier = nullptr;
  std::vector<CandidateVictim> victims;  ///< ascending id
  std::vector<std::size_t> dims;         ///< relaxation dimensions (schema index or whole devices)
  std::vector<DomainId> measured_in;     ///< where each relaxation dimension is measured
  std::vector<double> demand_total;      ///< the preemptor's total demand per relaxation dim
  std::vector<double> need;              ///< deficit per relaxation dimension (>= 0)
  std::vector<std::string> dimension_names;
  double lower_bound = 0.0;
  /// The cost model's grid (see `GridPriceModel`; 0: none): bounds round up to it.
  double grid = 0.0;
  /// Victims of an earlier domain, kept with their buffers so that reading the next domain
  /// reuses them instead of allocating per victim (`build_problem`); not part of the problem.
  std::vector<CandidateVictim> spare;
  std::vector<std::int32_t> scratch_inside;   ///< `add_options`' scratch
  std::vector<std::int32_t> scratch_dropped;  ///< `add_options`' scratch
};

/// Why a domain lost, kept as numbers and formatted only for the few domains a plan lists.
struct Rejection {
  using Kind = RejectionKind;
  DomainId domain;
  Kind kind = Kind::bound;
  Shortfall shortfall;
  double value = 0.0;  ///< the domain's bound or cost
  double best = 0.0;   ///< the best cost it was compared with
  std::string note;
};

/// Ascending (bound, child id): the order in which a group's children, or its targets listed
/// unread, come up in a search's heap (`ScanCache::Opening::Child`, `ScanCache::ListedTarget`).
inline constexpr auto by_bound_then_child = [](const auto& a, const auto& b) {
  return a.bound < b.bound || (a.bound == b.bound && a.child < b.child);
};

/// A candidate of a tier's search (`TierSearch`), keyed by a lower bound on its cost: for a
/// read domain its scan bound (or the index bound if larger), for an unread one the index
/// bound of a priced model (`IndexPricedModel`) when it exceeds the price floor; or a group of
/// unread targets (a domain above them, `members` > 0) keyed by the group's index bound, which
/// bounds all of them (`group_price_bound`).
struct SearchCandidate {
  /// `run` of a candidate that stands for no run.
  static constexpr std::uint32_t no_run = std::numeric_limits<std::uint32_t>::max();
  double bound;  ///< a lower bound on the cost of any plan in it
  DomainId target;  ///< the target domain (a group's domain when `members` > 0)
  bool read = true;  ///< scanned: victims known, the bound is the scan bound
  /// A group: the tier's targets it holds (32 bits, as a `DomainId`, and the flags next to
  /// each other: a candidate is 32 bytes, and the heap is written afresh on every call).
  std::uint32_t members = 0;
  /// Unread, its per-host index bound not yet taken (`per_host_index_bound`, O(hosts)):
  /// taken when it comes up, and most never do.
  bool refine = false;
  /// A gang target pushed by a group opened only to list pruned targets (`prune_rest`),
  /// keyed by its group's, rack-level and rack-gang bounds until it comes up: then re-keyed
  /// by its per-host bound (O(hosts)) too. The rack-gang bound is never above the per-host
  /// one, so that is the bound it would have been listed by with the per-host bound taken
  /// at once (the same targets, bounds and order), and only those that come up take it
  /// (the closest dozen, not every rack).
  bool list_pending = false;
  /// A group that is a block of the preemption index (`Allocation::index_block_of`): its
  /// members' targets, `target` its first member, keyed by `block_price_bound` (or by
  /// `block_gang_bound` when its members are the targets).
  std::uint32_t block = Allocation::index_no_block;
  /// A run of an opened group's children (`SearchRun`): stands for all of them, keyed and
  /// named as the one of them that comes up next. `TierSearch::take_front` turns it into that
  /// child.
  std::uint32_t run = no_run;
};
static_assert(sizeof(SearchCandidate) <= 32, "the heap is written afresh each call");

/// A child of an opened group (or a target listed unread): its own bound (before its parent's
/// is taken into it), the child and the tier's targets it holds (0 for a target). What a
/// decider's cache keeps of an opening (`ScanCache::Opening::Child`) and of a listing
/// (`ScanCache::ListedTarget`), and what a search's run reads (`SearchRun`). 16 bytes.
struct SearchRunChild {
  double bound = 0.0;
  DomainId child;
  std::uint32_t members = 0;
};

/// Children of one opened group in [next, end), ascending (key, id), a child's key its bound
/// or `parent_bound`, whichever is larger: the order the heap would give them up in, so only
/// the first stands in it at a time, and the children that never come up (most, when a bound
/// closes the tier) are never pushed. They lie where a decider's cache keeps them (`kept`,
/// untouched for the rest of the tier's search), else in the search's `run_children`.
struct SearchRun {
  const SearchRunChild* kept;
  std::size_t next;
  std::size_t end;
  std::size_t members_left;  ///< targets held by the children not yet taken
  double parent_bound;
};

/// Scan results of the candidate domains of one preemptor class and cost model, kept across
/// decisions (see `IncrementalDecider`): per tier and target (by ordinal in its level), the
/// result and a digest of the versions of the domains the scan read. A result is reused while
/// that digest is unchanged. Not thread-safe: one decision at a time.
struct ScanCache {
  struct Entry {
    std::uint64_t key = 0;
    bool valid = false;
    ScanResult result;
    /// The preemption index's verdict (`index_shortfall`), keyed by the versions of the
    /// domains whose aggregates it reads.
    std::uint64_t index_key = 0;
    bool index_valid = false;
    std::optional<Shortfall> index_verdict;
    /// The index price bounds (`index_price_bound` without its per-host part, and
    /// `per_host_index_bound`), keyed by the versions of the target's reach and aggregate
    /// domains and of the hosts whose bands answer for them (which hold every host and band
    /// they read). Taken under `bounds_floor` and `bounds_grid`.
    std::uint64_t bound_key = 0;
    bool banded_valid = false;
    bool per_host_valid = false;
    double banded_bound = 0.0;
    double per_host_bound = 0.0;
  };
  std::vector<std::vector<Entry>> tiers;
  /// What one host adds to a per-host bound (`PreemptionContext::per_host_index_bound`): ready
  /// (its idle devices suffice), or the cover of its deficit by its bands' entries (per-victim
  /// part, cost, terms). A function of the host's idle devices and bands and of the tier, so
  /// kept with the host's version: a gang's target whose hosts mostly did not change takes
  /// the terms of those that changed only (a hundred changes touch a host or two per rack).
  struct HostTerms {
    std::uint64_t version = 0;
    bool valid = false;
    bool ready = false;
    std::uint32_t terms = 0;
    double per_victim = 0.0;
    double cost = 0.0;
  };
  /// Per tier, per host by ordinal.
  std::vector<std::vector<HostTerms>> host_terms;
  /// What never changes for a tier's target (the topology alone decides it), computed once:
  /// per target `1 + 2 x dims` domains (its reach, where each relaxation dimension is
  /// measured, and the indexed domain that answers for each of those), and the static
  /// capacity verdict (`too_small`).
  struct TierShape {
    bool ready = false;
    std::size_t stride = 0;
    std::vector<DomainId> domains;
    std::vector<std::optional<Shortfall>> too_small;
    /// The level of the groups that open into the tier's targets (a grouped tier's), and
    /// whether every domain a target's index bound reads (its reach, aggregate and indexed
    /// domains, the hosts below it) lies inside its group there: then the group's version
    /// covers the bounds of all its targets (`listed_bounds`).
    LevelIndex opening_level = 0;
    bool local = false;
    /// Whether the targets are hosts and each one's index bound reads only domains inside it
    /// (its row's, its aggregate for whole devices): its own version then covers its bound,
    /// so a changed group re-bounds only the targets that changed (`listed_bounds`).
    bool targets_local = false;
  };
  std::vector<TierShape> shapes;
  /// A bound taken from an index cover (`price_bound_of(index_cover_from(...))`), kept with
  /// everything the cover read: the digest of the bands it visited (the index's band digest of
  /// the domain or block, every priority's), the preemptor's priority (which bands it
  /// visited), the need (its bits) and whether it took the least action price. The bound is a
  /// function of those alone (and of the model, floor and grid), so when an index block that
  /// changed still has those bands and that need, the kept bound is its bound: a change that
  /// moved no band's extremes and not the most idle devices of a host keeps it, read from no
  /// band. Bands keep extremes, not sums, so most changes move none. Taken under
  /// `bounds_floor` and `bounds_grid`.
  struct KeptCover {
    bool valid = false;
    bool least_action = false;
    std::int32_t priority = 0;
    std::uint64_t need = 0;
    std::uint64_t band_digest = 0;
    double bound = 0.0;
  };
  /// A group's index bound (`group_price_bound`), kept with the group's version: a group
  /// whose subtree did not change has the same bands and idle devices, so the same bound, bit
  /// for bit. Taken under `bounds_floor` and `bounds_grid`.
  struct GroupBound {
    std::uint64_t version = 0;
    double bound = 0.0;
    bool valid = false;
  };
  /// Per tier, per level, per group by ordinal in its level (groups lie at or above the host
  /// level).
  std::vector<std::vector<std::vector<GroupBound>>> group_bounds;
  /// A target as `prune_rest` lists it, a child of its group that holds no targets: its index
  /// bound (`index_price_bound`, the per-host part included). The same as `Opening::Child`,
  /// so that both push as one run (`TierSearch::push_run`) and sort by `by_bound_then_child`.
  using ListedTarget = SearchRunChild;
  /// The targets of a group at `TierShape::opening_level` with their index bounds, in
  /// ascending (bound, id), as `prune_rest` lists a pruned group's targets (one run of the
  /// heap): kept with the group's version, for tiers whose shape is `local` (the group's
  /// version then covers every domain they read). Per tier, per group by ordinal in its
  /// level. Taken under `bounds_floor` and `bounds_grid`.
  struct ListedBounds {
    std::uint64_t version = 0;
    bool valid = false;
    /// `targets` are the group's, each with the bound it had at its version in `versions`
    /// (every one's taken once), though the group changed since: under
    /// `TierShape::targets_local` only the targets whose version changed are bounded again.
    bool shaped = false;
    std::vector<ListedTarget> targets;
    /// The targets' versions their bounds were taken at, ascending id (as the group's
    /// members, read side by side from `Allocation::versions_at`): kept only when
    /// `TierShape::targets_local`.
    std::vector<std::uint64_t> versions;
  };
  std::vector<std::vector<ListedBounds>> listed_bounds;
  /// What admitting one unread target decided (`TierSearch::admit`): rejected by its static
  /// capacity (`too_small`) or by the index (`hopeless`, with the shortfall), else its index
  /// bound (the per-host part aside) and, for a gang of whole hosts, whether its per-host
  /// bound is still to be taken (`refine`, the bound then raised by `target_gang_bound`). The
  /// bound the target waits by is this bound and its group's, whichever is larger.
  struct Admission {
    enum class Verdict : std::uint8_t { too_small, hopeless, admitted };
    Verdict verdict = Verdict::admitted;
    bool refine = false;
    double bound = 0.0;
    Shortfall shortfall;  ///< why it was rejected (not `admitted`)
  };
  /// The admissions of the targets of a group at `TierShape::opening_level`, in ascending
  /// target id, as the group opens into them: kept with the group's version, for tiers whose
  /// shape is `local` (every domain admitting a target reads then lies in its group, so the
  /// version covers them all). A group that did not change admits its targets without a look
  /// at each one's static check, index verdict and index bound. Per tier, per group by
  /// ordinal in its level. Taken under `bounds_floor` and `bounds_grid`.
  struct GroupAdmissions {
    std::uint64_t version = 0;
    bool valid = false;
    std::vector<Admission> targets;
  };
  std::vector<std::vector<GroupAdmissions>> admissions;
  /// What opening a group (or an index block) into the groups one level down pushed
  /// (`TierSearch::push_child_groups`): per child, its own bound (`group_price_bound`, before
  /// the parent's is taken into it), the child and how many of the tier's targets it holds,
  /// in ascending (bound, id): the order the children come up in; and the version each
  /// child's bound was taken at. Kept by the opened group's version, or for a block by a digest of
  /// its domains' versions: either covers every child's bound, and the counts are the
  /// topology's. A group that did not change opens as one run of its children, without a
  /// look at each child's version, count or bands; a changed one compares each child's
  /// version with the one its bound was kept by, and takes only the bounds of children that
  /// changed. 24 bytes a child (16 in `children`, 8 in `versions`), so at most one entry per
  /// group and block of the topology.
  struct Opening {
    using Child = SearchRunChild;
    std::uint64_t key = 0;
    bool valid = false;  ///< the children's bounds are those under `key`
    /// The children and their target counts are known (the topology's, for the children
    /// starting at `first`), even when their bounds are stale: a changed group opens by
    /// taking its children's bounds again, each by the child's own version, without finding
    /// which children hold targets and how many.
    bool shaped = false;
    DomainId first;  ///< the first child, so that a block's entry is for the same domains
    std::vector<Child> children;
    /// Every child's version its bound was taken at, in the order of the domains opened
    /// into (ascending id; those holding no targets too), read side by side from
    /// `Allocation::versions_at`.
    std::vector<std::uint64_t> versions;
  };
  /// Per tier: openings of groups, per level and ordinal in it (`group_openings`), and of
  /// index blocks, per block (`block_openings`). Taken under `bounds_floor` and `bounds_grid`.
  std::vector<std::vector<std::vector<Opening>>> group_openings;
  std::vector<std::vector<Opening>> block_openings;
  // A search's runs read kept children where they lie (`SearchRun::kept`): the entries
  // around them may move as their vectors grow, but only by moves, which keep the children's
  // storage.
  static_assert(std::is_nothrow_move_constructible_v<Opening>);
  static_assert(std::is_nothrow_move_constructible_v<ListedBounds>);
  /// Per index block, the host-level ordinals [first, last) of the hosts under its members
  /// (`PreemptionContext::block_host_ordinals`), found on first use: the topology's alone (two
  /// binary searches a block on an irregular tree, every call), so never dropped. An empty
  /// run means not yet found.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> block_hosts;
  /// Per tier, where the runs of its targets (`PreemptionContext::targets`, ascending id) under
  /// groups and index blocks start: the topology's alone, found on first use (two binary
  /// searches over every target each time, else), so never dropped. Per level, per group by
  /// ordinal in its level, the first target's position (`unknown` until found); per block,
  /// its run [first, last).
  struct TargetRuns {
    static constexpr std::uint32_t unknown = std::numeric_limits<std::uint32_t>::max();
    /// The level of the targets the runs are of (none yet: past any level).
    std::size_t target_level = std::numeric_limits<std::size_t>::max();
    std::vector<std::vector<std::uint32_t>> groups;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> blocks;
  };
  std::vector<TargetRuns> target_runs;
  /// Per level above the hosts, per group by ordinal in its level, the host-level ordinals
  /// [first, last) of the hosts under it (`PreemptionContext::domains_below_cached`, for
  /// `group_need_cached`), found on first use: the topology's alone, so never dropped. An
  /// empty run means not yet found.
  using OrdinalRuns = std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>>;
  OrdinalRuns group_hosts;
  /// The same for the domains one level below each group (`TierSearch::children_of`): on an
  /// irregular tree the topology finds them by binary search over the whole level.
  OrdinalRuns group_children;
  /// Per index block, the cover its bound (`block_price_bound`) was last taken from: a block
  /// no longer has the version digest it had (after a hundred changes nearly every block
  /// changed somewhere), but seldom other bands or another most idle host. Kept per block
  /// for every tier: the need is part of what it is kept with.
  std::vector<KeptCover> block_covers;
  /// Per level above the hosts, per group by ordinal in its level, the cover its bound
  /// (`group_price_bound`) was last taken from: as `block_covers`, for a group whose version
  /// changed (`group_price_bound_cached`). Kept for every tier, the need part of it.
  std::vector<std::vector<KeptCover>> group_covers;
  /// The preemptor's placement in the last plan with victims (`PreemptionContext::make_plan`),
  /// kept with the plan's tier and target, the version of the target's reach (whose subtree
  /// holds every device and pool the placement search reads) and the victims' chosen options
  /// in order. When the next plan has them all again, the state less those victims is the
  /// same inside the reach, so the placement is this one, without searching for it again.
  struct KeptPlacement {
    bool valid = false;
    std::uint32_t tier = 0;
    DomainId target;
    std::uint64_t reach_version = 0;
    std::vector<std::pair<WorkloadId, std::int32_t>> chosen;  ///< (victim, option), in order
    PlacementSearchResult result;
  };
  KeptPlacement plan_placement;
  /// A domain's search (`DomainSearch::search`) in a recent call: its outcome and what it
  /// added to the statistics' counters, kept with everything it was a function of: the
  /// search's type, the tier and target, the digest of the versions its scan read (`scan_key`:
  /// the target's reach holds every domain the problem and the search read), the incumbent it
  /// was searched against, the nodes the decision had explored before it and the domains left
  /// (a node budget's share). Kept only without a time limit (a clock is no input that can be
  /// compared) and when no limit stopped it. The last `kept_search_slots` searches are kept.
  struct KeptSearch {
    const void* search = nullptr;  ///< the search type's tag
    std::uint32_t tier = 0;
    DomainId target;
    std::uint64_t key = 0;
    std::uint64_t incumbent = 0;  ///< its bits
    std::uint64_t spent = 0;      ///< `SolverStatistics::nodes_explored` before it
    std::size_t domains_left = 0;
    DomainOutcome outcome;
    SolverStatistics counts;
  };
  static constexpr std::size_t kept_search_slots = 64;
  std::vector<KeptSearch> searches;
  std::size_t next_search_slot = 0;  ///< the slot the next new search replaces, when full
  /// A slot's problem (`SearchBuffers::kept_problems`).
  struct KeptProblem {
    bool valid = false;
    DomainId target;
    std::uint64_t key = 0;
  };
  /// A tier's search's buffers (`TierSearch`, which uses them where they lie): its heap, runs,
  /// unread targets, scratch and the two problem slots it reads domains into, kept from one
  /// call to the next with their capacity (their contents are the search's own, cleared or
  /// rebuilt before use, but for a problem a slot kept), so that a call allocates (nearly)
  /// nothing: a fresh allocation of the heap's size cost a warm call more than its growth did.
  struct SearchBuffers {
    std::vector<SearchCandidate> candidates;
    std::vector<SearchRunChild> run_children;
    std::vector<SearchRun> runs;
    std::vector<DomainId> unread;
    std::vector<DomainId> batch;
    std::vector<DomainId> same_host;
    std::vector<ListedTarget> listed;
    std::vector<std::size_t> changed_children;
    std::vector<Opening::Child> fresh_children;
    ScanWorkspace workspace;
    DomainProblem problem;
    DomainProblem spare_problem;  ///< the second slot (`TierSearch::best_problem`)
    /// What each slot (`problem`, `spare_problem`) holds: a target's problem read at the scan
    /// key (`Entry::key`) it had then, so that a later call that reads the same target at the
    /// same key (the last winner, mostly) takes it as it is (`TierSearch::reuse_problem`).
    std::array<KeptProblem, 2> kept_problems{};
    /// Empties every list (capacity kept); the workspace and problems are reset by their
    /// users.
    void clear() noexcept {
      candidates.clear();
      run_children.clear();
      runs.clear();
      unread.clear();
      batch.clear();
      same_host.clear();
      listed.clear();
      changed_children.clear();
      fresh_children.clear();
    }
  };
  std::vector<SearchBuffers> search_buffers;  ///< per tier
  /// The preemptor's resolved demand and tiers (`PreemptionContext`), built on the first call:
  /// functions of the topology and of the preemptor's fields below alone (its validation
  /// too), so that a call for the same ones builds, and allocates, none of them again.
  struct KeptTiers {
    const Topology* topology = nullptr;  ///< none kept yet
    std::int32_t replicas = 0;
    std::optional<std::int32_t> min_replicas;
    ReplicaDemand demand;
    TopologyRequirement replica_scope;
    TopologyRequirement gang_scope;
    bool distinct_hosts = false;
    ResolvedDemand resolved;
    std::vector<Tier> tiers;

    /// Whether these were built for `preemptor`'s fields above on `topology`.
    [[nodiscard]] bool kept_for(const Workload& preemptor, const Topology& on) const {
      const auto& resources = preemptor.demand.resources;
      return topology == &on && replicas == preemptor.replicas &&
             min_replicas == preemptor.min_replicas &&
             demand.whole_devices == preemptor.demand.whole_devices &&
             demand.resources.size() == resources.size() &&
             (demand.resources.array() == resources.array()).all() &&
             replica_scope == preemptor.replica_scope && gang_scope == preemptor.gang_scope &&
             distinct_hosts == preemptor.distinct_hosts;
    }
    /// Keeps `built_demand` and `built_tiers`, built for `preemptor` on `on`.
    void keep(const Workload& preemptor, const Topology& on, const ResolvedDemand& built_demand,
              const std::vector<Tier>& built_tiers) {
      topology = nullptr;  // stays so if a copy throws
      replicas = preemptor.replicas;
      min_replicas = preemptor.min_replicas;
      demand = preemptor.demand;
      replica_scope = preemptor.replica_scope;
      gang_scope = preemptor.gang_scope;
      distinct_hosts = preemptor.distinct_hosts;
      resolved = built_demand;
      tiers = built_tiers;
      topology = &on;
    }
  };
  KeptTiers kept_tiers;
  /// The fractional bound's scratch (`PreemptionContext::build_problem`), kept with its
  /// capacity.
  std::vector<std::pair<double, double>> fractional_items;
  /// The lists of a decision's rejection log (`RejectionLog`), kept with their capacity for
  /// the next call: growing them anew took a large allocation, and with it a sweep of
  /// malloc's freed chunks, on every call.
  std::vector<Rejection> scan_rejections;
  std::vector<Rejection> search_rejections;
  /// The price floor and cost grid every kept bound was taken under (their bits; a NaN bit
  /// pattern at first, which no declared floor has).
  std::uint64_t bounds_floor = ~std::uint64_t{0};
  std::uint64_t bounds_grid = ~std::uint64_t{0};
  /// Drops every kept bound unless `floor` and `grid` are, bit for bit, those they were taken
  /// under (a decider's never change: it decides for one preemptor under one model).
  void keep_bounds_for(double floor, double grid) {
    const auto floor_bits = std::bit_cast<std::uint64_t>(floor);
    const auto grid_bits = std::bit_cast<std::uint64_t>(grid);
    if (floor_bits == bounds_floor && grid_bits == bounds_grid) return;
    for (auto& entries : tiers) {
      for (Entry& entry : entries) entry.banded_valid = entry.per_host_valid = false;
    }
    host_terms.clear();
    group_bounds.clear();
    listed_bounds.clear();
    admissions.clear();
    group_openings.clear();
    block_openings.clear();
    block_covers.clear();
    group_covers.clear();
    bounds_floor = floor_bits;
    bounds_grid = grid_bits;
  }
  std::uint64_t group_hits = 0;    ///< group bounds answered from the cache
  std::uint64_t group_misses = 0;  ///< group bounds taken (and stored)
  std::uint64_t listed_hits = 0;    ///< pruned groups' target bounds answered from the cache
  std::uint64_t listed_misses = 0;  ///< pruned groups' target bounds taken (and stored)
  std::uint64_t admission_hits = 0;    ///< groups whose targets were admitted from the cache
  std::uint64_t admission_misses = 0;  ///< groups whose targets were admitted afresh (stored)
  std::uint64_t opening_hits = 0;    ///< groups opened into their children from the cache
  std::uint64_t opening_misses = 0;  ///< groups opened into their children afresh (stored)
  /// Bounds of changed index blocks answered from their kept cover (same bands, need).
  std::uint64_t cover_hits = 0;
  std::uint64_t cover_misses = 0;  ///< block covers taken afresh (and kept)
  std::uint64_t search_hits = 0;    ///< domain searches answered from `searches`
  std::uint64_t search_misses = 0;  ///< domain searches run
  std::uint64_t problem_hits = 0;      ///< domains' problems taken as a slot kept them
  std::uint64_t placement_hits = 0;    ///< plans placed from `plan_placement`
  std::uint64_t placement_misses = 0;  ///< plans placed by a search (and kept)
  std::uint64_t hits = 0;    ///< scans answered from the cache
  std::uint64_t misses = 0;  ///< scans done (and stored)
  /// Scratch of one batch, kept so that a batch (one per host) allocates nothing: the targets
  /// to scan and their version digests, computed once per target.
  std::vector<DomainId> stale_targets;
  std::vector<std::uint64_t> stale_keys;
};

/// Marks the "whole idle devices" relaxation dimension.
inline constexpr std::size_t whole_device_dimension = whole_devices_dimension;
/// Marks a shortfall of hosts: a target with fewer hosts than a `distinct_hosts` gang has
/// replicas (never a relaxation dimension: it is decided by the topology alone).
inline constexpr std::size_t distinct_host_dimension = distinct_hosts_dimension;

/// Limits shared by solvers that honour them. `time_limit` bounds the whole `solve` from its
/// first instruction: the scan of every candidate domain as well as the search (none by
/// default, so default results do not depend on machine load). Reaching it ends the solve with the best plan so far
/// (`feasible`), or `infeasible` with `statistics.limit_reached` and an explanation saying that
/// infeasibility is not proven. Loading a snapshot is not part of `solve`.
struct SearchLimits {
  /// Search nodes of branch-and-bound for the whole solve: the default budget, deterministic
  /// (the same plan and status whatever else the machine runs).
  std::uint64_t max_nodes = 2'000'000;
  /// Wall-clock limit: none by default (`nanoseconds::max()`), since a clock makes the status
  /// depend on machine load; set one with `time_limit(...)` when latency matters more.
  std::chrono::nanoseconds time_limit = std::chrono::nanoseconds::max();
  /// Candidate domains still to be searched in this tier, the current one included (set per
  /// domain by `solve_with`): the last one may spend every node left.
  std::size_t domains_left = 1;
  /// Reads (scans) every candidate domain before searching any, as before the preemption
  /// index existed. Same costs and statuses, possibly a different domain among equal-cost
  /// ones; kept so that benchmarks measure both paths in one run.
  bool full_scan = false;
  /// Words the plan (`explanation`, every `Victim::reason` and `DomainVerdict::reason`) before
  /// returning it; off (`without_text()`), the plan keeps the structured facts only and
  /// `topopreempt::explain` words it later, to the same bytes.
  bool text = true;
};

}  // namespace topopreempt::detail
