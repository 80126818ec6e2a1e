// SPDX-License-Identifier: MIT
// Exactness of the min-cost covering DP: brute force on small random instances, Pisinger's
// knapsack instances (through the complement), error paths, determinism and buffer reuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <topopreempt/solvers/detail/min_cost_covering.hpp>
#include <type_traits>
#include <vector>

#include "pisinger_domain.hpp"
#include "support.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

namespace {

namespace tp = topopreempt::detail;

// std distributions differ between standard libraries; the engine itself does not.
struct test_rng {
  std::mt19937_64 engine;
  explicit test_rng(std::uint64_t seed) : engine(seed) {}
  std::int64_t between(std::int64_t lo, std::int64_t hi) {  // inclusive
    return lo + static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  double unit() { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }
};

template <class Cost>
Cost random_cost(test_rng& rng) {
  if constexpr (std::is_same_v<Cost, double>) {
    // Integer-valued doubles half the time, so exact ties occur on the double path too.
    return rng.between(0, 1) == 0 ? static_cast<double>(rng.between(0, 20)) : rng.unit() * 20.0;
  } else {
    return rng.between(0, 20);
  }
}

// Same association as the DP (right fold in group order), so double costs compare bit-exactly
// when the choice vectors are equal.
template <class Cost>
Cost cost_of(const tp::covering_problem<Cost>& problem, const std::vector<std::int32_t>& choice) {
  Cost total{};
  for (std::size_t g = problem.group_count(); g-- > 0;) {
    if (choice[g] != tp::no_option) {
      total = problem.group(g)[static_cast<std::size_t>(choice[g])].cost + total;
    }
  }
  return total;
}

template <class Cost>
bool covers(const tp::covering_problem<Cost>& problem, const std::vector<std::int32_t>& choice,
            const tp::covering_amount& deficit) {
  tp::covering_amount freed{};
  for (std::size_t g = 0; g < problem.group_count(); ++g) {
    if (choice[g] != tp::no_option) {
      const auto& option = problem.group(g)[static_cast<std::size_t>(choice[g])];
      freed[0] += option.gain[0];
      freed[1] += option.gain[1];
    }
  }
  return freed[0] >= deficit[0] && freed[1] >= deficit[1];
}

template <class Cost>
struct brute_result {
  bool feasible = false;
  Cost cost{};
  std::vector<std::int32_t> choice;
};

// Visits every choice vector in lexicographic order (no_option first, group 0 most significant)
// and keeps the first strictly cheaper one: that is the documented tie-breaking rule. Depth-first
// with running sums, so that it stays fast in unoptimised sanitizer builds.
template <class Cost>
class brute_force_search {
 public:
  brute_force_search(const tp::covering_problem<Cost>& problem, const tp::covering_amount& deficit)
      : problem_(problem), deficit_(deficit), choice_(problem.group_count(), tp::no_option) {
    visit(0, {0, 0}, Cost{});
  }
  brute_result<Cost> result() const { return best_; }

 private:
  void visit(std::size_t g, tp::covering_amount freed, Cost cost) {
    if (g == choice_.size()) {
      if (freed[0] >= deficit_[0] && freed[1] >= deficit_[1] &&
          (!best_.feasible || cost < best_.cost)) {
        best_ = {true, cost, choice_};
      }
      return;
    }
    choice_[g] = tp::no_option;
    visit(g + 1, freed, cost);
    const auto options = problem_.group(g);
    for (std::size_t o = 0; o < options.size(); ++o) {
      choice_[g] = static_cast<std::int32_t>(o);
      visit(g + 1, {freed[0] + options[o].gain[0], freed[1] + options[o].gain[1]},
            cost + options[o].cost);
    }
    choice_[g] = tp::no_option;
  }

