// SPDX-License-Identifier: MIT
#pragma once
/// @file idle_device_index.hpp
/// The idle-device index that `Allocation` keeps: per topology level whose domains hold few
/// devices, the level's domains bucketed by their idle device count. `find_placement` reads it
/// to visit a gang level's domains in ascending (idle devices, id) order, so its best fit (the
/// fewest idle devices, then the lowest id) is the first domain that holds the workload,
/// instead of the least of every domain that does. Internal: `Allocation` owns one and
/// forwards `idle_device_index()`.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "topopreempt/model/topology.hpp"

namespace topopreempt {

namespace detail {

/// For each indexed level and each idle count v in [0, the level's largest device count], a
/// bitset over the level's ordinals (`Topology::ordinal`) of the domains with exactly v idle
/// devices, and how many there are (so a query skips empty buckets without reading them).
/// Ordinals ascend with ids and a subtree's domains of one level form a contiguous ordinal run,
/// so "the domains of a bucket inside `within`, ascending id" is one word scan.
///
/// A level below the root's is indexed when its largest domain holds at most `max_indexed_devices`
/// devices: then the buckets cost at most 64 bytes per domain (racks of 32 eight-GPU nodes, 257
/// bits each, included). Levels above that (the root, zones) have few domains, which the linear
/// walk of `find_placement` visits quickly anyway, and buckets for them would grow with the
/// whole cluster's device count.
///
/// Every call takes the topology the index was built for (the owning `Allocation` shares it).
/// Only the constructor allocates; `move` is O(1) and never throws (the owner's strong
/// guarantee). Thread-safety: const members may run concurrently; `move` needs exclusive
/// access.
class IdleDeviceIndex {
 public:
  /// Largest device count a domain of an indexed level may hold.
  static constexpr std::uint32_t max_indexed_devices = 511;

  IdleDeviceIndex() = default;
  /// The index of an empty cluster over `topology`: every domain's idle devices are all of its
  /// devices (`Topology::device_count`).
  explicit IdleDeviceIndex(const Topology& topology) {
    const std::size_t level_count = topology.levels().size();
    level_slot_.assign(level_count, no_slot);
    // Level 0 holds the root alone, which never lies below a `within`: nothing to rank there.
    for (std::size_t level = 1; level < level_count; ++level) {
      const auto domains = topology.domains_at(static_cast<LevelIndex>(level));
      std::uint32_t max_idle = 0;
      for (const DomainId d : domains) max_idle = std::max(max_idle, topology.device_count(d));
      if (domains.empty() || max_idle > max_indexed_devices) continue;
      Level indexed;
      indexed.max_idle = max_idle;
      indexed.words = (domains.size() + word_bits - 1) / word_bits;
      indexed.word_offset = words_.size();
      indexed.count_offset = counts_.size();
      words_.resize(words_.size() + (max_idle + std::size_t{1}) * indexed.words, 0);
      counts_.resize(counts_.size() + max_idle + std::size_t{1}, 0);
      level_slot_[level] = static_cast<std::uint32_t>(levels_.size());
      levels_.push_back(indexed);
      for (const DomainId d : domains)
        insert(indexed, topology.ordinal(d), topology.device_count(d));
    }
  }

  /// Whether `level` is indexed (its domains' idle counts are bucketed).
  [[nodiscard]] bool covers(LevelIndex level) const noexcept {
    return level < level_slot_.size() && level_slot_[level] != no_slot;
  }

  /// Records that d's idle devices went from `before` to `after` (both at most its device
  /// count). A no-op when d's level is not indexed, or in a moved-from index.
  void move(const Topology& topology, DomainId d, std::uint32_t before,
            std::uint32_t after) noexcept {
    const LevelIndex level = topology.level(d);
    if (!covers(level)) return;
    const Level& indexed = levels_[level_slot_[level]];
    const std::uint32_t ordinal = topology.ordinal(d);
    words_[word_of(indexed, before, ordinal)] &= ~bit_of(ordinal);
    --counts_[indexed.count_offset + before];
    insert(indexed, ordinal, after);
  }

