// SPDX-License-Identifier: MIT
#pragma once
/// @file slot_map.hpp
/// `detail::SlotMap`: the state's map from workload id to record slot, one flat table (open
/// addressing, linear probing, deletion by backward shift, so no tombstones). Replaces a
/// node-based `std::unordered_map`: no allocation per workload, one cache line per lookup,
/// and about half the bytes (16 per slot at most 80 % full, against a node and a bucket per
/// workload). Ids come mostly dense (1, 2, 3, ...): four consecutive ids share a home block of
/// four slots, one cache line (the table is line-aligned), so filling or reading ids in order
/// touches a quarter of the lines a slot-by-slot hash would. Internal to `Allocation`; not a
/// header to include on its own.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "topopreempt/model/detail/mix.hpp"

namespace topopreempt::detail {

/// Allocates on cache-line boundaries, so that a home block of `SlotMap` is one line.
template <class T>
struct CacheLineAllocator {
  /// Element type.
  using value_type = T;
  /// Line size assumed (x86-64 and most ARM cores).
  static constexpr std::size_t line_bytes = 64;
  CacheLineAllocator() = default;
  /// Rebinding copy (stateless).
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) noexcept {}
  /// `count` elements, line-aligned.
  [[nodiscard]] T* allocate(std::size_t count) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    return static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t{line_bytes}));
  }
  /// Frees what `allocate` returned. Unsized: Clang declares the sized aligned `operator
  /// delete` only with `-fsized-deallocation`, which it leaves off by default.
  void deallocate(T* block, std::size_t /*count*/) noexcept {
    ::operator delete(block, std::align_val_t{line_bytes});
  }
  /// Stateless: all equal.
  template <class U>
  bool operator==(const CacheLineAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

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
    Table table(capacity);
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
  static_assert(sizeof(Entry) * 4 == CacheLineAllocator<Entry>::line_bytes);
  using Table = std::vector<Entry, CacheLineAllocator<Entry>>;
  /// The home block is splitmix64's finaliser of id / 4 (ids are often dense, so they are
  /// mixed first), the slot in it id % 4: consecutive ids fill one line. Masked (the table
  /// has at least 16 slots, so whole blocks).
  [[nodiscard]] static std::size_t home(std::uint64_t id, std::size_t mask) noexcept {
    const std::uint64_t block = splitmix64_mix(id >> 2U);
    return static_cast<std::size_t>((block << 2U) | (id & 3U)) & mask;
  }

  Table table_;  // power-of-two size, at most 80 % full; empty when nothing mapped
  std::size_t size_ = 0;
};

}  // namespace topopreempt::detail