  const tp::covering_problem<Cost>& problem_;
  tp::covering_amount deficit_;
  std::vector<std::int32_t> choice_;
  brute_result<Cost> best_;
};

template <class Cost>
brute_result<Cost> brute_force(const tp::covering_problem<Cost>& problem,
                               const tp::covering_amount& deficit) {
  return brute_force_search<Cost>(problem, deficit).result();
}

template <class Cost>
void check_close(Cost actual, Cost expected) {
  if constexpr (std::is_same_v<Cost, double>) {
    CHECK(std::abs(actual - expected) <= 1e-9 * std::max(1.0, std::abs(expected)));
  } else {
    CHECK(actual == expected);
  }
}

// Checks one solver result against brute force.
template <class Cost>
void check_against_brute_force(const tp::covering_problem<Cost>& problem,
                               const tp::covering_amount& deficit,
                               const tp::covering_result<Cost>& result,
                               const brute_result<Cost>& expected) {
  REQUIRE(result.choice.size() == problem.group_count());
  if (!expected.feasible) {
    CHECK(result.status == tp::covering_status::infeasible);
    return;
  }
  REQUIRE(result.status == tp::covering_status::optimal);
  CHECK(covers(problem, result.choice, deficit));
  CHECK(cost_of(problem, result.choice) == result.cost);
  check_close(result.cost, expected.cost);
  if constexpr (std::is_same_v<Cost, std::int64_t>) {
    CHECK(result.choice == expected.choice);  // the tie-breaking rule, exactly
  }
}

template <class Cost>
std::string thrown_message(const tp::covering_problem<Cost>& problem,
                           const tp::covering_amount& deficit) {
  tp::min_cost_covering_workspace<Cost> ws;
  try {
    (void)tp::solve_min_cost_covering(problem, deficit, ws);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument>";
}

// ---- Pisinger instances ----------------------------------------------------------------------

// The instances the unit tests use are shipped in tests/data/knapsack (see its README.md).
std::string knapsack_path(const std::string& relative) {
  return topopreempt::test::test_data("knapsack/" + relative).string();
}

std::vector<std::string> read_tokens(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path);
  // operator>> treats the files' CR line ends as whitespace.
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

struct int_instance {
  std::int64_t capacity = 0;
  std::vector<std::int64_t> profits;
  std::vector<std::int64_t> weights;
  std::vector<std::int64_t> known_solution;  // large_scale only
};

int_instance read_int_instance(const std::string& path) {
  const std::vector<std::string> tokens = read_tokens(path);
  REQUIRE(tokens.size() >= 2);
  const auto n = static_cast<std::size_t>(std::stoll(tokens[0]));
  REQUIRE(tokens.size() >= 2 + 2 * n);
  int_instance instance;
  instance.capacity = std::stoll(tokens[1]);
  for (std::size_t i = 0; i < n; ++i) {
    instance.profits.push_back(std::stoll(tokens[2 + 2 * i]));
    instance.weights.push_back(std::stoll(tokens[3 + 2 * i]));
  }
  for (std::size_t t = 2 + 2 * n; t < tokens.size(); ++t) {
    instance.known_solution.push_back(std::stoll(tokens[t]));
  }
  return instance;
}

template <class T>
T read_optimum(const std::string& path) {
  const std::vector<std::string> tokens = read_tokens(path);
  REQUIRE(tokens.size() == 1);
  if constexpr (std::is_same_v<T, double>) {
    return std::stod(tokens[0]);
  } else {
    return std::stoll(tokens[0]);
  }
}

void check_int_knapsack(const std::string& instance_path, const std::string& optimum_path,
                        tp::min_cost_covering_workspace<std::int64_t>& ws) {
  CAPTURE(instance_path);
  const int_instance instance = read_int_instance(instance_path);
  const auto optimum = read_optimum<std::int64_t>(optimum_path);
  const tp::knapsack_result<std::int64_t> result = tp::solve_knapsack_01<std::int64_t>(
      instance.profits, instance.weights, instance.capacity, ws);
  REQUIRE(result.status == tp::covering_status::optimal);
  CHECK(result.profit == optimum);
  std::int64_t weight = 0;
  std::int64_t profit = 0;
  for (std::size_t i = 0; i < result.take.size(); ++i) {
    if (result.take[i] != 0) {
      weight += instance.weights[i];
      profit += instance.profits[i];
    }
  }
  CHECK(weight <= instance.capacity);
  CHECK(profit == result.profit);
  if (!instance.known_solution.empty()) {  // cross-check the data file itself
    REQUIRE(instance.known_solution.size() == instance.profits.size());
    std::int64_t known_weight = 0;
    std::int64_t known_profit = 0;
    for (std::size_t i = 0; i < instance.known_solution.size(); ++i) {
      known_weight += instance.known_solution[i] * instance.weights[i];
      known_profit += instance.known_solution[i] * instance.profits[i];
    }
    CHECK(known_weight <= instance.capacity);
    CHECK(known_profit == optimum);
    // Kept side (capacity ~1%) is far smaller than the evicted side: the complement must fire.
    CHECK(result.method == tp::covering_method::complement);
  }
}

/// Calls `visit(name, instance path, optimum path)` for Pisinger's types 1-3 at n = 1000 and
/// 2000, read from the full data set; stops (with doctest's skip message) when it is absent.
template <class Visit>
void for_each_full_data_pisinger(Visit&& visit) {
  for (const char* type : {"1", "2", "3"}) {
    for (const char* n : {"1000", "2000"}) {
      const std::string name = std::string("knapPI_") + type + "_" + n + "_1000_1";
      const auto instance = topopreempt::test::data_file_or_skip("knapsack/large_scale/" + name);
      const auto optimum = topopreempt::test::data_file_or_skip("knapsack/large_scale-optimum/" + name);
      if (!instance || !optimum) return;
      visit(name, instance->string(), optimum->string());
    }
  }
}

}  // namespace

TEST_SUITE("min_cost_covering") {
  TEST_CASE_TEMPLATE("matches brute force on random small instances", Cost, std::int64_t, double) {
    test_rng rng(std::is_same_v<Cost, double> ? 0xD0B1EULL : 0x1E64ULL);
    tp::min_cost_covering_workspace<Cost> ws;
    tp::covering_problem<Cost> problem;
    int infeasible = 0;
    int complemented = 0;
    constexpr int instances = 1200;  // per cost type
    for (int k = 0; k < instances; ++k) {
      const bool two_d = rng.between(0, 1) == 1;
      problem.clear();
      const auto groups = rng.between(1, 10);
      std::int64_t reach0 = 0;
      std::int64_t reach1 = 0;
      for (std::int64_t g = 0; g < groups; ++g) {
        problem.begin_group();
        const auto options = rng.between(1, 3);
        std::int64_t best0 = 0;
        std::int64_t best1 = 0;
        for (std::int64_t o = 0; o < options; ++o) {
          // In 1-D the second dimension still gets gains: with deficit 0 they must not matter.
          const tp::covering_amount gain{rng.between(0, 6), rng.between(0, 4)};
          problem.add_option({gain, random_cost<Cost>(rng)});
          best0 = std::max(best0, gain[0]);
          best1 = std::max(best1, gain[1]);
        }
        reach0 += best0;
        reach1 += best1;
      }
      // Slightly beyond the reach, so some instances are infeasible.
      const tp::covering_amount deficit{rng.between(0, reach0 + 2),
                                        two_d ? rng.between(0, reach1 + 1) : 0};
      CAPTURE(k);
      CAPTURE(deficit[0]);
      CAPTURE(deficit[1]);
      const brute_result<Cost> expected = brute_force(problem, deficit);
      const tp::covering_result<Cost> result = tp::solve_min_cost_covering(problem, deficit, ws);
      check_against_brute_force(problem, deficit, result, expected);
      infeasible += expected.feasible ? 0 : 1;
      complemented += result.method == tp::covering_method::complement ? 1 : 0;
    }
    // The generator must actually exercise both outcomes.
    CHECK(infeasible > 0);
    CHECK(infeasible < instances / 4);
    CHECK(complemented > 0);
  }

  TEST_CASE_TEMPLATE("complement and direct DP agree on pure 0-1 instances", Cost, std::int64_t,
                     double) {
    test_rng rng(std::is_same_v<Cost, double> ? 0xC0DEULL : 0xC1DEULL);
    tp::min_cost_covering_workspace<Cost> ws;
    tp::covering_problem<Cost> problem;
    tp::covering_limits direct_only;
    direct_only.complement = tp::complement_policy::never;
    int complemented = 0;
    for (int k = 0; k < 400; ++k) {
      problem.clear();
      const auto groups = rng.between(1, 12);
      std::int64_t total = 0;
      for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t gain = rng.between(0, 30);  // 0: a group that can never help
        problem.begin_group();
        problem.add_option({{gain, 0}, random_cost<Cost>(rng)});
        total += gain;
      }
      const tp::covering_amount deficit{rng.between(0, total), 0};
      CAPTURE(k);
      const brute_result<Cost> expected = brute_force(problem, deficit);
      const auto automatic = tp::solve_min_cost_covering(problem, deficit, ws);
      const auto direct = tp::solve_min_cost_covering(problem, deficit, ws, direct_only);
      check_against_brute_force(problem, deficit, automatic, expected);
      check_against_brute_force(problem, deficit, direct, expected);
      CHECK(direct.method != tp::covering_method::complement);
      if (automatic.method == tp::covering_method::complement) {
        ++complemented;
        CHECK(automatic.cells < direct.cells);
        if constexpr (std::is_same_v<Cost, std::int64_t>) {
          CHECK(automatic.choice == direct.choice);
        }
      }
    }
    CHECK(complemented > 100);
  }

