// SPDX-License-Identifier: MIT
#pragma once
/// @file allocation.hpp
/// The cluster state: which workload holds which resources of which domain.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/model/detail/entry_layout.hpp"
#include "topopreempt/model/detail/idle_device_index.hpp"
#include "topopreempt/model/detail/mix.hpp"
#include "topopreempt/model/detail/preemption_index.hpp"
#include "topopreempt/model/detail/slot_map.hpp"
#include "topopreempt/model/index_band.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// Read-only, non-owning view of one running workload and its placement entries, valid until
/// the next mutation of the state. Lets hot loops read footprints without copying them.
struct WorkloadView {
  /// The workload as it was added (and shrunk since).
  const Workload& workload;
  std::span<const DomainId> domains;  ///< one per placement entry
  const Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic>& amounts;  ///< dims x entries
  std::span<const std::uint32_t> replica_begin;  ///< first entry of each replica

  /// Entry range [first, last) of replica `r`.
  [[nodiscard]] std::pair<std::size_t, std::size_t> replica_entries(std::size_t r) const {
    return {replica_begin[r], r + 1 < replica_begin.size() ? replica_begin[r + 1] : domains.size()};
  }
  /// Amount of entry `e` in dimension `dim`.
  [[nodiscard]] Amount amount(std::size_t e, std::size_t dim) const {
    return amounts(static_cast<Eigen::Index>(dim), static_cast<Eigen::Index>(e));
  }
};

namespace detail {
class ClusterFiller;
}  // namespace detail

/// The cluster state over one `Topology`.
///
/// Aggregates (used amount and idle device count of every domain) are maintained
/// incrementally: `add`, `remove` and `shrink` cost O(depth x footprint). Every mutating call
/// validates first and changes nothing when it throws (strong guarantee); errors name the
/// workload, replica and domain at fault.
///
/// `add` also checks that the placement honours the workload's *guaranteed* requirements: a
/// running workload whose guarantee is broken would make every later decision wrong.
///
/// Thread-safety: const members may be called concurrently (solvers only read the state);
/// mutation needs exclusive access. Copies share the immutable topology.
class Allocation {
 public:
  /// An empty cluster over `topology`.
  explicit Allocation(std::shared_ptr<const Topology> topology) : topology_(std::move(topology)) {
    if (!topology_) throw std::invalid_argument("Allocation needs a topology");
    const auto n = topology_->size();
    used_ = Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic>::Zero(
        static_cast<Eigen::Index>(topology_->schema().size()), static_cast<Eigen::Index>(n));
    idle_devices_.resize(n);
    for (std::size_t d = 0; d < n; ++d) {
      idle_devices_[d] = topology_->device_count(DomainId{static_cast<std::uint32_t>(d)});
    }
    occupancy_.assign(topology_->domains_at(topology_->device_level()).size(), 0);
    versions_.assign(n, 0);
    level_version_offsets_.assign(std::size_t{topology_->host_level()} + 2, 0);
    for (std::size_t level = 0; level <= topology_->host_level(); ++level) {
      level_version_offsets_[level + 1] =
          level_version_offsets_[level] +
          topology_->domains_at(static_cast<LevelIndex>(level)).size();
    }
    level_versions_.assign(level_version_offsets_.back(), 0);
    // Sized once so that logging a change never allocates (mutations stay no-throw after
    // validation); a topology's worth of entries, within [256, 8192] (128 KiB at most).
    change_log_.resize(std::clamp<std::size_t>(n, 256, 8192));
    preemption_index_ = detail::PreemptionIndex(*topology_);
    idle_device_index_ = detail::IdleDeviceIndex(*topology_);
    occupants_.resize(topology_->domains_at(topology_->host_level()).size());
    occupant_slots_.resize(occupants_.size());
  }

  /// The topology.
  [[nodiscard]] const Topology& topology() const noexcept { return *topology_; }
  /// Shared handle to the topology.
  [[nodiscard]] const std::shared_ptr<const Topology>& topology_ptr() const noexcept {
    return topology_;
  }

  /// Version of domain `d`: changes whenever anything inside its subtree changes (a workload
  /// placed on it or below it is added, removed or shrunk), and only then. Throws
  /// `std::out_of_range` naming `d` when it is not in the topology.
  ///
  /// A version is a 64-bit digest of the subtree's change history (every change is folded in
  /// with the changed workload's content), not a counter, so versions compare across copies:
  /// two copies of one state that then apply different changes to a domain end with different
  /// versions of it (barring a 2^-64 collision), and copies that apply the same changes end
  /// with the same versions. Undoing a change gives a new version, never the old one.
  [[nodiscard]] std::uint64_t domain_version(DomainId d) const {
    return versions_[static_cast<std::size_t>(column(d))];
  }

  /// The versions (`domain_version`) of the domains of `level`, a level at or above the
  /// hosts, by ordinal in it (`Topology::ordinal`): side by side, so that a reader of many
  /// domains of one level (a block's racks, a rack's hosts) reads a few cache lines, where
  /// `domain_version` reads one per domain (they lie a subtree apart). Throws
  /// `std::out_of_range` naming `level` when it lies below the hosts.
  [[nodiscard]] std::span<const std::uint64_t> versions_at(LevelIndex level) const {
    if (level > topology_->host_level()) {
      throw std::out_of_range("versions_at: level " + std::to_string(level) +
                              " lies below the host level " +
                              std::to_string(topology_->host_level()));
    }
    const std::size_t first = level_version_offsets_[level];
    return std::span<const std::uint64_t>(level_versions_)
        .subspan(first, level_version_offsets_[level + 1U] - first);
  }

