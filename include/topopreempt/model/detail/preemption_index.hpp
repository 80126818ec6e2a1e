// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_index.hpp
/// The preemption index that `Allocation` keeps: per domain at or above the host level, what
/// the preemptible workloads of each priority hold there (amounts, device entries) and their
/// price extremes. Internal: `Allocation` owns one and answers for it
/// (`preemptible_below`, `preemptible_device_entries_below`, `for_each_index_band`).

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "topopreempt/model/detail/mix.hpp"
#include "topopreempt/model/index_band.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

namespace detail {

/// Per domain at or above the host level, rows [priority, device entries, amount per dim...,
/// price keys...] of what preemptible workloads hold, ascending priority, one row per priority
/// present. A row is dropped when it empties and removals recompute the extremes, so the index
/// depends on the state, not on its history.
///
/// Every call takes the topology the index was built for (the owning `Allocation` shares it).
/// `reserve` allocates; after it, `add` and `refresh` never do (the owner's strong guarantee).
class PreemptionIndex {
 public:
  /// The price keys of one workload: its contribution to its band's extremes (all `no_key`
  /// when it holds no device).
  static constexpr std::size_t key_lost_work = 0;
  static constexpr std::size_t key_model_gib = 1;
  static constexpr std::size_t key_entries = 2;
  /// The second least lost work, from a workload other than the one that sets the least (its
  /// owner: the workload id, and its device entries in all). Folded by `fold_keys`, not as a
  /// plain minimum.
  static constexpr std::size_t key_second_lost_work = 3;
  static constexpr std::size_t key_lost_work_owner = 4;
  static constexpr std::size_t key_lost_work_owner_entries = 5;
  /// The least lost work and model size of one replica: plain minima, kept in the rows above
  /// the host level only (a few hundred domains). Host rows, most of the index, end before
  /// them: a host's bound gains little from them, and its rows are what the memory is.
  static constexpr std::size_t key_lost_work_per_replica = 6;
  static constexpr std::size_t key_model_gib_per_replica = 7;
  static constexpr std::size_t key_count = 8;
  static constexpr std::size_t host_key_count = 6;
  using BandKeys = std::array<Amount, key_count>;

  PreemptionIndex() = default;
  /// An empty index over `topology`'s host level and above (a few percent of the domains:
  /// devices, NUMA nodes and sockets would multiply its size); slot = level offset + ordinal.
  explicit PreemptionIndex(const Topology& topology) : dims_(topology.schema().size()) {
    level_offset_.assign(static_cast<std::size_t>(topology.host_level()) + 2, 0);
    for (LevelIndex level = 0; level <= topology.host_level(); ++level) {
      level_offset_[level + 1U] = level_offset_[level] + topology.domains_at(level).size();
    }
    first_host_slot_ = level_offset_[topology.host_level()];
    make_blocks(topology);
    rows_.resize(first_block_slot_ + block_start_.size());
    digests_.resize(topology.domains_at(topology.host_level()).size());
    band_digests_.assign(first_host_slot_ + block_start_.size(), empty_band_digest);
  }

  /// Marks "no block" (`block_of`).
  static constexpr std::uint32_t no_block = std::numeric_limits<std::uint32_t>::max();
  /// Consecutive children of one domain per block: at most this many.
  static constexpr std::uint32_t block_size = 16;