  TEST_CASE("the second dimension can be the only binding one") {
    tp::covering_problem<std::int64_t> problem;
    problem.add_group(std::vector<tp::covering_option<std::int64_t>>{{{5, 1}, 1}, {{0, 3}, 4}});
    problem.add_group(std::vector<tp::covering_option<std::int64_t>>{{{0, 2}, 2}});
    problem.add_group(std::vector<tp::covering_option<std::int64_t>>{{{9, 9}, 7}});
    tp::min_cost_covering_workspace<std::int64_t> ws;
    const auto result = tp::solve_min_cost_covering(problem, {0, 3}, ws);
    REQUIRE(result.status == tp::covering_status::optimal);
    CHECK(result.cost == 3);
    CHECK(result.choice == std::vector<std::int32_t>{0, 0, tp::no_option});
  }

  TEST_CASE("Pisinger low-dimensional instances reach the known optimum") {
    tp::min_cost_covering_workspace<std::int64_t> ws;
    for (const char* name : {"f1_l-d_kp_10_269", "f2_l-d_kp_20_878", "f3_l-d_kp_4_20",
                             "f4_l-d_kp_4_11", "f6_l-d_kp_10_60", "f7_l-d_kp_7_50",
                             "f8_l-d_kp_23_10000", "f9_l-d_kp_5_80", "f10_l-d_kp_20_879"}) {
      check_int_knapsack(knapsack_path(std::string("low-dimensional/") + name),
                         knapsack_path(std::string("low-dimensional-optimum/") + name), ws);
    }
  }

