// SPDX-License-Identifier: MIT
// `detail::SlotMap`, the state's flat id -> slot map: against std::map under random inserts and
// erases (runs that wrap around the table end, backward shifts), growth, copies and moves.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "topopreempt/model/detail/slot_map.hpp"

using topopreempt::detail::SlotMap;

namespace {

/// Checks that `map` holds exactly `expected`.
void check_same(const SlotMap& map, const std::map<std::uint64_t, std::uint32_t>& expected) {
  REQUIRE(map.size() == expected.size());
  std::map<std::uint64_t, std::uint32_t> seen;
  map.for_each([&](std::uint64_t id, std::uint32_t slot) { seen.emplace(id, slot); });
  CHECK(seen == expected);
  for (const auto& [id, slot] : expected) {
    const std::uint32_t* found = map.find(id);
    REQUIRE(found != nullptr);
    CHECK(*found == slot);
  }
}

}  // namespace

TEST_SUITE("slot_map") {
  TEST_CASE("random inserts and erases agree with std::map") {
    for (const std::uint64_t id_range : {std::uint64_t{40}, std::uint64_t{5000}, ~std::uint64_t{0}}) {
      std::mt19937_64 random(id_range);
      SlotMap map;
      std::map<std::uint64_t, std::uint32_t> expected;
      CHECK_FALSE(map.contains(0));
      map.erase(7);  // nothing mapped: a no-op
      for (std::uint32_t step = 0; step < 20000; ++step) {
        const std::uint64_t id = random() % id_range;
        if (random() % 3 != 0) {
          map.reserve_one_more();
          const bool inserted = map.insert(id, step);
          CHECK(inserted == expected.emplace(id, step).second);
        } else {
          map.erase(id);
          expected.erase(id);
          CHECK_FALSE(map.contains(id));
        }
        if (step % 997 == 0) check_same(map, expected);
      }
      check_same(map, expected);
      // Draining it one by one exercises every backward shift.
      while (!expected.empty()) {
        const auto it = expected.begin();
        map.erase(it->first);
        expected.erase(it);
        REQUIRE(map.size() == expected.size());
      }
      check_same(map, expected);
    }
  }

  TEST_CASE("reserve keeps the entries; copies are equal and independent; moves empty") {
    SlotMap map;
    std::map<std::uint64_t, std::uint32_t> expected;
    map.reserve(3);
    const std::size_t small = map.memory_bytes();
    CHECK(small > 0);
    for (std::uint32_t i = 1; i <= 1000; ++i) {
      map.reserve_one_more();
      CHECK(map.insert(i, i - 1));
      expected.emplace(i, i - 1);
    }
    map.reserve(100000);
    CHECK(map.memory_bytes() > small);
    check_same(map, expected);
    SlotMap copy = map;
    copy.erase(5);
    check_same(map, expected);
    CHECK_FALSE(copy.contains(5));
    SlotMap moved = std::move(copy);
    CHECK(moved.size() == 999);
    CHECK(copy.size() == 0);  // NOLINT(bugprone-use-after-move): moved-from is empty and usable
    CHECK_FALSE(copy.contains(1));
    copy.reserve_one_more();
    CHECK(copy.insert(1, 0));
    CHECK(copy.contains(1));
  }
}