  /// The level whose domains are gathered into blocks (the level just above the hosts, when
  /// it lies below the root), or 0 when there are none. A block is a run of at most
  /// `block_size` consecutive domains of that level with the same parent, kept only under a
  /// parent with more children than that; the index keeps a row per block as for a domain
  /// whose subtree is the block's members' (folded as a parent folds its children), so a bound
  /// from a block's bands is a lower bound for each of its members.
  [[nodiscard]] LevelIndex block_level() const noexcept { return block_level_; }
  /// The block of d (a domain of `block_level()`), or `no_block`.
  [[nodiscard]] std::uint32_t block_of(const Topology& topology, DomainId d) const noexcept {
    if (block_level_ == 0 || topology.level(d) != block_level_) return no_block;
    return block_of_[topology.ordinal(d)];
  }
  /// The ordinals [first, last) at `block_level()` of block b's members.
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> block_ordinals(
      std::uint32_t b) const noexcept {
    return {block_start_[b], block_end_[b]};
  }
  /// As `for_each_band`, for block b.
  template <class Visitor>
  void for_each_block_band(std::uint32_t b, std::int32_t priority, Visitor&& visit) const {
    visit_bands(first_block_slot_ + b, priority, std::forward<Visitor>(visit));
  }
  /// A digest of the bands of d (a domain above the host level) as `for_each_band` reads them,
  /// every priority's: each row's priority and price keys, in order. A function of those alone
  /// (kept up to date by every change to them), so equal digests mean the same bands, bit for
  /// bit, barring a 2^-64 collision, whatever the history or copy of the state.
  [[nodiscard]] std::uint64_t band_digest(const Topology& topology, DomainId d) const noexcept {
    return band_digests_[level_offset_[topology.level(d)] + topology.ordinal(d)];
  }
  /// `band_digest` of every domain of `level` (above the host level), by ordinal in it.
  [[nodiscard]] std::span<const std::uint64_t> band_digests_at(LevelIndex level) const noexcept {
    return std::span<const std::uint64_t>(band_digests_)
        .subspan(level_offset_[level], level_offset_[level + 1U] - level_offset_[level]);
  }
  /// As `band_digest`, for block b.
  [[nodiscard]] std::uint64_t block_band_digest(std::uint32_t b) const noexcept {
    return band_digests_[first_host_slot_ + b];
  }

  /// As `prefetch`, for block b.
  void prefetch_block(std::uint32_t b) const noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(rows_[first_block_slot_ + b].data());
#else
    (void)b;
#endif
  }

  /// Device entries of the bands strictly below `priority` at d (or at d's host below it).
  [[nodiscard]] std::int64_t sum_devices(const Topology& topology, DomainId d,
                                         std::int32_t priority) const noexcept {
    return sum(topology, d, priority, holding_devices);
  }
  /// Amount in `dim` of the bands strictly below `priority` at d (or at d's host below it).
  [[nodiscard]] std::int64_t sum_amount(const Topology& topology, DomainId d,
                                        std::int32_t priority, std::size_t dim) const noexcept {
    return sum(topology, d, priority, holding_amounts + dim);
  }

  /// Calls `visit(const IndexBand&)` for each band strictly below `priority` at d (or d's
  /// host below it) that holds device entries, ascending priority.
  template <class Visitor>
  void for_each_band(const Topology& topology, DomainId d, std::int32_t priority,
                     Visitor&& visit) const {
    const std::size_t at = slot(topology, d);
    if (is_host_slot(at) && visit_digest(digests_[at - first_host_slot_], priority, visit)) return;
    visit_bands(at, priority, std::forward<Visitor>(visit));
  }

  /// A hint that d's bands (d at or above the host level; else nothing) will be read soon: a
  /// loop over many hosts issues their cache misses ahead, not one at a time. Answers nothing.
#if defined(__GNUC__) || defined(__clang__)
  // Inlined always: GCC 12 takes a call whose only effect is a prefetch for a pure one, and
  // drops it.
  [[gnu::always_inline]]
#endif
  void prefetch(const Topology& topology, DomainId d) const noexcept {
#if defined(__GNUC__) || defined(__clang__)
    if (topology.level(d) > topology.host_level()) return;
    const std::size_t at = level_offset_[topology.level(d)] + topology.ordinal(d);
    if (is_host_slot(at)) {
      // The host's digest, which its bands are read from (`for_each_band`): its few lines.
      const auto* digest = reinterpret_cast<const char*>(&digests_[at - first_host_slot_]);
      for (std::size_t byte = 0; byte < sizeof(HostDigest); byte += 64)
        __builtin_prefetch(digest + byte);
      return;
    }
    const auto& rows = rows_[at];
    // Every line of the domain's bands: a band row spans about two, and a preemptor reads
    // every band below its priority (capped: a domain with many bands is rare).
    constexpr std::size_t per_line = 64 / sizeof(Amount);
    const std::size_t lines = std::min<std::size_t>((rows.size() + per_line - 1) / per_line, 8);
    for (std::size_t line = 0; line < lines; ++line)
      __builtin_prefetch(rows.data() + line * per_line);
#else
    (void)topology;
    (void)d;
#endif
  }

  /// The band `w` alone would form (`most_entries_per_victim` 0 when it holds no device).
  [[nodiscard]] static IndexBand band_of(const ResourceSchema& schema, const Workload& w) noexcept {
    const BandKeys keys = band_keys(schema, w);
    IndexBand band;
    band.priority = w.priority;
    if (keys[key_entries] == no_key) return band;
    fill_extremes(band, keys.data(), true);
    return band;
  }