  TEST_CASE("Pisinger f5 (real-valued weights and profits) reaches the known optimum") {
    // The DP needs integer weights, so solve twice: weights rounded up (every solution is
    // feasible for the real weights, a lower bound) and rounded down (a relaxation, an upper
    // bound). Both meeting the published optimum proves the double path reaches it.
    const std::string name = "f5_l-d_kp_15_375";
    const std::vector<std::string> tokens = read_tokens(knapsack_path("low-dimensional/" + name));
    const auto n = static_cast<std::size_t>(std::stoll(tokens[0]));
    REQUIRE(tokens.size() == 2 + 2 * n);
    const double capacity = std::stod(tokens[1]);
    std::vector<double> profits;
    std::vector<double> weights;
    std::vector<std::int64_t> weights_up;
    std::vector<std::int64_t> weights_down;
    for (std::size_t i = 0; i < n; ++i) {
      profits.push_back(std::stod(tokens[2 + 2 * i]));
      weights.push_back(std::stod(tokens[3 + 2 * i]));
      weights_up.push_back(static_cast<std::int64_t>(std::ceil(weights.back())));
      weights_down.push_back(static_cast<std::int64_t>(std::floor(weights.back())));
    }
    const auto integer_capacity = static_cast<std::int64_t>(std::floor(capacity));
    const auto optimum = read_optimum<double>(knapsack_path("low-dimensional-optimum/" + name));

    tp::min_cost_covering_workspace<double> ws;
    const auto lower = tp::solve_knapsack_01<double>(profits, weights_up, integer_capacity, ws);
    REQUIRE(lower.status == tp::covering_status::optimal);
    double weight = 0;
    double profit = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (lower.take[i] != 0) {
        weight += weights[i];
        profit += profits[i];
      }
    }
    CHECK(weight <= capacity);
    CHECK(profit == doctest::Approx(lower.profit).epsilon(1e-12));
    CHECK(std::abs(lower.profit - optimum) <= 1e-3);