  /// The change log: appends to `changed` the domain of every placement entry added, removed
  /// or shrunk since the root's version (`domain_version(Topology::root())`) was `since`, newest
  /// first (with repeats), and returns true. Every domain whose version changed since then is
  /// one of them or an ancestor of one, so a reader that kept results by version re-examines
  /// only those, in O(changes) instead of comparing one version per domain. Returns false
  /// (and leaves `changed` as it was) when the log no longer reaches back that far (it keeps
  /// the last few thousand entries) or this state never had that root version (a copy that
  /// diverged before it): the caller then compares versions as before. Root versions are
  /// content digests, so a version seen on a copy of this state is as good as one seen here.
  [[nodiscard]] bool changed_since(std::uint64_t since, std::vector<DomainId>& changed) const {
    const std::size_t kept = changed.size();
    if (versions_[Topology::root().value] == since) return true;
    const std::uint64_t capacity = change_log_.size();
    const std::uint64_t oldest = change_count_ > capacity ? change_count_ - capacity : 0;
    for (std::uint64_t i = change_count_; i > oldest; --i) {
      const ChangeLogEntry& entry = change_log_[(i - 1) % capacity];
      changed.push_back(entry.domain);
      if (entry.root_before == since) return true;
    }
    changed.resize(kept);
    return false;
  }

  /// The preemption index: what preemptible workloads of priority strictly below `priority`
  /// hold in dimension `dim` of d's subtree. With `free(d, dim)` it tells a solver, without
  /// reading any occupant, whether evicting every eligible victim could free enough of `dim`.
  /// Exact for domains at or above the host level; below it (sockets, NUMA nodes, devices are
  /// not indexed, which keeps the index a few percent of the state) the answer for the
  /// enclosing host, an upper bound. Cost: O(distinct priorities held there). Throws
  /// `std::out_of_range` for an unknown `d`.
  [[nodiscard]] Amount preemptible_below(DomainId d, std::int32_t priority, std::size_t dim) const {
    (void)column(d);  // validates d
    return preemption_index_.sum_amount(*topology_, d, priority, dim);
  }
  /// The preemption index: placement entries on devices (whole devices or shares) of
  /// preemptible workloads of priority strictly below `priority` in d's subtree; an upper
  /// bound on the devices their eviction can empty. Exact at and above the host level, the
  /// enclosing host's count below it (an upper bound). Same cost as `preemptible_below`.
  [[nodiscard]] std::int64_t preemptible_device_entries_below(DomainId d,
                                                              std::int32_t priority) const {
    (void)column(d);  // validates d
    return preemption_index_.sum_devices(*topology_, d, priority);
  }
  /// The preemption index's price extremes: calls `visit(const IndexBand&)` for each priority
  /// band strictly below `priority` in d's subtree whose workloads hold device entries there,
  /// ascending priority. Exact at and above the host level, the enclosing host's bands below it
  /// (each extreme then over a superset of d's holders: still a valid bound). The extremes
  /// depend on the state only, not on its history (removals recompute them from the host's
  /// occupants and the children's bands). Cost: O(distinct priorities held there). Throws
  /// `std::out_of_range` for an unknown `d`.
  template <class Visitor>
  void for_each_index_band(DomainId d, std::int32_t priority, Visitor&& visit) const {
    (void)column(d);  // validates d
    preemption_index_.for_each_band(*topology_, d, priority, std::forward<Visitor>(visit));
  }
  /// A hint that `for_each_index_band(d, ...)` comes soon (d at or above the host level), so
  /// that a loop over many hosts overlaps their memory reads; it changes and answers nothing.
  /// `d` must be valid.
#if defined(__GNUC__) || defined(__clang__)
  [[gnu::always_inline]]  // see PreemptionIndex::prefetch
#endif
  void prefetch_index_bands(DomainId d) const noexcept {
    preemption_index_.prefetch(*topology_, d);
  }
  /// What `index_block_of` answers for a domain in no block of the preemption index.
  static constexpr std::uint32_t index_no_block = detail::PreemptionIndex::no_block;
  /// The preemption index's blocks: runs of at most 16 consecutive domains of the level above
  /// the hosts under one parent (kept under a parent with more children than that), each with
  /// its own bands, folded from its members' as a parent's are from its children's (a bound
  /// from them bounds every member). The block of d, or `index_no_block` (d elsewhere, or
  /// under a parent with few children). Cost: O(1).
  [[nodiscard]] std::uint32_t index_block_of(DomainId d) const noexcept {
    return preemption_index_.block_of(*topology_, d);
  }
  /// The ordinals [first, last) of block b's members (at their level).
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> index_block_ordinals(
      std::uint32_t b) const noexcept {
    return preemption_index_.block_ordinals(b);
  }
  /// As `for_each_index_band`, over block b's bands.
  template <class Visitor>
  void for_each_index_block_band(std::uint32_t b, std::int32_t priority, Visitor&& visit) const {
    preemption_index_.for_each_block_band(b, priority, std::forward<Visitor>(visit));
  }
  /// As `prefetch_index_bands`, for block b.
  void prefetch_index_block(std::uint32_t b) const noexcept { preemption_index_.prefetch_block(b); }
  /// A digest of d's bands in the preemption index, for d above the host level: every
  /// priority's price extremes as `for_each_index_band` reads them. A function of those alone,
  /// so equal digests mean the same bands bit for bit (barring a 2^-64 collision), whatever
  /// the history or copy of the state: a reader that kept a result computed from d's bands
  /// compares one word instead of the bands. Changes with the bands only, not with every
  /// change under d (bands keep extremes, not sums). Cost: O(1). Throws `std::out_of_range`
  /// naming d when it is unknown or not above the host level.
  [[nodiscard]] std::uint64_t index_band_digest(DomainId d) const {
    (void)column(d);  // validates d
    if (topology_->level(d) >= topology_->host_level()) {
      throw std::out_of_range("domain " + std::to_string(d.value) +
                              " is not above the host level: it has no band digest");
    }
    return preemption_index_.band_digest(*topology_, d);
  }
  /// `index_band_digest` of every domain of `level`, a level above the hosts, by ordinal in it
  /// (side by side, as `versions_at`). Throws `std::out_of_range` naming `level` when it is
  /// not above the host level.
  [[nodiscard]] std::span<const std::uint64_t> index_band_digests_at(LevelIndex level) const {
    if (level >= topology_->host_level()) {
      throw std::out_of_range("index_band_digests_at: level " + std::to_string(level) +
                              " is not above the host level " +
                              std::to_string(topology_->host_level()));
    }
    return preemption_index_.band_digests_at(level);
  }
  /// As `index_band_digest`, over block b's bands (b must be a block).
  [[nodiscard]] std::uint64_t index_block_band_digest(std::uint32_t b) const noexcept {
    return preemption_index_.block_band_digest(b);
  }
  /// The band `workload` alone would form (its own extremes; `most_entries_per_victim` 0 when
  /// it holds no device): what `check_price_sum` checks a declared `IndexPricedModel` against.
  [[nodiscard]] IndexBand index_band_of(const Workload& workload) const noexcept {
    return detail::PreemptionIndex::band_of(topology_->schema(), workload);
  }
  /// Bytes of the preemption index alone (part of `memory_bytes`).
  [[nodiscard]] std::size_t index_memory_bytes() const noexcept {
    return preemption_index_.memory_bytes();
  }

