// SPDX-License-Identifier: MIT
#pragma once
/// @file slot_map.hpp
/// `detail::SlotMap`: the state's map from workload id to record slot, one flat table (open
/// addressing, linear probing, deletion by backward shift, so no tombstones). Replaces a
/// node-based `std::unordered_map`: no allocation per workload, one cache line per lookup,
/// and about half the bytes (16 per slot at most 80 % full, against a node and a bucket per
/// workload). Internal to `Allocation`; not a header to include on its own.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace topopreempt::detail {

/// Workload id -> record slot. Inserting never allocates once `reserve` made room, so a
/// caller can reserve first (may throw `std::bad_alloc`, map unchanged) and insert later
/// without a throw.
class SlotMap {
 public:
  SlotMap() = default;
  SlotMap(const SlotMap&) = default;
  SlotMap& operator=(const SlotMap&) = default;
  /// Leaves `other` empty (and usable).
  SlotMap(SlotMap&& other) noexcept
      : table_(std::move(other.table_)), size_(std::exchange(other.size_, 0)) {
    other.table_.clear();
  }
  /// Leaves `other` empty (and usable).
  SlotMap& operator=(SlotMap&& other) noexcept {
    if (this != &other) {
      table_ = std::move(other.table_);
      size_ = std::exchange(other.size_, 0);
      other.table_.clear();
    }
    return *this;
  }

  /// Number of ids mapped.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The slot of `id`, or nullptr.
  [[nodiscard]] const std::uint32_t* find(std::uint64_t id) const noexcept {
    if (table_.empty()) return nullptr;
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = home(id, mask);; i = (i + 1) & mask) {
      const Entry& entry = table_[i];
      if (entry.slot == empty_slot) return nullptr;
      if (entry.id == id) return &entry.slot;
    }
  }
  /// Whether `id` is mapped.
  [[nodiscard]] bool contains(std::uint64_t id) const noexcept { return find(id) != nullptr; }

  /// Room for `count` ids in all, so that inserting up to that many never allocates. Strong
  /// guarantee (`std::bad_alloc`: unchanged).
  void reserve(std::size_t count) {
    std::size_t capacity = 16;
    while (capacity / 5 * 4 < count) capacity *= 2;
    if (capacity <= table_.size()) return;
    std::vector<Entry> table(capacity);
    const std::size_t mask = capacity - 1;
    for (const Entry& entry : table_) {
      if (entry.slot == empty_slot) continue;
      std::size_t i = home(entry.id, mask);
      while (table[i].slot != empty_slot) i = (i + 1) & mask;
      table[i] = entry;
    }
    table_.swap(table);
  }
  /// Room for one more id, growing geometrically. Strong guarantee, as `reserve`.
  void reserve_one_more() {
    if (table_.size() / 5 * 4 < size_ + 1) reserve(2 * size_ + 16);
  }
  /// Maps `id` to `slot` (`slot` < 2^32 - 1) unless `id` is mapped already (then returns
  /// false and changes nothing). Needs the room `reserve` made: never allocates nor throws.
  bool insert(std::uint64_t id, std::uint32_t slot) noexcept {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = home(id, mask);
    for (; table_[i].slot != empty_slot; i = (i + 1) & mask) {
      if (table_[i].id == id) return false;
    }
    table_[i] = {id, slot};
    ++size_;
    return true;
  }
  /// Unmaps `id` if it is mapped.
  void erase(std::uint64_t id) noexcept {
    if (table_.empty()) return;
    const std::size_t mask = table_.size() - 1;
    std::size_t hole = home(id, mask);
    for (;; hole = (hole + 1) & mask) {
      if (table_[hole].slot == empty_slot) return;
      if (table_[hole].id == id) break;
    }
    // Backward shift: move up every later entry of the run whose home does not lie
    // (cyclically) in (hole, j], so that lookups never stop early at the hole.
    for (std::size_t j = (hole + 1) & mask; table_[j].slot != empty_slot; j = (j + 1) & mask) {
      const std::size_t wanted = home(table_[j].id, mask);
      const bool stays = hole <= j ? (hole < wanted && wanted <= j) : (hole < wanted || wanted <= j);
      if (stays) continue;
      table_[hole] = table_[j];
      hole = j;
    }
    table_[hole] = Entry{};
    --size_;
  }
  /// Calls `visit(id, slot)` for every mapped id (table order).
  template <class Visitor>
  void for_each(Visitor&& visit) const {
    for (const Entry& entry : table_) {
      if (entry.slot != empty_slot) visit(entry.id, entry.slot);
    }
  }
  /// Bytes of the table.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return table_.capacity() * sizeof(Entry);
  }

 private:
  static constexpr std::uint32_t empty_slot = std::numeric_limits<std::uint32_t>::max();
  struct Entry {
    std::uint64_t id = 0;
    std::uint32_t slot = empty_slot;
  };
  /// splitmix64's finaliser, masked: ids are often dense, so they are mixed first.
  [[nodiscard]] static std::size_t home(std::uint64_t id, std::size_t mask) noexcept {
    id += 0x9e3779b97f4a7c15ULL;
    id = (id ^ (id >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    id = (id ^ (id >> 27U)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(id ^ (id >> 31U)) & mask;
  }

  std::vector<Entry> table_;  // power-of-two size, at most 80 % full; empty when nothing mapped
  std::size_t size_ = 0;
};

}  // namespace topopreempt::detail