    const auto upper = tp::solve_knapsack_01<double>(profits, weights_down, integer_capacity, ws);
    REQUIRE(upper.status == tp::covering_status::optimal);
    CHECK(upper.profit <= optimum + 1e-3);
  }

  TEST_CASE("Pisinger large-scale instances reach the known optimum") {
    tp::min_cost_covering_workspace<std::int64_t> ws;
    for (const char* type : {"1", "2", "3"}) {
      for (const char* n : {"100", "200", "500"}) {
        const std::string name = std::string("knapPI_") + type + "_" + n + "_1000_1";
        check_int_knapsack(knapsack_path("large_scale/" + name),
                           knapsack_path("large_scale-optimum/" + name), ws);
      }
    }
  }

  TEST_CASE("Pisinger large-scale instances of 1000 and 2000 items" *
            doctest::test_suite("full_data")) {
    // Not shipped in tests/data (100 KB): read from the full data set when it is there.
    tp::min_cost_covering_workspace<std::int64_t> ws;
    for_each_full_data_pisinger([&](const std::string&, const std::string& instance, const std::string& optimum) {
      check_int_knapsack(instance, optimum, ws);
    });
  }

  TEST_CASE("knapsack edge cases") {
    tp::min_cost_covering_workspace<std::int64_t> ws;
    const std::vector<std::int64_t> profits{5, 0, 7};
    const std::vector<std::int64_t> weights{3, 4, 0};
    const auto all_fit = tp::solve_knapsack_01<std::int64_t>(profits, weights, 100, ws);
    CHECK(all_fit.profit == 12);
    CHECK(all_fit.take == std::vector<std::uint8_t>{1, 1, 1});
    const auto none_fit = tp::solve_knapsack_01<std::int64_t>(profits, weights, 2, ws);
    CHECK(none_fit.profit == 7);  // the weightless item still goes in
    CHECK(none_fit.take == std::vector<std::uint8_t>{0, 0, 1});
    CHECK_THROWS_AS((void)tp::solve_knapsack_01<std::int64_t>(profits, weights, -1, ws),
                    std::invalid_argument);
    const std::vector<std::int64_t> short_weights{1};
    CHECK_THROWS_AS((void)tp::solve_knapsack_01<std::int64_t>(profits, short_weights, 1, ws),
                    std::invalid_argument);
  }