  /// The keys `w` folds into its band's extremes.
  [[nodiscard]] static BandKeys band_keys(const ResourceSchema& schema, const Workload& w) noexcept {
    BandKeys keys;
    keys.fill(no_key);
    std::int64_t entries = w.demand.whole_devices;
    if (entries == 0) {
      for (Eigen::Index i = 0; i < w.demand.resources.size(); ++i) {
        if (schema.is_device(static_cast<std::size_t>(i)) && w.demand.resources(i) > 0) entries = 1;
      }
    }
    if (entries == 0) return keys;
    // Not finite or negative inputs give 0, the weakest (always valid) extreme.
    const auto key_of = [](double value) {
      return std::bit_cast<Amount>(std::isfinite(value) && value > 0.0 ? value : 0.0);
    };
    const double seconds = std::max(w.cost.seconds_since_checkpoint, 0.0);
    const double lost = seconds * (device_units_per_replica(w) / static_cast<double>(entries));
    keys[key_lost_work] = key_of(lost);
    keys[key_model_gib] =
        key_of(std::max(w.cost.model_size_gib, 0.0) / static_cast<double>(entries));
    // Multiplied as `cost::lost_work` prices one dropped replica, so that the key is never
    // above that price (a different rounding could be).
    keys[key_lost_work_per_replica] = key_of(device_units_per_replica(w) * seconds);
    keys[key_model_gib_per_replica] = key_of(std::max(w.cost.model_size_gib, 0.0));
    keys[key_entries] = -static_cast<Amount>(w.replicas) * entries;
    keys[key_lost_work_owner] = std::bit_cast<Amount>(w.id.value);
    keys[key_lost_work_owner_entries] = static_cast<Amount>(w.replicas) * entries;
    return keys;
  }

  /// Makes room, before any mutation, for the rows a preemptible workload of `priority` with
  /// entries on `domains` may add (strong guarantee: `add` then never allocates). A shrink
  /// re-adds only rows it just emptied, which keep their capacity.
  void reserve(const Topology& topology, std::span<const DomainId> domains, std::int32_t priority) {
    for (DomainId domain : domains) {
      for (DomainId at = domain; at.valid(); at = topology.parent(at)) {
        if (topology.level(at) > topology.host_level()) continue;
        const std::size_t index_slot = slot(topology, at);
        auto& rows = rows_[index_slot];
        const std::size_t stride = stride_at(index_slot);
        const std::size_t row = row_of(rows, priority, stride);
        if (row == rows.size() || rows[row + holding_priority] != priority) {
          rows.reserve(rows.size() + stride);
        }
        if (const std::uint32_t b = block_of(topology, at); b != no_block) {
          auto& block_rows = rows_[first_block_slot_ + b];
          const std::size_t block_row = row_of(block_rows, priority, stride);
          if (block_row == block_rows.size() ||
              block_rows[block_row + holding_priority] != priority) {
            block_rows.reserve(block_rows.size() + stride);
          }
        }
        if (at == Topology::root()) break;
      }
    }
  }

  /// Adds (sign +1) or subtracts (-1) one entry's `amount` at domain `at` (at or above the
  /// host level) to the band `priority`; `device` when the entry sits on a device.
  template <class Column>
  void add(const Topology& topology, DomainId at, std::int32_t priority, bool device,
           const Column& amount, int sign, const BandKeys& keys) noexcept {
    const std::size_t at_slot = slot(topology, at);
    add_at(at_slot, priority, device, amount, sign, keys);
    if (is_host_slot(at_slot)) make_digest(at_slot);
    // A block's row, as its members' parent would have it.
    if (const std::uint32_t b = block_of(topology, at); b != no_block)
      add_at(first_block_slot_ + b, priority, device, amount, sign, keys);
  }