  /// The first domain of `level` inside `within` (which must lie above `level`, which must be
  /// covered) with at least `min_idle` idle devices, in ascending (idle devices, id) order, for
  /// which `accept(DomainId)` returns true; invalid when there is none. `accept` is called on
  /// each domain in that order until it accepts one, so the answer is the least accepted domain
  /// by (idle devices, id). Cost: O(buckets + words of the range per non-empty bucket +
  /// domains rejected).
  template <class Accept>
  [[nodiscard]] DomainId first_accepted(const Topology& topology, LevelIndex level, DomainId within,
                                        std::int64_t min_idle, Accept&& accept) const {
    const Level& indexed = levels_[level_slot_[level]];
    const auto all = topology.domains_at(level);
    const auto inside = topology.domains_at(level, within);
    if (inside.empty() || min_idle > static_cast<std::int64_t>(indexed.max_idle)) return {};
    const auto first = static_cast<std::size_t>(inside.data() - all.data());
    const std::size_t last = first + inside.size();
    for (auto idle = static_cast<std::uint32_t>(std::max<std::int64_t>(min_idle, 0));
         idle <= indexed.max_idle; ++idle) {
      if (counts_[indexed.count_offset + idle] == 0) continue;
      const std::uint64_t* bucket = &words_[indexed.word_offset + idle * indexed.words];
      for (std::size_t w = first / word_bits; w * word_bits < last; ++w) {
        std::uint64_t bits = word_in_range(bucket, w, first, last);
        while (bits != 0) {
          const std::size_t ordinal =
              w * word_bits + static_cast<std::size_t>(std::countr_zero(bits));
          bits &= bits - 1U;
          if (accept(all[ordinal])) return all[ordinal];
        }
      }
    }
    return {};
  }

  /// The most idle devices of any domain of `level` inside `within` (which must lie above
  /// `level`, which must be covered), or -1 when there is none. Cost: O(buckets + words of
  /// the range per non-empty bucket tried), most idle first.
  [[nodiscard]] std::int64_t most_idle(const Topology& topology, LevelIndex level,
                                       DomainId within) const noexcept {
    const auto all = topology.domains_at(level);
    const auto inside = topology.domains_at(level, within);
    if (inside.empty()) return -1;
    const auto first = static_cast<std::size_t>(inside.data() - all.data());
    return most_idle_in(level, first, first + inside.size());
  }

  /// The most idle devices of the domains of `level` (covered) whose ordinals lie in [first,
  /// last), or -1 when the range is empty. Cost: as `most_idle`.
  [[nodiscard]] std::int64_t most_idle_in(LevelIndex level, std::size_t first,
                                          std::size_t last) const noexcept {
    if (first >= last) return -1;
    const Level& indexed = levels_[level_slot_[level]];
    for (std::uint32_t idle = indexed.max_idle + 1; idle-- > 0;) {
      if (counts_[indexed.count_offset + idle] == 0) continue;
      const std::uint64_t* bucket = &words_[indexed.word_offset + idle * indexed.words];
      for (std::size_t w = first / word_bits; w * word_bits < last; ++w) {
        std::uint64_t bits = word_in_range(bucket, w, first, last);
        if (bits != 0) return idle;
      }
    }
    return -1;  // unreachable: every domain of the level sits in one bucket
  }

  /// The `count` largest idle counts of the domains of `level` (covered) whose ordinals lie in
  /// [first, last), most first, into `out` (cleared; fewer when the range holds fewer
  /// domains). Cost: O(buckets + words of the range per non-empty bucket tried), most idle
  /// first.
  void most_idle_counts_in(LevelIndex level, std::size_t first, std::size_t last,
                           std::size_t count, std::vector<std::int64_t>& out) const {
    out.resize(count);
    out.resize(most_idle_counts_in(level, first, last, out));
  }
  /// As above, into `out` (at most `out.size()` of them, `out.size()` the count asked), without
  /// allocating; returns how many it wrote.
  std::size_t most_idle_counts_in(LevelIndex level, std::size_t first, std::size_t last,
                                  std::span<std::int64_t> out) const noexcept {
    std::size_t written = 0;
    const std::size_t count = out.size();
    if (first >= last) return written;
    const Level& indexed = levels_[level_slot_[level]];
    for (std::uint32_t idle = indexed.max_idle + 1; idle-- > 0 && written < count;) {
      if (counts_[indexed.count_offset + idle] == 0) continue;
      const std::uint64_t* bucket = &words_[indexed.word_offset + idle * indexed.words];
      for (std::size_t w = first / word_bits; w * word_bits < last && written < count; ++w) {
        const auto here =
            static_cast<std::size_t>(std::popcount(word_in_range(bucket, w, first, last)));
        const std::size_t taken = std::min(here, count - written);
        std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(written), taken,
                    static_cast<std::int64_t>(idle));
        written += taken;
      }
    }
    return written;
  }