  TEST_CASE("error paths and trivial outcomes") {
    using option = tp::covering_option<std::int64_t>;
    tp::min_cost_covering_workspace<std::int64_t> ws;
    tp::covering_problem<std::int64_t> problem;
    problem.add_group(std::vector<option>{{{2, 0}, 3}});
    problem.add_group(std::vector<option>{{{1, 1}, 1}, {{4, 0}, 5}});

    SUBCASE("zero deficit: optimal, free, nobody chosen") {
      const auto result = tp::solve_min_cost_covering(problem, {0, 0}, ws);
      CHECK(result.status == tp::covering_status::optimal);
      CHECK(result.cost == 0);
      CHECK(result.choice == std::vector<std::int32_t>{tp::no_option, tp::no_option});
      CHECK(result.cells == 0);
    }
    SUBCASE("infeasible: even the largest options fall short") {
      const auto result = tp::solve_min_cost_covering(problem, {7, 0}, ws);
      CHECK(result.status == tp::covering_status::infeasible);
      CHECK(result.choice == std::vector<std::int32_t>{tp::no_option, tp::no_option});
    }
    SUBCASE("infeasible in 2-D although each dimension alone is reachable") {
      // Dim 0 needs option 1 of group 1 (4 units), dim 1 needs its option 0: exclusive.
      const auto result = tp::solve_min_cost_covering(problem, {6, 1}, ws);
      CHECK(result.status == tp::covering_status::infeasible);
      CHECK(result.cells > 0);
    }
    SUBCASE("too_large with a tiny cell budget") {
      tp::covering_limits tiny;
      tiny.max_cells = 3;
      const auto result = tp::solve_min_cost_covering(problem, {3, 0}, ws, tiny);
      CHECK(result.status == tp::covering_status::too_large);
      CHECK(result.cells == 0);
    }
    SUBCASE("negative gain names the group and option") {
      problem.add_group(std::vector<option>{{{1, 0}, 1}, {{1, -1}, 1}});
      CHECK(thrown_message(problem, {1, 0}).find("group 2 option 1") != std::string::npos);
    }
    SUBCASE("negative cost names the group and option") {
      problem.add_group(std::vector<option>{{{1, 0}, -2}});
      CHECK(thrown_message(problem, {1, 0}).find("group 2 option 0") != std::string::npos);
    }
    SUBCASE("non-finite double cost") {
      tp::covering_problem<double> doubles;
      doubles.add_group(std::vector<tp::covering_option<double>>{{{1, 0}, std::nan("")}});
      CHECK(thrown_message(doubles, {1, 0}).find("group 0 option 0") != std::string::npos);
    }
    SUBCASE("overflowing deficit, cells and costs") {
      CHECK(thrown_message(problem, {-1, 0}).find("negative") != std::string::npos);
      const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
      CHECK(thrown_message(problem, {huge, 0}).find("overflows") != std::string::npos);
      CHECK(thrown_message(problem, {huge - 1, huge - 1}).find("overflows") != std::string::npos);
      problem.add_group(std::vector<option>{{{1, 0}, huge / 2}});
      CHECK(thrown_message(problem, {1, 0}).find("group 2") != std::string::npos);
    }
    SUBCASE("add_option before begin_group") {
      tp::covering_problem<std::int64_t> empty;
      CHECK_THROWS_AS(empty.add_option({{1, 0}, 1}), std::logic_error);
    }
  }

  TEST_CASE("determinism and buffer reuse") {
    test_rng rng(0x5EEDULL);
    const auto make = [&rng](std::int64_t groups, std::int64_t max_gain) {
      tp::covering_problem<double> problem;
      for (std::int64_t g = 0; g < groups; ++g) {
        problem.begin_group();
        for (std::int64_t o = rng.between(1, 4); o > 0; --o) {
          // Costs from a handful of values: many ties for the rule to settle.
          problem.add_option({{rng.between(0, max_gain), rng.between(0, max_gain)},
                              static_cast<double>(rng.between(1, 4)) * 0.1});
        }
      }
      return problem;
    };
    const auto small = make(40, 6);
    const auto big = make(120, 30);
    const tp::covering_amount small_deficit{30, 25};
    const tp::covering_amount big_deficit{150, 120};

    tp::min_cost_covering_workspace<double> fresh;
    const auto first = tp::solve_min_cost_covering(small, small_deficit, fresh);
    REQUIRE(first.status == tp::covering_status::optimal);

    tp::min_cost_covering_workspace<double> reused;
    REQUIRE(tp::solve_min_cost_covering(big, big_deficit, reused).status ==
            tp::covering_status::optimal);
    const std::size_t warmed = reused.reserved_bytes();
    tp::covering_result<double> again;
    tp::solve_min_cost_covering_into(small, small_deficit, reused, {}, again);
    const std::int32_t* const choice_buffer = again.choice.data();
    tp::solve_min_cost_covering_into(small, small_deficit, reused, {}, again);

    REQUIRE(again.choice.size() == first.choice.size());
    CHECK(std::equal(first.choice.begin(), first.choice.end(), again.choice.begin()));
    CHECK(std::bit_cast<std::uint64_t>(first.cost) == std::bit_cast<std::uint64_t>(again.cost));
    CHECK(first.cells == again.cells);
    CHECK(reused.reserved_bytes() == warmed);     // nothing grew after the bigger warm-up
    CHECK(again.choice.data() == choice_buffer);  // the result's buffer was reused too
  }
}