  /// `add` at one slot.
  template <class Column>
  void add_at(std::size_t index_slot, std::int32_t priority, bool device, const Column& amount,
              int sign, const BandKeys& keys) noexcept {
    auto& rows = rows_[index_slot];
    const std::size_t stride = stride_at(index_slot);
    const std::size_t key_offset = this->key_offset();
    const bool per_replica = keeps_replica_keys(index_slot);
    std::size_t row = row_of(rows, priority, stride);
    // Whether the bands changed (a row came or went, or an arrival lowered a key): only then
    // is a band digest taken again (slots above the hosts: their rows are few).
    bool bands_changed = false;
    if (row == rows.size() || rows[row + holding_priority] != priority) {
      // Never reallocates: reserve made room (or the row was emptied just before).
      rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(row), stride, Amount{0});
      rows[row + holding_priority] = priority;
      std::fill_n(rows.begin() + static_cast<std::ptrdiff_t>(row + key_offset),
                  stride - key_offset, no_key);
      bands_changed = true;
    }
    // An arrival can only lower the extremes; a departure's are recomputed by refresh.
    if (sign > 0) {
      Amount* band = rows.data() + row + key_offset;
      if (per_replica && !bands_changed) {
        BandKeys before;
        std::copy_n(band, key_count, before.begin());
        fold_keys(band, keys.data(), true);
        bands_changed = !std::equal(before.begin(), before.end(), band);
      } else {
        fold_keys(band, keys.data(), per_replica);
      }
    }
    rows[row + holding_devices] += device ? sign : 0;
    bool empty = rows[row + holding_devices] == 0;
    for (std::size_t i = 0; i < key_offset - holding_amounts; ++i) {
      Amount& held = rows[row + holding_amounts + i];
      held +=
          sign > 0 ? amount(static_cast<Eigen::Index>(i)) : -amount(static_cast<Eigen::Index>(i));
      empty = empty && held == 0;
    }
    if (empty) {
      rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(row),
                 rows.begin() + static_cast<std::ptrdiff_t>(row + stride));
      bands_changed = true;
    }
    if (per_replica && bands_changed) redigest(index_slot);
  }

  /// After a workload with keys `gone` left (or shrank on) `hosts`: recomputes the band
  /// extremes it may have set, bottom-up (a host's from its occupants, a domain above from
  /// its children's bands), so that they depend on the state only. A band whose extremes
  /// `gone` did not set is left alone: a removal cannot lower a minimum.
  /// `for_each_band_member(host, fold)` calls `fold(const Workload&)` for every preemptible
  /// occupant of `host` of `priority` (it must not allocate: this runs after the point of no
  /// return).
  template <class ForEachBandMember>
  void refresh(const Topology& topology, const std::vector<DomainId>& hosts,
               std::int32_t priority, const BandKeys& gone,
               ForEachBandMember&& for_each_band_member) noexcept {
    if (gone[key_entries] == no_key) return;
    const std::size_t keys = key_offset();
    const ResourceSchema& schema = topology.schema();
    for (const DomainId host : hosts) {
      for (DomainId at = host; at.valid(); at = topology.parent(at)) {
        const std::size_t index_slot = slot(topology, at);
        auto& rows = rows_[index_slot];
        const bool per_replica = keeps_replica_keys(index_slot);
        const std::size_t row = row_of(rows, priority, stride_at(index_slot));
        if (row < rows.size() && rows[row + holding_priority] == priority) {
          Amount* band = rows.data() + row + keys;
          // The workload that left set an extreme if it owned the least lost work or matched
          // a plain extreme or the second least (ties: recomputing is always right).
          bool set_by_gone = band[key_lost_work_owner] == gone[key_lost_work_owner] ||
                             band[key_second_lost_work] == gone[key_lost_work];
          for (const std::size_t k : {key_lost_work, key_model_gib, key_entries})
            set_by_gone = set_by_gone || band[k] == gone[k];
          if (per_replica) {
            for (const std::size_t k : {key_lost_work_per_replica, key_model_gib_per_replica})
              set_by_gone = set_by_gone || band[k] == gone[k];
          }
          if (set_by_gone) {
            std::fill(band, band + (per_replica ? key_count : host_key_count), no_key);
            const auto fold_member = [&](const Workload& w) {
              const BandKeys held = band_keys(schema, w);
              fold_keys(band, held.data(), per_replica);
            };
            if (at == host) {
              for_each_band_member(host, fold_member);
              make_digest(index_slot);
            } else {
              // Children walked by subtree ends: children() allocates, and this runs after
              // the point of no return.
              const DomainId end = topology.subtree_end(at);
              for (DomainId child{at.value + 1}; child.value < end.value;
                   child = topology.subtree_end(child)) {
                if (topology.level(child) > topology.host_level()) continue;
                const std::size_t child_slot = slot(topology, child);
                const auto& child_rows = rows_[child_slot];
                const std::size_t child_row =
                    row_of(child_rows, priority, stride_at(child_slot));
                if (child_row >= child_rows.size() ||
                    child_rows[child_row + holding_priority] != priority) {
                  continue;
                }
                if (keeps_replica_keys(child_slot)) {
                  fold_keys(band, child_rows.data() + child_row + keys, true);
                } else {
                  // A host row has no per-replica keys: its band's members give them (a
                  // domain just above the hosts re-reads their occupants, a few dozen).
                  fold_keys(band, child_rows.data() + child_row + keys, false);
                  for_each_band_member(child, [&](const Workload& w) {
                    const BandKeys held = band_keys(schema, w);
                    fold_replica_keys(band, held.data());
                  });
                }
              }
              redigest(index_slot);
            }
          }
        }
        if (const std::uint32_t b = block_of(topology, at); b != no_block) {
          refresh_block(b, priority, gone);
        }
        if (at == Topology::root()) break;
      }
    }
  }

  /// Bytes the index holds.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    std::size_t bytes = rows_.capacity() * sizeof(std::vector<Amount>) +
                        level_offset_.capacity() * sizeof(std::size_t) +
                        (block_of_.capacity() + block_start_.capacity() + block_end_.capacity()) *
                            sizeof(std::uint32_t);
    for (const auto& rows : rows_) bytes += rows.capacity() * sizeof(Amount);
    bytes += digests_.capacity() * sizeof(HostDigest);
    bytes += band_digests_.capacity() * sizeof(std::uint64_t);
    return bytes;
  }

 private:
  static constexpr std::size_t holding_priority = 0;
  static constexpr std::size_t holding_devices = 1;
  static constexpr std::size_t holding_amounts = 2;
  // After the amounts, the band's price extremes (`IndexBand`), kept as minima of int64 so
  // that a row stays one array: the two non-negative doubles by their bit patterns (which
  // order as the values do), the most entries per victim negated. `no_key`: no device holder.
  static constexpr Amount no_key = std::numeric_limits<Amount>::max();

  [[nodiscard]] std::size_t key_offset() const noexcept { return holding_amounts + dims_; }
  /// Whether the rows of `slot` keep the per-replica keys (above the host level).
  [[nodiscard]] bool keeps_replica_keys(std::size_t slot) const noexcept {
    return slot < first_host_slot_ || slot >= first_block_slot_;
  }

  /// Calls `visit(const IndexBand&)` for each band of slot `at` strictly below `priority`
  /// that holds device entries, ascending priority.
  template <class Visitor>
  void visit_bands(std::size_t at, std::int32_t priority, Visitor&& visit) const {
    const auto& rows = rows_[at];
    const std::size_t stride = stride_at(at);
    const bool per_replica = keeps_replica_keys(at);
    const std::size_t keys = key_offset();
    for (std::size_t row = 0; row < rows.size(); row += stride) {
      if (rows[row + holding_priority] >= priority) break;
      if (rows[row + keys + key_entries] == no_key) continue;  // no device holder in the band
      IndexBand band;
      band.priority = static_cast<std::int32_t>(rows[row + holding_priority]);
      fill_extremes(band, rows.data() + row + keys, per_replica);
      visit(band);
    }
  }

  /// A host's first `digest_bands` device-holding bands (ascending priority), in one flat
  /// array over the hosts (`digests_`): a bound over a rack's hosts reads these few lines
  /// each, in host order, instead of a separate heap row per host. Exact copies of what
  /// `fill_extremes` gives from the rows (the doubles bit for bit), so a band read from either
  /// is the same. Entry counts are kept in 32 bits: a host whose counts need more, or that has
  /// more device-holding bands than kept below the asked priority, is read from its rows.
  static constexpr std::size_t digest_bands = 4;
  struct HostDigest {
    std::uint32_t count = 0;        // bands kept
    std::uint32_t incomplete = 0;   // digest_more_bands | digest_unrepresentable
    std::array<std::int32_t, digest_bands> priority{};
    std::array<std::int32_t, digest_bands> most_entries_per_victim{};
    std::array<std::int32_t, digest_bands> entries_of_least_lost_work{};
    std::array<double, digest_bands> least_lost_work_per_entry{};
    std::array<double, digest_bands> least_model_gib_per_entry{};
    std::array<double, digest_bands> second_least_lost_work_per_entry{};
  };
  static constexpr std::uint32_t digest_more_bands = 1;
  static constexpr std::uint32_t digest_unrepresentable = 2;

  /// Whether `slot` is a host's (hosts keep a digest).
  [[nodiscard]] bool is_host_slot(std::size_t slot) const noexcept {
    return slot >= first_host_slot_ && slot < level_offset_.back();
  }

  /// Rewrites the digest of host slot `at` from its rows (after any change to them).
  void make_digest(std::size_t at) noexcept {
    HostDigest& digest = digests_[at - first_host_slot_];
    digest = HostDigest{};
    const auto& rows = rows_[at];
    const std::size_t stride = stride_at(at);
    const std::size_t keys = key_offset();
    const auto fits = [](std::int64_t value) {
      return value >= std::numeric_limits<std::int32_t>::min() &&
             value <= std::numeric_limits<std::int32_t>::max();
    };
    for (std::size_t row = 0; row < rows.size(); row += stride) {
      if (rows[row + keys + key_entries] == no_key) continue;  // as visit_bands skips it
      if (digest.count == digest_bands) {
        digest.incomplete |= digest_more_bands;
        return;
      }
      IndexBand band;
      fill_extremes(band, rows.data() + row + keys, false);
      const std::int64_t priority = rows[row + holding_priority];
      if (!fits(priority) || !fits(band.most_entries_per_victim) ||
          !fits(band.entries_of_least_lost_work)) {
        digest.incomplete |= digest_unrepresentable;
        return;
      }
      const std::size_t i = digest.count++;
      digest.priority[i] = static_cast<std::int32_t>(priority);
      digest.most_entries_per_victim[i] = static_cast<std::int32_t>(band.most_entries_per_victim);
      digest.entries_of_least_lost_work[i] =
          static_cast<std::int32_t>(band.entries_of_least_lost_work);
      digest.least_lost_work_per_entry[i] = band.least_lost_work_per_entry;
      digest.least_model_gib_per_entry[i] = band.least_model_gib_per_entry;
      digest.second_least_lost_work_per_entry[i] = band.second_least_lost_work_per_entry;
    }
  }

  /// Visits, as `visit_bands` would for the host's rows, the bands of `digest` strictly below
  /// `priority`; false (nothing visited) when the digest does not hold them all.
  template <class Visitor>
  static bool visit_digest(const HostDigest& digest, std::int32_t priority, Visitor& visit) {
    if ((digest.incomplete & digest_unrepresentable) != 0) return false;
    if ((digest.incomplete & digest_more_bands) != 0 &&
        digest.priority[digest_bands - 1] < priority)
      return false;
    for (std::size_t i = 0; i < digest.count && digest.priority[i] < priority; ++i) {
      IndexBand band;
      band.priority = digest.priority[i];
      band.least_lost_work_per_entry = digest.least_lost_work_per_entry[i];
      band.least_model_gib_per_entry = digest.least_model_gib_per_entry[i];
      band.most_entries_per_victim = digest.most_entries_per_victim[i];
      band.second_least_lost_work_per_entry = digest.second_least_lost_work_per_entry[i];
      band.entries_of_least_lost_work = digest.entries_of_least_lost_work[i];
      // A host row keeps no per-replica keys: the per-entry leasts stand for them.
      band.least_lost_work_per_replica = band.least_lost_work_per_entry;
      band.least_model_gib_per_replica = band.least_model_gib_per_entry;
      visit(band);
    }
    return true;
  }

  /// Gathers the domains of the level above the hosts into blocks (see `block_level`); the
  /// block rows' slots follow every domain's.
  void make_blocks(const Topology& topology) {
    first_block_slot_ = level_offset_.back();
    const LevelIndex host_level = topology.host_level();
    if (host_level < 2) return;
    const auto level = static_cast<LevelIndex>(host_level - 1);
    const auto domains = topology.domains_at(level);
    block_of_.assign(domains.size(), no_block);
    std::size_t i = 0;
    while (i < domains.size()) {
      // The run of i's siblings: its parent's children at this level.
      const DomainId parent = topology.parent(domains[i]);
      std::size_t end = i;
      while (end < domains.size() && topology.parent(domains[end]) == parent) ++end;
      if (end - i > block_size) {
        for (std::size_t first = i; first < end; first += block_size) {
          const std::size_t last = std::min<std::size_t>(first + block_size, end);
          const auto b = static_cast<std::uint32_t>(block_start_.size());
          block_start_.push_back(static_cast<std::uint32_t>(first));
          block_end_.push_back(static_cast<std::uint32_t>(last));
          for (std::size_t k = first; k < last; ++k) block_of_[k] = b;
        }
      }
      i = end;
    }
    if (block_start_.empty()) {
      block_of_.clear();
      return;
    }
    block_level_ = level;
  }

  /// Recomputes block b's band `priority` from its members' rows, when `gone` may have set
  /// one of its extremes (as `refresh` does for a domain above its children).
  void refresh_block(std::uint32_t b, std::int32_t priority,
                     const BandKeys& gone) noexcept {
    const std::size_t keys = key_offset();
    const std::size_t block_slot = first_block_slot_ + b;
    auto& rows = rows_[block_slot];
    const std::size_t stride = stride_at(block_slot);
    const std::size_t row = row_of(rows, priority, stride);
    if (row >= rows.size() || rows[row + holding_priority] != priority) return;
    Amount* band = rows.data() + row + keys;
    bool set_by_gone = band[key_lost_work_owner] == gone[key_lost_work_owner] ||
                       band[key_second_lost_work] == gone[key_lost_work];
    for (const std::size_t k : {key_lost_work, key_model_gib, key_entries,
                                key_lost_work_per_replica, key_model_gib_per_replica})
      set_by_gone = set_by_gone || band[k] == gone[k];
    if (!set_by_gone) return;
    std::fill(band, band + key_count, no_key);
    const std::size_t base = level_offset_[block_level_];
    for (std::uint32_t ordinal = block_start_[b]; ordinal < block_end_[b]; ++ordinal) {
      const std::size_t member_slot = base + ordinal;
      const auto& member_rows = rows_[member_slot];
      const std::size_t member_row = row_of(member_rows, priority, stride_at(member_slot));
      if (member_row >= member_rows.size() ||
          member_rows[member_row + holding_priority] != priority) {
        continue;
      }
      fold_keys(band, member_rows.data() + member_row + keys, true);
    }
    redigest(block_slot);
  }
  /// The band digest of no bands (an empty row set).
  static constexpr std::uint64_t empty_band_digest = 0;
  /// The digest `band_digest` keeps for `slot` (above the hosts, or a block), from its rows:
  /// each row's priority and price keys, in order, folded by `splitmix64_mix`.
  [[nodiscard]] std::uint64_t rows_digest(std::size_t slot) const noexcept {
    const auto& rows = rows_[slot];
    const std::size_t stride = stride_at(slot);
    const std::size_t keys = key_offset();
    std::uint64_t digest = empty_band_digest;
    const auto fold = [&digest](Amount value) {
      digest = splitmix64_mix(digest ^ std::bit_cast<std::uint64_t>(value));
    };
    for (std::size_t row = 0; row < rows.size(); row += stride) {
      fold(rows[row + holding_priority]);
      for (std::size_t k = 0; k < key_count; ++k) fold(rows[row + keys + k]);
    }
    return digest;
  }
  /// Takes the band digest of `slot` (above the hosts, or a block) again after its bands
  /// changed.
  void redigest(std::size_t slot) noexcept {
    band_digests_[slot < first_host_slot_ ? slot : slot - first_block_slot_ + first_host_slot_] =
        rows_digest(slot);
  }
  [[nodiscard]] std::size_t stride_at(std::size_t slot) const noexcept {
    return key_offset() + (keeps_replica_keys(slot) ? key_count : host_key_count);
  }

  /// The per-replica minima of `from` folded into `into` (both rows keep them).
  static void fold_replica_keys(Amount* into, const Amount* from) noexcept {
    for (const std::size_t k : {key_lost_work_per_replica, key_model_gib_per_replica})
      into[k] = std::min(into[k], from[k]);
  }

  /// Folds the keys `from` (one workload's, or a child domain's band) into `into`: plain minima,
  /// and the least two lost works of distinct workloads; the per-replica minima too when
  /// `per_replica` (`into` and `from` both keep them). A workload folds in once per entry and
  /// once per child domain it spans, so the owner's id tells a repeat from a tie.
  static void fold_keys(Amount* into, const Amount* from, bool per_replica) noexcept {
    if (per_replica) fold_replica_keys(into, from);
    for (const std::size_t k : {key_model_gib, key_entries}) into[k] = std::min(into[k], from[k]);
    if (from[key_lost_work] == no_key) return;  // holds no device
    if (into[key_lost_work] == no_key) {
      for (const std::size_t k : {key_lost_work, key_second_lost_work, key_lost_work_owner,
                                  key_lost_work_owner_entries})
        into[k] = from[k];
      return;
    }
    if (into[key_lost_work_owner] == from[key_lost_work_owner]) {
      // The same workload again: its entries counted once (the larger count, should a shrink
      // have left an older one behind until the refresh).
      into[key_lost_work] = std::min(into[key_lost_work], from[key_lost_work]);
      into[key_second_lost_work] = std::min(into[key_second_lost_work], from[key_second_lost_work]);
      into[key_lost_work_owner_entries] =
          std::max(into[key_lost_work_owner_entries], from[key_lost_work_owner_entries]);
    } else if (from[key_lost_work] < into[key_lost_work] ||
               (from[key_lost_work] == into[key_lost_work] &&
                std::bit_cast<std::uint64_t>(from[key_lost_work_owner]) <
                    std::bit_cast<std::uint64_t>(into[key_lost_work_owner]))) {
      // A cheaper workload (or a tie won by the smaller id, so that the index depends on the
      // state alone) takes over; the old owner's least is a candidate second least.
      into[key_second_lost_work] = std::min(into[key_lost_work], from[key_second_lost_work]);
      into[key_lost_work] = from[key_lost_work];
      into[key_lost_work_owner] = from[key_lost_work_owner];
      into[key_lost_work_owner_entries] = from[key_lost_work_owner_entries];
    } else {
      // Another workload, no cheaper (after a tie the second least equals the least). From a
      // child's band, its own second least is no smaller than its least.
      into[key_second_lost_work] = std::min(into[key_second_lost_work], from[key_lost_work]);
    }
  }
  /// The extremes of `band` from its keys (a band that holds a device); without
  /// `per_replica` keys (a host row), the per-replica leasts are the per-entry ones.
  static void fill_extremes(IndexBand& band, const Amount* keys, bool per_replica) noexcept {
    band.least_lost_work_per_entry = std::bit_cast<double>(keys[key_lost_work]);
    band.least_model_gib_per_entry = std::bit_cast<double>(keys[key_model_gib]);
    band.most_entries_per_victim = -keys[key_entries];
    band.second_least_lost_work_per_entry =
        keys[key_second_lost_work] == no_key
            ? std::numeric_limits<double>::infinity()
            : std::bit_cast<double>(keys[key_second_lost_work]);
    band.entries_of_least_lost_work = keys[key_lost_work_owner_entries];
    band.least_lost_work_per_replica =
        per_replica ? std::bit_cast<double>(keys[key_lost_work_per_replica])
                    : band.least_lost_work_per_entry;
    band.least_model_gib_per_replica =
        per_replica ? std::bit_cast<double>(keys[key_model_gib_per_replica])
                    : band.least_model_gib_per_entry;
  }
  /// Index slot of d, or of its nearest ancestor at or above the host level (its host, where
  /// the branch has one) when d lies below it.
  [[nodiscard]] std::size_t slot(const Topology& topology, DomainId d) const noexcept {
    while (topology.level(d) > topology.host_level()) d = topology.parent(d);
    return level_offset_[topology.level(d)] + topology.ordinal(d);
  }
  [[nodiscard]] std::int64_t sum(const Topology& topology, DomainId d, std::int32_t priority,
                                 std::size_t field) const noexcept {
    const std::size_t at = slot(topology, d);
    const auto& rows = rows_[at];
    const std::size_t stride = stride_at(at);
    std::int64_t total = 0;
    for (std::size_t row = 0; row < rows.size(); row += stride) {
      if (rows[row + holding_priority] >= priority) break;
      total += rows[row + field];
    }
    return total;
  }
  /// Row offset of `priority` in `rows`, or where it would be inserted.
  [[nodiscard]] static std::size_t row_of(const std::vector<Amount>& rows, std::int32_t priority,
                                          std::size_t stride) noexcept {
    std::size_t row = 0;
    while (row < rows.size() && rows[row + holding_priority] < priority) row += stride;
    return row;
  }

  std::size_t dims_ = 0;
  std::vector<std::vector<Amount>> rows_;  // per indexed domain (slot)
  std::vector<HostDigest> digests_;        // per host (slot - first_host_slot_)
  // Per slot above the hosts, then per block (`band_digest`, `block_band_digest`).
  std::vector<std::uint64_t> band_digests_;
  std::vector<std::size_t> level_offset_;  // first slot of each level <= host
  std::size_t first_host_slot_ = 0;        // slots before it keep the per-replica keys
  // Blocks (`block_level`): their rows' first slot (past every domain's; these keep the
  // per-replica keys too), each member's block, each block's ordinals [start, end).
  std::size_t first_block_slot_ = 0;
  LevelIndex block_level_ = 0;
  std::vector<std::uint32_t> block_of_;
  std::vector<std::uint32_t> block_start_;
  std::vector<std::uint32_t> block_end_;
};

}  // namespace detail
}  // namespace topopreempt