  /// The idle-device index: the domains of each level holding few devices, bucketed by
  /// `idle_devices`, kept in step by every change. `find_placement` reads it to meet a gang
  /// level's domains in ascending (idle devices, id) order, so its best fit is the first one
  /// that holds the workload. Internal (`detail`): its interface may change between releases.
  [[nodiscard]] const detail::IdleDeviceIndex& idle_device_index() const noexcept {
    return idle_device_index_;
  }

  /// Makes room for `workloads` running workloads in all (the record table and the id map), so
  /// that adding up to that many allocates only what each workload holds itself and never
  /// moves the table or rehashes the map. A generator that knows about how many workloads it
  /// will add calls it first: it saves time and the table's growth slack (up to half of it).
  /// Changes nothing observable; on `std::bad_alloc` the state is unchanged (strong guarantee;
  /// capacity aside). Mutation: needs exclusive access, like `add`.
  void reserve(std::size_t workloads) {
    records_.reserve(workloads);
    index_.reserve(workloads);
  }

  /// Number of running workloads.
  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }
  /// Whether `id` is running.
  [[nodiscard]] bool contains(WorkloadId id) const noexcept { return index_.contains(id.value); }
  /// The running workload `id`; throws `std::out_of_range` naming it when unknown.
  [[nodiscard]] const Workload& workload(WorkloadId id) const {
    return records_[slot_of(id)].workload;
  }
  /// Where `id` runs.
  [[nodiscard]] Placement placement(WorkloadId id) const {
    const Record& record = records_[slot_of(id)];
    Placement result;
    result.replicas.resize(record.replica_begin().size());
    for (std::size_t r = 0; r < record.replica_begin().size(); ++r) {
      for (std::size_t e = record.replica_begin()[r]; e < replica_end(record, r); ++e) {
        result.replicas[r].entries.push_back(
            {record.domains()[e], record.amounts.col(static_cast<Eigen::Index>(e))});
      }
    }
    return result;
  }
  /// Ids of all running workloads in ascending order (deterministic).
  [[nodiscard]] std::vector<WorkloadId> workload_ids() const {
    std::vector<WorkloadId> ids;
    ids.reserve(index_.size());
    index_.for_each([&](std::uint64_t id, std::uint32_t) { ids.push_back(WorkloadId{id}); });
    std::sort(ids.begin(), ids.end());
    return ids;
  }
  /// Calls `visit(const Workload&)` for every running workload (slot order; cheap scan).
  template <class Visitor>
  void for_each_workload(Visitor&& visit) const {
    for (const Record& record : records_) {
      if (record.live()) visit(record.workload);
    }
  }

  /// Amount of dimension `dim` used in d's subtree.
  [[nodiscard]] Amount used(DomainId d, std::size_t dim) const {
    return used_(static_cast<Eigen::Index>(dim), column(d));
  }
  /// Used amounts of d's subtree.
  [[nodiscard]] ResourceVector used(DomainId d) const { return used_.col(column(d)); }
  /// Free amount of dimension `dim` in d's subtree.
  [[nodiscard]] Amount free(DomainId d, std::size_t dim) const {
    const Eigen::Index c = column(d);
    const auto i = static_cast<Eigen::Index>(dim);
    return topology_->capacities()(i, c) - used_(i, c);
  }
  /// Free amounts of d's subtree.
  [[nodiscard]] ResourceVector free(DomainId d) const {
    const Eigen::Index c = column(d);
    return topology_->capacities().col(c) - used_.col(c);
  }
  /// Devices in d's subtree that nobody uses at all.
  [[nodiscard]] std::int64_t idle_devices(DomainId d) const { return idle_devices_[column(d)]; }
  /// Number of placement entries on device d (0 = idle).
  [[nodiscard]] std::int64_t device_occupancy(DomainId d) const {
    (void)column(d);  // validates d
    return topology_->is_device(d) ? occupancy_[topology_->ordinal(d)] : 0;
  }
  /// Ids of the workloads holding anything on host-level domain `host` (unordered).
  [[nodiscard]] std::span<const WorkloadId> occupants(DomainId host) const {
    return occupants_[host_ordinal(host)];
  }
  /// Non-owning view of running workload `id` (throws `std::out_of_range` when unknown).
  [[nodiscard]] WorkloadView view(WorkloadId id) const {
    const Record& record = records_[slot_of(id)];
    return {record.workload, record.domains(), record.amounts, record.replica_begin()};
  }
  /// Calls `visit(WorkloadView)` for each workload on host-level domain `host`, in ascending id
  /// order (deterministic whatever the add/remove history).
  template <class Visitor>
  void for_each_occupant(DomainId host, Visitor&& visit) const {
    const std::size_t ordinal = host_ordinal(host);
    const auto& ids = occupants_[ordinal];
    const auto& slots = occupant_slots_[ordinal];
    // Occupant lists are tiny (a handful per node): sorting a stack copy is cheap and keeps
    // the visit order independent of the add/remove history.
    constexpr std::size_t small = 64;
    std::array<std::pair<WorkloadId, std::uint32_t>, small> buffer;  // filled below
    std::vector<std::pair<WorkloadId, std::uint32_t>> heap;
    std::span<std::pair<WorkloadId, std::uint32_t>> order;
    if (ids.size() <= small) {
      order = std::span(buffer.data(), ids.size());
    } else {
      heap.resize(ids.size());
      order = heap;
    }
    for (std::size_t i = 0; i < ids.size(); ++i) order[i] = {ids[i], slots[i]};
    std::sort(order.begin(), order.end());
    for (const auto& [id, slot] : order) {
      const Record& record = records_[slot];
      visit(WorkloadView{record.workload, record.domains(), record.amounts,
                         record.replica_begin()});
    }
  }

  /// Like `for_each_occupant` but in storage order (no sort): for scans whose result does not
  /// depend on the order (sums of integers, sets).
  template <class Visitor>
  void for_each_occupant_unordered(DomainId host, Visitor&& visit) const {
    const std::size_t ordinal = host_ordinal(host);
    for (std::uint32_t slot : occupant_slots_[ordinal]) {
      const Record& record = records_[slot];
      visit(WorkloadView{record.workload, record.domains(), record.amounts,
                         record.replica_begin()});
    }
  }

  /// Starts `workload` at `placement`. Throws `std::invalid_argument` (state unchanged) on an
  /// invalid workload, a duplicate id, a replica count that differs from the placement, an
  /// entry on an unknown domain, a negative or misplaced amount, a replica whose entries do
  /// not add up to its demand, a broken guaranteed requirement, or over-capacity.
  void add(Workload workload, const Placement& placement) {
    check_addable(workload, placement);
    start(std::move(workload), placement);
  }
  /// Stops workload `id`, freeing everything it holds. Throws `std::out_of_range` naming it
  /// when unknown.
  void remove(WorkloadId id) {
    const std::uint32_t slot = slot_of(id);
    Record& record = records_[slot];
    const std::vector<DomainId> hosts = hosts_of(record);
    reserve_more(free_slots_, 1);
    const BandKeys gone = band_keys(record.workload);
    const std::int32_t priority = record.workload.priority;
    const bool indexed = record.workload.preemptible;
    apply(record, 0, record.domains().size(), -1);
    for (DomainId host : hosts) erase_occupant(host, id);
    record = Record{};
    index_.erase(id.value);
    free_slots_.push_back(slot);
    refresh_bands(hosts, priority, indexed, gone);
  }

  /// Shrinks elastic workload `id` by dropping the replicas with the given indices (indices
  /// into its current replica list; the survivors keep their order and are renumbered).
  /// Throws (state unchanged) if `id` is unknown or not elastic, an index is out of range or
  /// repeated, or the survivors would fall below `min_replicas`.
  void shrink(WorkloadId id, std::span<const std::int32_t> replicas_to_drop) {
    const std::uint32_t slot = slot_of(id);
    Record& record = records_[slot];
    std::vector<bool> dropped;
    Record kept = shrunk_record(record, replicas_to_drop, dropped);
    const std::vector<DomainId> hosts_after = hosts_of(kept);
    const std::vector<DomainId> hosts_before = hosts_of(record);
    // No-throw from here on.
    const BandKeys gone = band_keys(record.workload);
    const std::int32_t priority = record.workload.priority;
    const bool indexed = record.workload.preemptible;
    apply(record, 0, record.domains().size(), -1);
    apply(kept, 0, kept.domains().size(), +1);
    for (DomainId host : hosts_before) {
      if (!std::binary_search(hosts_after.begin(), hosts_after.end(), host)) {
        erase_occupant(host, id);
      }
    }
    record = std::move(kept);
    refresh_bands(hosts_before, priority, indexed, gone);
  }

  /// Amounts a pending batch releases on domains' own pools or devices.
  using Released = std::vector<std::pair<DomainId, ResourceVector>>;

  /// One victim of `preempt_and_start`: evicted whole, or shrunk by dropping `dropped`
  /// (replica indices, as `shrink` takes them).
  struct VictimChange {
    /// The victim.
    WorkloadId id;
    /// true: remove the whole workload; false: shrink it by `dropped`.
    bool evict = true;
    /// For a shrink: the replica indices to drop.
    std::span<const std::int32_t> dropped;
  };

  /// Evicts or shrinks every victim in `victims` (in that order) and then starts `workload` at
  /// `placement`, as one change: it ends exactly as `remove` / `shrink` / `add` called in that
  /// order would (same versions too), or, if anything throws, the state is unchanged (strong
  /// guarantee, `std::bad_alloc` included). Everything that can throw (lookups, validation,
  /// `add`'s checks against the state after the victims left, every allocation) happens before
  /// the first mutation, so the cost is O(what changes), not a copy of the state. Throws what
  /// the sequence would throw: `std::out_of_range` for a victim that is not running (or is
  /// named twice), `std::invalid_argument` for a bad shrink or an invalid start.
  void preempt_and_start(std::span<const VictimChange> victims, Workload workload,
                         const Placement& placement) {
    Released released;
    std::vector<PreparedVictim> prepared = prepare_victims(victims, released);
    check_addable(workload, placement, released);
    Record record = new_record(std::move(workload), placement);
    const WorkloadId id = record.workload.id;
    const std::vector<DomainId> hosts = hosts_of(record);
    // The slot `add` would take after the removals: the last evicted victim's (remove pushes
    // freed slots, add pops the last), else a free one, else a new one. Slot order is the
    // order `for_each_workload` visits, so it must match the sequence's.
    std::optional<std::uint32_t> last_evicted;
    for (std::size_t v = 0; v < victims.size(); ++v) {
      if (victims[v].evict) last_evicted = prepared[v].slot;
    }
    const bool appended = !last_evicted && free_slots_.empty();
    if (appended) records_.emplace_back();
    const auto slot = static_cast<std::uint32_t>(
        last_evicted ? *last_evicted : (appended ? records_.size() - 1 : free_slots_.back()));
    try {
      reserve_more(free_slots_, victims.size());
      // Rows the victims empty keep their capacity, so reserving against today's rows covers
      // whatever the new workload (or a shrunk victim) inserts after them.
      reserve_start(record, hosts, slot);
    } catch (...) {
      if (appended) records_.pop_back();
      throw;
    }
    // No-throw from here on: the same steps as remove / shrink / add, in order.
    if (!appended && !last_evicted) free_slots_.pop_back();
    for (std::size_t v = 0; v < victims.size(); ++v) {
      PreparedVictim& victim = prepared[v];
      Record& old = records_[victim.slot];
      const BandKeys gone = band_keys(old.workload);
      const std::int32_t priority = old.workload.priority;
      const bool indexed = old.workload.preemptible;
      if (victims[v].evict) {
        apply(old, 0, old.domains().size(), -1);
        for (DomainId host : victim.hosts_before) erase_occupant(host, victims[v].id);
        old = Record{};
        index_.erase(victims[v].id.value);
        if (victim.slot != slot) free_slots_.push_back(victim.slot);  // the new record's: taken
      } else {
        apply(old, 0, old.domains().size(), -1);
        apply(victim.kept, 0, victim.kept.domains().size(), +1);
        for (DomainId host : victim.hosts_before) {
          if (!std::binary_search(victim.hosts_after.begin(), victim.hosts_after.end(), host)) {
            erase_occupant(host, victims[v].id);
          }
        }
        old = std::move(victim.kept);
      }
      refresh_bands(victim.hosts_before, priority, indexed, gone);
    }
    records_[slot] = std::move(record);
    apply(records_[slot], 0, records_[slot].domains().size(), +1);
    for (DomainId host : hosts) {
      occupants_[host_ordinal(host)].push_back(id);
      occupant_slots_[host_ordinal(host)].push_back(slot);
    }
  }

  /// Throws what `preempt_and_start(victims, workload, placement)` would throw (allocation
  /// failures aside) and changes nothing: a dry run, O(what the batch touches).
  void check_preempt_and_start(std::span<const VictimChange> victims, const Workload& workload,
                               const Placement& placement) const {
    Released released;
    (void)prepare_victims(victims, released);
    check_addable(workload, placement, released);
  }

  /// Bytes held by the state, excluding the shared topology.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    std::size_t bytes =
        sizeof(*this) + static_cast<std::size_t>(used_.size()) * sizeof(Amount) +
        idle_devices_.capacity() * sizeof(std::uint32_t) +
        occupancy_.capacity() * sizeof(std::uint32_t) +
        versions_.capacity() * sizeof(std::uint64_t) +
        level_versions_.capacity() * sizeof(std::uint64_t) +
        level_version_offsets_.capacity() * sizeof(std::size_t) + index_memory_bytes() +
        idle_device_index_.memory_bytes() +
        change_log_.capacity() * sizeof(ChangeLogEntry) + records_.capacity() * sizeof(Record) +
        free_slots_.capacity() * sizeof(std::uint32_t) + index_.memory_bytes();
    for (const Record& record : records_) {
      bytes += record.layout.bytes() +
               static_cast<std::size_t>(record.amounts.size()) * sizeof(Amount) +
               record.workload.name.capacity() + record.workload.cost.model_id.capacity() +
               static_cast<std::size_t>(record.workload.demand.resources.size()) * sizeof(Amount);
    }
    for (const auto& list : occupants_) {
      bytes += sizeof(std::vector<WorkloadId>) + list.capacity() * sizeof(WorkloadId);
    }
    for (const auto& list : occupant_slots_) {
      bytes += sizeof(std::vector<std::uint32_t>) + list.capacity() * sizeof(std::uint32_t);
    }
    return bytes;
  }

 private:
  friend class detail::ClusterFiller;  // `generate_cluster`'s filler: `add_found`

  /// `add` for `generate_cluster`, whose `find_placement` has just validated `workload` and
  /// computed `placement` against this very state (gangs: one replica per distinct host of one
  /// rack), so the checks of `add` would only repeat it. A repeated id is still refused.
  void add_found(Workload workload, const Placement& placement) {
    if (contains(workload.id)) {
      throw std::invalid_argument(workload.label() + " is already running");
    }
    start(std::move(workload), placement);
  }

  struct Record {
    Workload workload;
    detail::EntryLayout layout;  // entry domains and replica starts, one block
    Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic> amounts;  // dims x entries
    std::uint64_t fingerprint = 0;                                  // content digest, for versions

    /// One domain per placement entry.
    [[nodiscard]] std::span<const DomainId> domains() const noexcept { return layout.domains(); }
    /// The first entry of each replica.
    [[nodiscard]] std::span<const std::uint32_t> replica_begin() const noexcept {
      return layout.replica_begin();
    }
    /// Whether the slot holds a running workload: one has at least one replica (an empty
    /// slot, default-constructed or emptied by `remove`, has none).
    [[nodiscard]] bool live() const noexcept { return !layout.replica_begin().empty(); }
  };

  /// splitmix64's finaliser: a bijective mix, so distinct inputs stay distinct.
  [[nodiscard]] static constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    return detail::splitmix64_mix(x);
  }
  /// Digest of everything a decision reads from a record: the workload's fields and where
  /// each entry sits with what amount. Deterministic across runs and platforms.
  [[nodiscard]] static std::uint64_t fingerprint_of(const Record& record) noexcept {
    std::uint64_t h = 0x70707265656d7074ULL;
    const auto fold = [&h](std::uint64_t value) { h = mix(h ^ value); };
    const auto fold_text = [&fold](const std::string& text) {
      std::uint64_t fnv = 0xcbf29ce484222325ULL;  // FNV-1a: std::hash is not portable
      for (const unsigned char c : text) fnv = (fnv ^ c) * 0x100000001b3ULL;
      fold(fnv ^ text.size());
    };
    const auto fold_real = [&fold](double value) { fold(std::bit_cast<std::uint64_t>(value)); };
    const auto fold_signed = [&fold](std::int64_t value) {
      fold(static_cast<std::uint64_t>(value));
    };
    const Workload& w = record.workload;
    fold(w.id.value);
    fold_text(w.name);
    fold_signed(w.priority);
    fold(w.preemptible ? 1U : 0U);
    fold_signed(w.replicas);
    fold_signed(w.min_replicas ? *w.min_replicas + 1LL : 0LL);
    fold_signed(w.demand.whole_devices);
    for (Eigen::Index i = 0; i < w.demand.resources.size(); ++i) fold_signed(w.demand.resources(i));
    for (const TopologyRequirement* scope : {&w.replica_scope, &w.gang_scope}) {
      fold(static_cast<std::uint64_t>(scope->mode));
      fold_text(scope->level);
    }
    if (w.distinct_hosts) fold(0x616e7469ULL);  // folded only when set: older digests unchanged
    fold_real(w.cost.start_time_s);
    fold_real(w.cost.seconds_since_checkpoint);
    fold_text(w.cost.model_id);
    fold_real(w.cost.model_size_gib);
    fold_real(w.cost.extra_cost);
    for (std::size_t e = 0; e < record.domains().size(); ++e) {
      fold(record.domains()[e].value);
      for (Eigen::Index i = 0; i < record.amounts.rows(); ++i) {
        fold_signed(record.amounts(i, static_cast<Eigen::Index>(e)));
      }
    }
    for (const std::uint32_t begin : record.replica_begin()) fold(begin);
    return h;
  }

  /// Makes every allocation starting `record` (on `hosts`, in `slot`) needs, then maps its id
  /// to `slot`. The caller undoes only its own slot on failure: nothing here is observable
  /// until the id is mapped, and mapping it is the last step.
  void reserve_start(const Record& record, const std::vector<DomainId>& hosts, std::uint32_t slot) {
    for (DomainId host : hosts) {
      const std::size_t ordinal = host_ordinal(host);
      reserve_more(occupants_[ordinal], 1);
      reserve_more(occupant_slots_[ordinal], 1);
    }
    reserve_holdings(record);
    // Geometric growth: reserving size() + 1 rehashed the map every ~10 % of growth.
    index_.reserve_one_more();
    // Last (inserting into the room reserved never throws): the record is not observable
    // until its id is mapped.
    (void)index_.insert(record.workload.id.value, slot);
  }

  /// Room for `count` more elements, growing geometrically (reserving size() + count
  /// reallocated the list on every add).
  template <class T>
  static void reserve_more(std::vector<T>& list, std::size_t count) {
    if (list.capacity() - list.size() < count) {
      list.reserve(std::max({std::size_t{4}, 2 * list.size(), list.size() + count}));
    }
  }

  /// `add` after its checks: starts `workload` at `placement`, both already checked against
  /// this state. Strong guarantee as `add`'s (it throws only `std::bad_alloc`).
  void start(Workload workload, const Placement& placement) {
    // Everything that can throw (allocation included) happens before the first observable
    // mutation; the spare record slot appended for it is dropped again if anything throws.
    Record record = new_record(std::move(workload), placement);
    const WorkloadId id = record.workload.id;
    const std::vector<DomainId> hosts = hosts_of(record);
    const bool appended = free_slots_.empty();
    if (appended) records_.emplace_back();
    const auto slot =
        static_cast<std::uint32_t>(appended ? records_.size() - 1 : free_slots_.back());
    try {
      reserve_start(record, hosts, slot);
    } catch (...) {
      if (appended) records_.pop_back();
      throw;
    }
    // No-throw from here on.
    if (!appended) free_slots_.pop_back();
    records_[slot] = std::move(record);
    apply(records_[slot], 0, records_[slot].domains().size(), +1);
    for (DomainId host : hosts) {
      occupants_[host_ordinal(host)].push_back(id);
      occupant_slots_[host_ordinal(host)].push_back(slot);
    }
  }

  /// A victim of `preempt_and_start`, looked up and (for a shrink) rebuilt before any mutation.
  struct PreparedVictim {
    std::uint32_t slot;
    std::vector<DomainId> hosts_before;
    std::vector<DomainId> hosts_after;  // shrink only
    Record kept;                        // shrink only
  };
  /// Looks up and checks every victim of a batch; appends what each frees to `released`.
  [[nodiscard]] std::vector<PreparedVictim> prepare_victims(std::span<const VictimChange> victims,
                                                            Released& released) const {
    std::vector<PreparedVictim> prepared;
    prepared.reserve(victims.size());
    for (const VictimChange& change : victims) {
      const std::uint32_t slot = slot_of(change.id);
      for (const PreparedVictim& earlier : prepared) {
        // The sequence would meet a workload it already stopped (or renumbered): refuse it
        // as `remove` would refuse a workload that is no longer running.
        if (earlier.slot == slot) {
          throw std::out_of_range("workload " + std::to_string(change.id.value) +
                                  " is named twice");
        }
      }
      const Record& record = records_[slot];
      PreparedVictim victim{slot, hosts_of(record), {}, {}};
      if (change.evict) {
        for (std::size_t e = 0; e < record.domains().size(); ++e) {
          released.emplace_back(record.domains()[e],
                                record.amounts.col(static_cast<Eigen::Index>(e)));
        }
      } else {
        std::vector<bool> dropped;
        victim.kept = shrunk_record(record, change.dropped, dropped);
        victim.hosts_after = hosts_of(victim.kept);
        for (std::size_t r = 0; r < dropped.size(); ++r) {
          if (!dropped[r]) continue;
          for (std::size_t e = record.replica_begin()[r]; e < replica_end(record, r); ++e) {
            released.emplace_back(record.domains()[e],
                                  record.amounts.col(static_cast<Eigen::Index>(e)));
          }
        }
      }
      prepared.push_back(std::move(victim));
    }
    return prepared;
  }

  /// The record of `workload` at `placement` (already checked), fingerprint included.
  [[nodiscard]] Record new_record(Workload workload, const Placement& placement) const {
    Record record;
    std::size_t entries = 0;
    for (const auto& replica : placement.replicas) entries += replica.entries.size();
    // Sized exactly, one block for the domains and the replica starts.
    record.layout = detail::EntryLayout(entries, placement.replicas.size());
    const std::span<DomainId> domains = record.layout.domains();
    const std::span<std::uint32_t> replica_begin = record.layout.replica_begin();
    std::size_t next = 0;
    for (std::size_t r = 0; r < placement.replicas.size(); ++r) {
      replica_begin[r] = static_cast<std::uint32_t>(next);
      for (const auto& entry : placement.replicas[r].entries) domains[next++] = entry.domain;
    }
    record.amounts.resize(static_cast<Eigen::Index>(topology_->schema().size()),
                          static_cast<Eigen::Index>(entries));
    Eigen::Index column_index = 0;
    for (const auto& replica : placement.replicas) {
      for (const auto& entry : replica.entries) record.amounts.col(column_index++) = entry.amount;
    }
    record.workload = std::move(workload);
    record.fingerprint = fingerprint_of(record);
    return record;
  }
  /// `record` without the replicas `replicas_to_drop` (checked as `shrink` documents);
  /// `dropped[r]` says which replicas went.
  [[nodiscard]] static Record shrunk_record(const Record& record,
                                            std::span<const std::int32_t> replicas_to_drop,
                                            std::vector<bool>& dropped) {
    const Workload& workload = record.workload;
    if (!workload.min_replicas) {
      throw std::invalid_argument(workload.label() + " is not elastic and cannot be shrunk");
    }
    dropped.assign(static_cast<std::size_t>(workload.replicas), false);
    for (std::int32_t r : replicas_to_drop) {
      if (r < 0 || r >= workload.replicas || dropped[static_cast<std::size_t>(r)]) {
        throw std::invalid_argument(workload.label() + ": replica index " + std::to_string(r) +
                                    " is out of range or repeated");
      }
      dropped[static_cast<std::size_t>(r)] = true;
    }
    const auto survivors = workload.replicas - static_cast<std::int32_t>(replicas_to_drop.size());
    if (survivors < *workload.min_replicas) {
      throw std::invalid_argument(workload.label() + ": cannot shrink from " +
                                  std::to_string(workload.replicas) + " to " +
                                  std::to_string(survivors) + " replicas (minimum " +
                                  std::to_string(*workload.min_replicas) + ")");
    }
    Record kept;
    kept.workload = workload;
    kept.workload.replicas = survivors;
    std::vector<std::size_t> kept_entries;
    std::vector<std::uint32_t> kept_begin;
    for (std::size_t r = 0; r < dropped.size(); ++r) {
      if (dropped[r]) continue;
      kept_begin.push_back(static_cast<std::uint32_t>(kept_entries.size()));
      for (std::size_t e = record.replica_begin()[r]; e < replica_end(record, r); ++e) {
        kept_entries.push_back(e);
      }
    }
    kept.layout = detail::EntryLayout(kept_entries.size(), kept_begin.size());
    std::copy(kept_begin.begin(), kept_begin.end(), kept.layout.replica_begin().begin());
    kept.amounts.resize(record.amounts.rows(), static_cast<Eigen::Index>(kept_entries.size()));
    for (std::size_t i = 0; i < kept_entries.size(); ++i) {
      kept.layout.domains()[i] = record.domains()[kept_entries[i]];
      kept.amounts.col(static_cast<Eigen::Index>(i)) =
          record.amounts.col(static_cast<Eigen::Index>(kept_entries[i]));
    }
    kept.fingerprint = fingerprint_of(kept);
    return kept;
  }

  [[nodiscard]] static std::size_t replica_end(const Record& record, std::size_t r) {
    return r + 1 < record.replica_begin().size() ? record.replica_begin()[r + 1]
                                                 : record.domains().size();
  }
  [[nodiscard]] Eigen::Index column(DomainId d) const {
    if (d.value >= topology_->size()) {
      throw std::out_of_range("domain id " + std::to_string(d.value) + " is not in the topology");
    }
    return static_cast<Eigen::Index>(d.value);
  }
  [[nodiscard]] std::uint32_t slot_of(WorkloadId id) const {
    const std::uint32_t* slot = index_.find(id.value);
    if (slot == nullptr) {
      throw std::out_of_range("workload " + std::to_string(id.value) + " is not running");
    }
    return *slot;
  }
  [[nodiscard]] std::size_t host_ordinal(DomainId host) const {
    if (!topology_->valid_domain(host) || topology_->level(host) != topology_->host_level()) {
      throw std::invalid_argument("domain id " + std::to_string(host.value) +
                                  " is not a host-level domain");
    }
    return topology_->ordinal(host);
  }
  /// Sorted distinct hosts touched by a record.
  [[nodiscard]] std::vector<DomainId> hosts_of(const Record& record) const {
    std::vector<DomainId> hosts;
    hosts.reserve(record.domains().size());  // one allocation, not one per doubling
    for (DomainId d : record.domains()) {
      const DomainId host = topology_->ancestor_at(d, topology_->host_level());
      if (host.valid()) hosts.push_back(host);
    }
    std::sort(hosts.begin(), hosts.end());
    hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
    return hosts;
  }
  void erase_occupant(DomainId host, WorkloadId id) {
    const std::size_t ordinal = host_ordinal(host);
    auto& list = occupants_[ordinal];
    auto& slots = occupant_slots_[ordinal];
    const auto it = std::find(list.begin(), list.end(), id);
    if (it != list.end()) {
      const auto index = static_cast<std::size_t>(it - list.begin());
      list[index] = list.back();
      list.pop_back();
      slots[index] = slots.back();
      slots.pop_back();
    }
  }

  /// Adds (sign +1) or subtracts (-1) entries [first, last) of `record` along ancestor chains.
  void apply(const Record& record, std::size_t first, std::size_t last, int sign) {
    // The change folded into every version on the way up: which record, which entry, and
    // whether it arrived or left (so add-then-remove does not restore the old version).
    const std::uint64_t change = mix(record.fingerprint ^ (sign > 0 ? 0x2bULL : 0x2dULL));
    const bool indexed = record.workload.preemptible;
    const BandKeys keys = band_keys(record.workload);
    for (std::size_t e = first; e < last; ++e) {
      const std::uint64_t entry_change = mix(change ^ e);
      const DomainId domain = record.domains()[e];
      const auto amount = record.amounts.col(static_cast<Eigen::Index>(e));
      if (!change_log_.empty()) {  // empty only in a moved-from state
        change_log_[change_count_++ % change_log_.size()] = {versions_[Topology::root().value],
                                                             domain};
      }
      bool idle_changed = false;
      if (topology_->is_device(domain)) {
        std::uint32_t& occupancy = occupancy_[topology_->ordinal(domain)];
        idle_changed = sign > 0 ? occupancy++ == 0 : --occupancy == 0;
      }
      for (DomainId at = domain; at.valid(); at = topology_->parent(at)) {
        if (sign > 0) {
          used_.col(at.value) += amount;
        } else {
          used_.col(at.value) -= amount;
        }
        if (idle_changed) {
          std::uint32_t& idle = idle_devices_[at.value];
          const std::uint32_t before = idle;
          idle += sign > 0 ? -1U : 1U;
          idle_device_index_.move(*topology_, at, before, idle);
        }
        std::uint64_t& version = versions_[at.value];
        version = mix(version ^ entry_change);
        const LevelIndex level = topology_->level(at);
        if (level <= topology_->host_level()) {
          level_versions_[level_version_offsets_[level] + topology_->ordinal(at)] = version;
          if (indexed) {
            preemption_index_.add(*topology_, at, record.workload.priority,
                                  topology_->is_device(domain), amount, sign, keys);
          }
        }
        if (at == Topology::root()) break;
      }
    }
  }

  using BandKeys = detail::PreemptionIndex::BandKeys;
  [[nodiscard]] BandKeys band_keys(const Workload& w) const noexcept {
    return detail::PreemptionIndex::band_keys(topology_->schema(), w);
  }
  /// After `gone` (a workload's keys before it left or shrank) left `hosts`: the index
  /// recomputes the band extremes it may have set from the hosts' remaining occupants.
  void refresh_bands(const std::vector<DomainId>& hosts, std::int32_t priority, bool indexed,
                     const BandKeys& gone) noexcept {
    if (!indexed) return;
    preemption_index_.refresh(*topology_, hosts, priority, gone,
                              [&](DomainId host, const auto& fold) {
                                for (const std::uint32_t slot :
                                     occupant_slots_[host_ordinal(host)]) {
                                  const Workload& w = records_[slot].workload;
                                  if (w.preemptible && w.priority == priority) fold(w);
                                }
                              });
  }
  /// Makes room in the index, before any mutation, for the rows `record` may add.
  void reserve_holdings(const Record& record) {
    if (!record.workload.preemptible) return;
    preemption_index_.reserve(*topology_, record.domains(), record.workload.priority);
  }

  /// Local used amount (the domain's own pools/device, excluding children).
  [[nodiscard]] ResourceVector local_used(DomainId d) const {
    ResourceVector local = used_.col(d.value);
    for (DomainId child : topology_->children(d)) local -= used_.col(child.value);
    return local;
  }

  void check_addable(const Workload& workload, const Placement& placement,
                     const Released& released = {}) const;

  std::shared_ptr<const Topology> topology_;
  Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic> used_;  // dims x domains, aggregated
  std::vector<std::uint32_t> idle_devices_;                     // per domain, aggregated
  std::vector<std::uint32_t> occupancy_;                        // per device ordinal: entries
  std::vector<std::uint64_t> versions_;                         // per domain (domain_version)
  // The same versions of the levels at or above the hosts, level by level (`versions_at`):
  // level l's from level_version_offsets_[l], by ordinal.
  std::vector<std::uint64_t> level_versions_;
  std::vector<std::size_t> level_version_offsets_;
  /// One changed placement entry, with the root's version just before it (`changed_since`).
  struct ChangeLogEntry {
    std::uint64_t root_before = 0;
    DomainId domain;
  };
  std::vector<ChangeLogEntry> change_log_;                  // ring: entry i at i % size()
  std::uint64_t change_count_ = 0;                          // entries ever logged
  detail::PreemptionIndex preemption_index_;                // host level and above
  detail::IdleDeviceIndex idle_device_index_;               // mirrors idle_devices_
  std::vector<std::vector<WorkloadId>> occupants_;          // per host ordinal
  std::vector<std::vector<std::uint32_t>> occupant_slots_;  // parallel: record slots
  std::vector<Record> records_;
  std::vector<std::uint32_t> free_slots_;
  detail::SlotMap index_;  // workload id -> slot in records_
};

}  // namespace topopreempt

// `Allocation::check_addable`, the admission checks of `add` and `preempt_and_start`.
#include "topopreempt/model/detail/admission_checks.hpp"  // IWYU pragma: export