  /// The largest device count of the domains of `level` (covered).
  [[nodiscard]] std::uint32_t most_devices(LevelIndex level) const noexcept {
    return levels_[level_slot_[level]].max_idle;
  }

  /// How many replicas of `per_unit` whole devices the domains of `level` inside `within`
  /// could take at most by their idle devices alone (the sum of idle / per_unit over them),
  /// counted until `enough`: a necessary condition for a gang whose replicas each lie in one
  /// domain of `level`. `level` must be covered, `within` above it, `per_unit` > 0. Cost:
  /// O(buckets at or above `per_unit` x words of the range).
  [[nodiscard]] std::int64_t replicas_by_idle(const Topology& topology, LevelIndex level,
                                              DomainId within, std::int64_t per_unit,
                                              std::int64_t enough) const noexcept {
    const Level& indexed = levels_[level_slot_[level]];
    const auto all = topology.domains_at(level);
    const auto inside = topology.domains_at(level, within);
    const auto first = static_cast<std::size_t>(inside.data() - all.data());
    const std::size_t last = first + inside.size();
    std::int64_t replicas = 0;
    for (std::uint32_t idle = indexed.max_idle + 1; idle-- > 0 && replicas < enough;) {
      if (static_cast<std::int64_t>(idle) < per_unit) break;
      if (counts_[indexed.count_offset + idle] == 0) continue;
      const std::uint64_t* bucket = &words_[indexed.word_offset + idle * indexed.words];
      std::int64_t domains = 0;
      for (std::size_t w = first / word_bits; w * word_bits < last; ++w) {
        std::uint64_t bits = word_in_range(bucket, w, first, last);
        domains += std::popcount(bits);
      }
      replicas += domains * (static_cast<std::int64_t>(idle) / per_unit);
    }
    return replicas;
  }

  /// Bytes held by the index.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return words_.capacity() * sizeof(std::uint64_t) + counts_.capacity() * sizeof(std::uint32_t) +
           levels_.capacity() * sizeof(Level) + level_slot_.capacity() * sizeof(std::uint32_t);
  }

 private:
  static constexpr std::size_t word_bits = 64;

  /// Word w of a bucket, its bits outside the ordinals [first, last) cleared.
  [[nodiscard]] static std::uint64_t word_in_range(const std::uint64_t* bucket, std::size_t w,
                                                   std::size_t first, std::size_t last) noexcept {
    std::uint64_t bits = bucket[w];
    if (w == first / word_bits) bits &= ~std::uint64_t{0} << (first % word_bits);
    if ((w + 1) * word_bits > last) bits &= (std::uint64_t{1} << (last % word_bits)) - 1U;
    return bits;
  }
  static constexpr std::uint32_t no_slot = std::numeric_limits<std::uint32_t>::max();

  /// Where one indexed level's buckets and counts start in the flat arrays.
  struct Level {
    std::uint32_t max_idle = 0;    ///< largest device count of the level's domains
    std::size_t words = 0;         ///< 64-bit words per bucket
    std::size_t word_offset = 0;   ///< first word of bucket 0
    std::size_t count_offset = 0;  ///< count of bucket 0
  };

  [[nodiscard]] static std::size_t word_of(const Level& indexed, std::uint32_t idle,
                                           std::uint32_t ordinal) noexcept {
    return indexed.word_offset + idle * indexed.words + ordinal / word_bits;
  }
  [[nodiscard]] static std::uint64_t bit_of(std::uint32_t ordinal) noexcept {
    return std::uint64_t{1} << (ordinal % word_bits);
  }
  void insert(const Level& indexed, std::uint32_t ordinal, std::uint32_t idle) noexcept {
    words_[word_of(indexed, idle, ordinal)] |= bit_of(ordinal);
    ++counts_[indexed.count_offset + idle];
  }

  std::vector<std::uint64_t> words_;       // every level's buckets, bucket-major
  std::vector<std::uint32_t> counts_;      // domains per bucket
  std::vector<Level> levels_;              // indexed levels
  std::vector<std::uint32_t> level_slot_;  // per level: its `levels_` slot, or no_slot
};

}  // namespace detail

}  // namespace topopreempt
