// SPDX-License-Identifier: MIT
// libFuzzer target: the input bytes drive a sequence of operations on one cluster state (add,
// remove, shrink, solve and commit, stale commits, queue plans committed in order, incremental
// decider calls; tests/sequence_fuzz.hpp). Findings: any sanitizer report, any escaping
// exception, and every broken rule the engine checks (a plan failing verification, a placement
// `add` refuses, a stale commit that lands or changes the state, a decider differing from a
// cold solve). Deterministic: an input replays exactly.
// Built only by tests/fuzz/CMakeLists.txt (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "../sequence_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto finding =
      topopreempt::test::sequence::run_sequence(std::span<const std::uint8_t>(data, size), 64);
  if (finding) {
    std::fprintf(stderr, "FINDING: %s\n", finding->c_str());
    std::abort();
  }
  return 0;
}
