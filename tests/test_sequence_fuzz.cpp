// SPDX-License-Identifier: MIT
// The sequence fuzzer over fixed seeds (tests/sequence_fuzz.hpp), so plain ctest exercises it
// without clang or libFuzzer. tests/fuzz/fuzz_sequence.cpp runs the same engine under libFuzzer.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sequence_fuzz.hpp"

namespace {

/// The bytes of fixed seed `seed`: a plain generator, the same on every standard library.
std::vector<std::uint8_t> sequence_seed_bytes(std::uint64_t seed, std::size_t size) {
  std::mt19937_64 random(seed);
  std::vector<std::uint8_t> bytes(size);
  for (auto& byte : bytes) byte = static_cast<std::uint8_t>(random() >> 56);
  return bytes;
}

}  // namespace

TEST_SUITE("sequence_fuzz") {
  TEST_CASE("random operation sequences keep every rule (fixed seeds)") {
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
      CAPTURE(seed);
      const std::vector<std::uint8_t> bytes = sequence_seed_bytes(seed, 600);
      const auto finding = topopreempt::test::sequence::run_sequence(bytes, 48);
      CHECK_MESSAGE(!finding, (finding ? *finding : std::string()));
    }
  }

  TEST_CASE("the same bytes replay the same sequence") {
    const std::vector<std::uint8_t> bytes = sequence_seed_bytes(7, 600);
    topopreempt::test::sequence::Run first(bytes);
    topopreempt::test::sequence::Run second(bytes);
    CHECK_FALSE(first.run(48));
    CHECK_FALSE(second.run(48));
    CHECK(first.state().size() > 0);
    CHECK(topopreempt::test::state_fingerprint(first.state(), {0, 10}) ==
          topopreempt::test::state_fingerprint(second.state(), {0, 10}));
  }
}