// ---- Pure knapsack domains through branch-and-bound (issue 19) ---------------------------------
// Pisinger's instances as one-node preemption problems (tests/pisinger_domain.hpp). The exact
// covering bound at B&B's root proves types 1-3 within the default budget; the fractional bound
// alone never closed the strongly correlated ones.

namespace {

/// Solves `items` as a preemption problem with default branch-and-bound and checks the plan:
/// verified, `optimal`, lower bound == cost == total profit - `optimum`, no limit hit.
topopreempt::PreemptionPlan check_bnb_proves(const topopreempt::test::KnapsackItems& items,
                                             std::int64_t optimum, const std::string& what) {
  using namespace topopreempt;
  CAPTURE(what);
  const test::KnapsackDomain domain = test::knapsack_domain(items);
  const test::item_profit model;
  const PreemptionPlan plan = solvers::branch_and_bound.solve(*domain.state, domain.preemptor, model);
  const PlanVerdict verdict = verify_plan(*domain.state, domain.preemptor, plan, model);
  CHECK_MESSAGE(verdict.ok, verdict.summary());
  CHECK(plan.status == PlanStatus::optimal);
  CHECK_FALSE(plan.statistics.limit_reached);
  CHECK(plan.cost == static_cast<double>(domain.total_profit - optimum));
  CHECK(plan.lower_bound == plan.cost);
  return plan;
}

/// The optimum by the int64 covering DP with a raised cell limit (the reference).
std::int64_t reference_knapsack_optimum(const topopreempt::test::KnapsackItems& items) {
  tp::min_cost_covering_workspace<std::int64_t> workspace;
  tp::covering_limits limits;
  limits.max_cells = std::size_t{1} << 28;
  const auto result = tp::solve_knapsack_01<std::int64_t>(items.profits, items.weights,
                                                          items.capacity, workspace, limits);
  REQUIRE(result.status == tp::covering_status::optimal);
  return result.profit;
}

}  // namespace

TEST_SUITE("pisinger_bnb") {
  TEST_CASE("branch-and-bound proves the shipped Pisinger instances (types 1-3, n <= 500)") {
    for (const char* type : {"1", "2", "3"}) {
      for (const char* n : {"100", "200", "500"}) {
        const std::string name = std::string("knapPI_") + type + "_" + n + "_1000_1";
        (void)check_bnb_proves(topopreempt::test::read_pisinger(knapsack_path("large_scale/" + name)),
                         topopreempt::test::read_pisinger_optimum(
                             knapsack_path("large_scale-optimum/" + name)),
                         name);
      }
    }
  }

  TEST_CASE("branch-and-bound proves Pisinger's n = 1000 and 2000 instances" *
            doctest::test_suite("full_data")) {
    for_each_full_data_pisinger([](const std::string& name, const std::string& instance, const std::string& optimum) {
      (void)check_bnb_proves(topopreempt::test::read_pisinger(instance),
                             topopreempt::test::read_pisinger_optimum(optimum), name);
    });
  }

  TEST_CASE("branch-and-bound proves generated types 1-3 at n = 5000") {
    // Generated as Pisinger's generator does (R = 1000, capacity = total weight / 101); the data
    // set ships n <= 2000 only. The reference is the int64 covering DP with 2^28 cells.
    for (const int type : {1, 2, 3}) {
      const auto items = topopreempt::test::generate_pisinger(type, 5000, static_cast<std::uint64_t>(19 + type));
      const topopreempt::PreemptionPlan plan =
          check_bnb_proves(items, reference_knapsack_optimum(items), "generated type " + std::to_string(type));
      CHECK(plan.statistics.dp_cells > 0);  // closed by the exact covering bound
    }
  }

  TEST_CASE("below the covering bound's size threshold the fractional search decides alone") {
    const auto items = topopreempt::test::generate_pisinger(3, 23, 7);
    const topopreempt::PreemptionPlan plan =
        check_bnb_proves(items, reference_knapsack_optimum(items), "23 strongly correlated items");
    CHECK(plan.statistics.dp_cells == 0);
  }
}
