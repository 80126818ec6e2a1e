// SPDX-License-Identifier: MIT
#pragma once
/// @file solve_driver.hpp
/// The driver every solver shares (`solve_with`): checks whether the preemptor fits as is, takes
/// candidate targets in ascending lower bound, reads a domain only while its bound can still win,
/// hands it to the solver's `DomainSearch`, and logs why the other domains lost.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/solvers/detail/context_core.hpp"
#include "topopreempt/solvers/detail/context_plan.hpp"
#include "topopreempt/solvers/detail/context_problem.hpp"
#include "topopreempt/solvers/detail/context_scan.hpp"

namespace topopreempt::detail {

/// The search inside one domain: given the problem and the best cost found so far elsewhere
/// (`incumbent`), return an outcome. Greedy, knapsack and branch-and-bound implement it.
template <class Search>
concept DomainSearch = requires(const Search& search, const Allocation& state,
                                const DomainProblem& problem, double incumbent, SearchLimits limits,
                                SolverStatistics& statistics) {
  { search.search(state, problem, incumbent, limits, statistics) } -> std::same_as<DomainOutcome>;
};

/// How many rejected domains a plan lists (the closest competitors first).
inline constexpr std::size_t max_listed_verdicts = 12;

/// Collects why domains lost: counts all, keeps the first few of each phase for the plan.
class RejectionLog {
 public:
  /// `cache` (optional): a decider's, whose kept lists the log takes and gives back when it
  /// ends, so that a decision allocates none.
  explicit RejectionLog(ScanCache* cache = nullptr) : cache_(cache) {
    if (cache_ == nullptr) return;
    scan_ = std::move(cache_->scan_rejections);
    search_ = std::move(cache_->search_rejections);
    scan_.clear();
    search_.clear();
  }
  ~RejectionLog() {
    if (cache_ == nullptr) return;
    cache_->scan_rejections = std::move(scan_);
    cache_->search_rejections = std::move(search_);
  }
  RejectionLog(const RejectionLog&) = delete;
  RejectionLog& operator=(const RejectionLog&) = delete;

  void scanned(Rejection rejection) { add(scan_, std::move(rejection)); }
  void searched(Rejection rejection) { add(search_, std::move(rejection)); }
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  /// Whether another searched-phase rejection would still be listed.
  [[nodiscard]] bool wants_more() const noexcept { return search_.size() < max_listed_verdicts; }
  /// Counts rejections that are not listed.
  void count_unlisted(std::size_t count) noexcept { total_ += count; }
  /// Searched domains (closest competitors) first, then domains dismissed by the scan, as data:
  /// their `reason` is left empty (`PreemptionContext::fill_text` words it).
  [[nodiscard]] std::vector<DomainVerdict> verdicts() const {
    std::vector<DomainVerdict> result;
    result.reserve(std::min(max_listed_verdicts, search_.size() + scan_.size()));  // one block
    for (const auto* list : {&search_, &scan_}) {
      for (const Rejection& r : *list) {
        if (result.size() == max_listed_verdicts) return result;
        result.push_back({.domain = r.domain,
                          .reason = {},
                          .kind = r.kind,
                          .dimension = r.shortfall.dim,
                          .have = r.shortfall.have,
                          .need = r.shortfall.need,
                          .victims = r.shortfall.victims,
                          .value = r.value,
                          .best = r.best,
                          .note = r.note});
      }
    }
    return result;
  }

 private:
  void add(std::vector<Rejection>& list, Rejection rejection) {
    ++total_;
    if (list.size() < max_listed_verdicts) list.push_back(std::move(rejection));
  }

  ScanCache* cache_;
  std::vector<Rejection> scan_;
  std::vector<Rejection> search_;
  std::uint64_t total_ = 0;
};

/// The first position at or after `from` whose element is not less than `value`, in an
/// ascending span whose elements before `from` are all less than it: O(log distance), by
/// doubling steps from `from` (a run of consecutive lookups walks the span once).
template <class T>
[[nodiscard]] std::size_t gallop_lower_bound(std::span<const T> sorted, std::size_t from,
                                             const T& value) {
  std::size_t step = 1;
  while (from + step <= sorted.size() && sorted[from + step - 1] < value) {
    from += step;
    step *= 2;
  }
  const auto tail = sorted.subspan(from, std::min(step, sorted.size() - from));
  return from + static_cast<std::size_t>(std::lower_bound(tail.begin(), tail.end(), value) -
                                         tail.begin());
}

/// What the tiers of one solve share: the decision's inputs and deadline, and what every tier
/// adds to (statistics, the log of rejected domains, downgrades).
template <CostModel Model, DomainSearch Search>
struct SolveRun {
  const Allocation& state;
  PreemptionContext<Model>& context;
  const Search& search;
  SearchLimits limits;
  ScanCache* cache;  ///< optional: scan results kept across decisions (`IncrementalDecider`)
  DeadlineWatch& deadline;
  SolverStatistics& statistics;
  RejectionLog& log;
  std::vector<Downgrade>& downgrades;  ///< every tier's, in search order
  /// Every domain costs at least the model's declared price floor: the preemptor fits nowhere
  /// as things stand, so each plan evicts or shrinks at least one victim.
  double floor;
  double grid;  ///< the model's declared cost grid: bounds are rounded up onto it
};

/// Phase "fits already": a plan without victims when the preemptor fits as things stand, so
/// that no tier is screened for a decision that needs none.
template <CostModel Model>
[[nodiscard]] std::optional<PreemptionPlan> plan_if_fits_already(
    std::string_view solver, const Allocation& state, const PreemptionContext<Model>& context,
    const SolverStatistics& statistics) {
  // The idle-device index answers this without reading every domain, cold or warm: the
  // decider asks it afresh too (it is faster than re-examining what the change log lists).
  const PlacementSearchResult now = find_placement(state, context.demand());
  if (!now.found) return std::nullopt;
  return context.make_plan_without_victims(solver, PlanStatus::no_preemption_needed, &now,
                                           statistics, {}, 0);
}

/// The search of one tier, in the phases `solve_with` runs in order:
/// 1. `order_candidates`: every target domain of the tier becomes a candidate keyed by a lower
///    bound on its cost, most of them unread (or in a group that bounds them all);
/// 2. `search_domains`: candidates are taken in ascending bound. A group opens into its members
///    (`open_group`), an unread domain is read (`admit`, `read_next`, `read_from_heap`: its scan
///    bound puts it back), a read one is searched (`search_domain`); once the least bound left
///    cannot beat the best plan, the rest is pruned at once (`prune_rest`);
/// 3. `make_plan`: the tier's best domain becomes the plan, `optimal` only if nothing left open
///    could undercut it.
/// Apart because each phase then reads on its own (and can be tested on its own); the state
/// they share is what one tier's search keeps between candidates. Members are named as the
/// phases use them.
template <CostModel Model, DomainSearch Search>
struct TierSearch {
  using Candidate = SearchCandidate;
  using RunChild = SearchRunChild;
  using Run = SearchRun;
  static constexpr std::uint32_t no_run = SearchCandidate::no_run;

  /// The heap's order, a min-heap by (bound, id): usually only the first few domains are
  /// searched before the bound closes the rest, so a full sort would be wasted.
  static constexpr auto later = [](const Candidate& a, const Candidate& b) {
    return a.bound > b.bound || (a.bound == b.bound && a.target > b.target);
  };

  TierSearch(const SolveRun<Model, Search>& run, std::size_t tier_index)
      : state(run.state),
        context(run.context),
        search(run.search),
        limits(run.limits),
        cache(run.cache),
        deadline(run.deadline),
        statistics(run.statistics),
        log(run.log),
        downgrades(run.downgrades),
        floor(run.floor),
        grid(run.grid),
        tier_index(tier_index),
        tier(run.context.tiers()[tier_index]),
        host_level(run.context.topology().host_level()),
        buffers(buffers_for(run.cache, tier_index, own_buffers)) {}

  TierSearch(const TierSearch&) = delete;
  TierSearch& operator=(const TierSearch&) = delete;

  /// The buffers of tier `tier_index`'s search: a decider's cache's (their lists emptied, the
  /// capacity kept; the slot made here, where throwing is allowed), else `own`, made empty.
  static ScanCache::SearchBuffers& buffers_for(ScanCache* cache, std::size_t tier_index,
                                               std::optional<ScanCache::SearchBuffers>& own) {
    if (cache == nullptr) return own.emplace();
    if (cache->search_buffers.size() <= tier_index) cache->search_buffers.resize(tier_index + 1);
    ScanCache::SearchBuffers& kept = cache->search_buffers[tier_index];
    kept.clear();
    return kept;
  }

  /// Phase "candidate order": fills the heap (and the unread list) that `search_domains` takes
  /// from, reading as little as possible: under the full scan every domain is read first, under
  /// a priced model one group (the root) holds every target, else the targets wait unread, in
  /// ascending id.
  void order_candidates() {
    if (limits.full_scan) {
      // The path before the index: read every candidate domain first.
      context.for_each_batch(
          tier, batch, [&](DomainId target) { return keep(target); },
          [&](std::span<const DomainId> targets) { scan(targets); });
    } else if (context.grouped(tier)) {
      // Priced, and targets lie at or below the host level: one group, the root, holds them
      // all. Taken by its bound, a group opens into the groups a level down, then into its
      // targets; a group whose bound cannot win is pruned whole, its targets never looked at
      // one by one (counted as considered when a group opens into them or is pruned). Past
      // the deadline already, groups still open until a search yields a plan (the loop below).
      const std::size_t all = context.targets(tier).size();
      if (all > 0) {
        candidates.push_back({context.group_price_bound_cached(tier_index, tier,
                                                               Topology::root(), floor, grid,
                                                               cache),
                              Topology::root(), false, static_cast<std::uint32_t>(all)});
        groups = 1;
        grouped_targets = all;
      }
    } else if (context.gang_blocks(tier)) {
      // Priced, a gang of whole hosts in one rack, and the racks gathered into the index's
      // blocks: each block is a group keyed by its per-host gang bound (`block_gang_bound`),
      // opened into its racks only when that can still win. A rack's own bounds are at least
      // its block's, so racks come up in the order they would one by one.
      by_gang_blocks = true;
      const auto all = context.targets(tier);
      const Candidate root{floor, Topology::root(), false,
                           static_cast<std::uint32_t>(all.size())};
      (void)push_child_blocks(root, context.topology().domains_at(tier.target_level), all);
    } else {
      // The static capacity check waits until a domain is read: most are never read. Listing
      // them is cheap next to reading one, so it is never cut short: past the deadline the
      // loop below reads them only until one can be searched.
      const auto targets = context.targets(tier);
      unread.assign(targets.begin(), targets.end());
      statistics.domains_considered += targets.size();
    }
    if (skipped_at_deadline) {
      cut_short = true;
      statistics.limit_reached = true;
    }
    std::make_heap(candidates.begin(), candidates.end(), later);
  }

  /// Phase "per-domain search" as a whole: takes candidates in ascending bound until the least
  /// bound left cannot beat the best plan, or the deadline ends the tier.
  void search_domains() {
    while (!candidates.empty() || cursor < unread.size()) {
      const std::size_t live =
          candidates.size() - groups + grouped_targets + (unread.size() - cursor);
      // The least bound left: the floor while unread domains remain, else the heap's top.
      const bool unread_left = cursor < unread.size();
      const double least =
          std::min(unread_left ? floor : std::numeric_limits<double>::infinity(),
                   candidates.empty() ? std::numeric_limits<double>::infinity()
                                      : candidates.front().bound);
      if (least >= best_cost) {  // exact: see docs/costs.md
        prune_rest(live);
        break;
      }
      // Past the deadline, domains are still searched, most promising first, until one yields
      // a plan or one is left unsettled: a tight limit (even 0) still yields a plan. A domain
      // proven empty does not stop it (greedy evicting everything and still finding no room is
      // a quick proof, and the only work a search past the deadline does besides its plan).
      if (searched_here > 0 && (best_problem != nullptr || search_unproven) &&
          deadline.expired_now()) {
        cut_short = true;
        statistics.limit_reached = true;
        open_bound = std::min(open_bound, least);  // the least bound left: still open
        break;
      }
      // Unread domains (bound: the floor) go before read ones of a larger bound; at equal
      // bounds read ones go first, so a plan at the floor ends the tier without reading the
      // other domains whose bound is the floor. Past the deadline, a candidate in the heap is
      // taken before any unread domain is read: the scan stops at the first domain that can be
      // searched (the order no longer matters then: nothing will be claimed optimal).
      const bool take_unread =
          unread_left &&
          (candidates.empty() || (candidates.front().bound > floor && !deadline.expired_now()));
      if (take_unread) {
        read_next();
        continue;
      }
      const Candidate item = take_front();
      if (item.members > 0) {
        open_group(item, false);
        continue;
      }
      if (item.refine) {
        refine(item);
        continue;
      }
      if (!item.read) {
        read_from_heap(item);
        continue;
      }
      search_domain(item, live);
    }
  }

  /// Whether the tier yielded a plan (`make_plan` may be called).
  [[nodiscard]] bool found() const noexcept { return best_problem != nullptr; }

  /// Whether the tier was proven to hold no plan: nothing was cut short by the deadline and
  /// every search that found nothing proved it.
  [[nodiscard]] bool proven_empty() const noexcept { return !cut_short && !search_unproven; }

  /// Phase "plan assembly": the tier's best domain as the plan. `unproven`: an earlier tier
  /// ended at a limit without proving it has no plan, so this one cannot be claimed optimal.
  [[nodiscard]] PreemptionPlan make_plan(std::string_view solver, bool unproven) const {
    // Proven when nothing left open (other domains' bounds, and this domain's own bound for
    // an inexact search) could undercut the winner.
    const bool proven = !unproven && !cut_short &&
                        (best.exact || best.lower_bound >= best_cost) && open_bound >= best_cost;
    const double bound =
        std::min({best.exact ? best_cost : best.lower_bound, open_bound, best_cost});
    return context.make_plan(solver, *best_problem, best,
                             proven ? PlanStatus::optimal : PlanStatus::feasible,
                             proven ? best_cost : bound, statistics, log.verdicts(),
                             log.total(), cache);
  }

  // --- Reading candidates: what enters the heap, and how unread domains get read ------------

  /// Whether the full scan reads `target`: not past the deadline, and not too small.
  bool keep(DomainId target) {
    // Past the deadline, targets are read only until one can be searched: the rest stays
    // unread, and nothing is proven about it.
    if (!candidates.empty() && deadline.expired()) {
      skipped_at_deadline = true;
      return false;
    }
    ++statistics.domains_considered;
    if (auto shortfall = context.too_small_cached(tier_index, tier, target, cache)) {
      ++statistics.domains_pruned;
      log.scanned({target, Rejection::Kind::too_small, *shortfall, 0.0, 0.0, {}});
      return false;
    }
    return true;
  }

  /// A read domain enters the heap by its scan bound (or its index bound if larger), unless
  /// the scan proved it hopeless.
  void emit(DomainId target, const ScanResult& result) {
    statistics.victims_considered += result.victims;
    if (result.shortfall) {
      ++statistics.domains_pruned;
      log.scanned({target, Rejection::Kind::hopeless, *result.shortfall, 0.0, 0.0, {}});
      return;
    }
    candidates.push_back({limits.full_scan
                              ? on_grid(result.bound, grid)
                              : std::max(context.index_price_bound_cached(
                                             tier_index, tier, target, floor, grid, true, cache),
                                         on_grid(result.bound, grid)),
                          target});
    if (!limits.full_scan) std::push_heap(candidates.begin(), candidates.end(), later);
  }

  /// Reads `targets` in one batch, each result through `emit`.
  void scan(std::span<const DomainId> targets) {
    context.scan_batch_cached(tier_index, tier, targets, workspace, cache,
                              [&](DomainId target, const ScanResult& result) {
                                emit(target, result);
                              });
  }

  /// Admits unread targets that share one host (or a single target): the index rejects
  /// hopeless ones unread; a priced one whose bound (at least `lower`, its group's) exceeds
  /// the floor, or whose per-host bound is still to be taken, waits in the heap for its turn
  /// (most never come); the rest are read now, in one pass over the host's occupants, as the
  /// full scan does.
  void admit(std::span<const DomainId> targets, double lower) {
    batch.clear();
    for (const DomainId target : targets) {
      settle(target, context.admission(tier_index, tier, target, floor, grid, cache), lower);
    }
    if (!batch.empty()) scan(std::span<const DomainId>(batch));
  }

  /// Acts on what admitting `target` decided (`PreemptionContext::admission`), its group's
  /// bound `lower`: a rejection is logged, a target that waits goes into the heap, one at the
  /// floor joins `batch`, to be read.
  void settle(DomainId target, const ScanCache::Admission& admission, double lower) {
    using Verdict = ScanCache::Admission::Verdict;
    if (admission.verdict == Verdict::too_small) {
      ++statistics.domains_pruned;
      log.scanned({target, Rejection::Kind::too_small, admission.shortfall, 0.0, 0.0, {}});
    } else if (admission.verdict == Verdict::hopeless) {
      ++statistics.domains_pruned;
      log.scanned({target, Rejection::Kind::hopeless_unread, admission.shortfall, 0.0, 0.0, {}});
    } else {
      const double bound = std::max(lower, admission.bound);
      if (bound > floor || admission.refine) {
        candidates.push_back({bound, target, false, 0, admission.refine});
        std::push_heap(candidates.begin(), candidates.end(), later);
      } else {
        batch.push_back(target);
      }
    }
  }

  /// Reads the next unread candidates: the one at the cursor, with the following ones on the
  /// same host when targets lie below the host level.
  void read_next() {
    same_host.clear();
    const DomainId first = unread[cursor];
    const DomainId host = tier.target_level > host_level
                              ? context.topology().ancestor_at(first, host_level)
                              : DomainId{};
    do {
      same_host.push_back(unread[cursor++]);
    } while (host.valid() && cursor < unread.size() &&
             context.topology().ancestor_at(unread[cursor], host_level) == host);
    admit(std::span<const DomainId>(same_host), floor);
  }

  /// An unread candidate whose per-host index bound was deferred until it came up.
  void refine(const Candidate& item) {
    // Its per-host index bound, deferred until now: back in by it if it is larger, else
    // on as if it had been taken at once (the same order either way).
    const double refined =
        std::max(item.bound, context.per_host_index_bound_cached(tier_index, tier, item.target,
                                                                 floor, grid, cache));
    if (refined > item.bound || refined > floor) {
      candidates.push_back({refined, item.target, false});
      std::push_heap(candidates.begin(), candidates.end(), later);
    } else {
      batch.assign(1, item.target);  // at the floor: read now, as `admit` would have
      scan(std::span<const DomainId>(batch));
    }
  }

  /// An unread candidate from the heap whose index bound can still win.
  void read_from_heap(const Candidate& item) {
    // Its index bound can still win: read it, with the next unread ones of its host at the
    // top of the heap (one pass over the host's occupants), and let them back in by their
    // scan bounds.
    batch.assign(1, item.target);
    if (tier.target_level > host_level) {
      const DomainId host = context.topology().ancestor_at(item.target, host_level);
      while (!candidates.empty() && !candidates.front().read &&
             candidates.front().members == 0 && !candidates.front().refine &&
             candidates.front().bound < best_cost &&
             context.topology().ancestor_at(candidates.front().target, host_level) == host) {
        std::pop_heap(candidates.begin(), candidates.end(), later);
        batch.push_back(candidates.back().target);
        candidates.pop_back();
      }
      std::sort(batch.begin(), batch.end());  // a batch is in ascending pre-order
    }
    scan(std::span<const DomainId>(batch));
  }

  // --- Group bounds: groups of unread targets, opened level by level ------------------------

  /// The targets of `tier` inside `group`, ascending id.
  [[nodiscard]] std::span<const DomainId> members_of(DomainId group) const {
    return targets_between(group, context.topology().subtree_end(group));
  }

  /// The targets of `tier` inside group candidate `group` (not a block), its `members` of
  /// them: as `members_of`, the run's start kept in a decider's cache (the topology's alone:
  /// two binary searches over every target of the tier, else).
  [[nodiscard]] std::span<const DomainId> members_of_group(const Candidate& group) {
    if (cache == nullptr) return members_of(group.target);
    const Topology& topology = context.topology();
    auto& levels = target_runs().groups;
    const LevelIndex level = topology.level(group.target);
    if (levels.size() <= level) levels.resize(level + 1);
    auto& firsts = levels[level];
    const std::size_t count = topology.domains_at(level).size();
    if (firsts.size() != count) firsts.assign(count, ScanCache::TargetRuns::unknown);
    std::uint32_t& first = firsts[topology.ordinal(group.target)];
    const auto all = context.targets(tier);
    if (first == ScanCache::TargetRuns::unknown) {
      const auto members = members_of(group.target);
      first = static_cast<std::uint32_t>(members.data() - all.data());
    }
    return all.subspan(first, group.members);
  }

  /// This tier's `ScanCache::target_runs` (a cache's), started afresh when it was kept for
  /// targets at another level.
  ScanCache::TargetRuns& target_runs() {
    if (cache->target_runs.size() <= tier_index) cache->target_runs.resize(tier_index + 1);
    ScanCache::TargetRuns& runs_of_tier = cache->target_runs[tier_index];
    if (runs_of_tier.target_level != tier.target_level) {
      runs_of_tier = {};
      runs_of_tier.target_level = tier.target_level;
    }
    return runs_of_tier;
  }

  /// The run of `tier`'s targets inside index block `block`, as [first, last) positions in
  /// `context.targets(tier)`: kept in a decider's cache (the topology's alone), else found from
  /// `start`, where the run starts when the caller knows it (the end of the preceding sibling
  /// block's run: siblings' targets follow each other), by galloping to its end, or by two
  /// binary searches over the targets (`unknown_start`).
  static constexpr std::size_t unknown_start = std::numeric_limits<std::size_t>::max();
  [[nodiscard]] std::pair<std::size_t, std::size_t> block_targets(std::uint32_t block,
                                                                  std::size_t start) {
    const auto all = context.targets(tier);
    const auto find = [&] {
      const auto domains = block_domains(block);
      const DomainId end = context.topology().subtree_end(domains.back());
      if (start != unknown_start)
        return std::pair<std::size_t, std::size_t>{start, gallop_lower_bound(all, start, end)};
      const auto members = targets_between(domains.front(), end);
      const auto first = static_cast<std::size_t>(members.data() - all.data());
      return std::pair<std::size_t, std::size_t>{first, first + members.size()};
    };
    if (cache == nullptr) return find();
    auto& runs_of_blocks = target_runs().blocks;
    if (runs_of_blocks.size() <= block) {
      runs_of_blocks.resize(std::size_t{block} + 1,
                            {ScanCache::TargetRuns::unknown, ScanCache::TargetRuns::unknown});
    }
    auto& kept = runs_of_blocks[block];
    if (kept.first == ScanCache::TargetRuns::unknown) {
      const auto [first, last] = find();
      kept = {static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last)};
    }
    return {kept.first, kept.second};
  }

  /// The targets of `tier` with ids in [first, end), ascending id.
  [[nodiscard]] std::span<const DomainId> targets_between(DomainId first, DomainId end) const {
    const auto all = context.targets(tier);
    const auto from = std::lower_bound(all.begin(), all.end(), first);
    const auto to = std::lower_bound(from, all.end(), end);
    return all.subspan(static_cast<std::size_t>(from - all.begin()),
                       static_cast<std::size_t>(to - from));
  }

  /// The domains of the index block `block` (at the level above the hosts), ascending id.
  [[nodiscard]] std::span<const DomainId> block_domains(std::uint32_t block) const {
    const auto [first, last] = state.index_block_ordinals(block);
    return context.topology()
        .domains_at(static_cast<LevelIndex>(host_level - 1))
        .subspan(first, last - first);
  }

  /// Pushes `children` (consecutive domains one level below `parent`, the group or block
  /// being opened, whose targets are `members`) as groups keyed by their own bounds, at least
  /// the parent's: as one run (`push_run`), in the order they come up. Children come in
  /// pre-order, so each one's members are the run of the parent's that starts where the
  /// previous child's ended: found by galloping from there, not by two searches over every
  /// target of the tier. Their bands lie far apart in memory, and on a large cluster reading
  /// them is most of a group's opening: fetched ahead.
  void push_child_groups(const Candidate& parent, std::span<const DomainId> children,
                         std::span<const DomainId> members) {
    const Topology& topology = context.topology();
    std::uint64_t key = 0;
    Siblings siblings;  // where the children lie in their level, with a cache
    ScanCache::Opening* const kept = opening_of(parent, children, key, siblings);
    const auto& versions = siblings.versions;
    if (kept != nullptr && kept->valid && kept->key == key && kept->first == children.front()) {
      // Unchanged since it was kept: the same children, bounds and counts, kept in the order
      // of their bounds.
      ++cache->opening_hits;
      push_run(parent, kept->children, members.size(), true);
      return;
    }
    if (kept != nullptr && kept->shaped && kept->first == children.front() &&
        kept->versions.size() == children.size()) {
      // Changed, but the same children: only bounds can differ. A child whose version is the
      // one its bound was kept by keeps it (most children did not change: one comparison);
      // the others take theirs again, their bands fetched ahead.
      kept->valid = false;  // stays so if a bound throws
      auto& kids = kept->children;
      changed_children.clear();  // positions in `children`
      for (std::size_t j = 0; j < children.size(); ++j) {
        if (versions[j] != kept->versions[j]) changed_children.push_back(j);
      }
      // Each changed child that holds targets takes its bound again, its version with it.
      cache->group_hits += kids.size();
      for_each_prefetching_bands(
          state, changed_children.size(),
          [&](std::size_t i) { return children[changed_children[i]]; },
          [&](std::size_t i) {
            const std::size_t j = changed_children[i];
            const auto kid = std::find_if(kids.begin(), kids.end(),
                                          [&](const auto& k) { return k.child == children[j]; });
            if (kid != kids.end()) {
              --cache->group_hits;
              const GroupPlace place = siblings.place(j);
              kid->bound = context.group_price_bound_cached(tier_index, tier, kid->child, floor,
                                                            grid, cache, &place);
            }
            kept->versions[j] = versions[j];
          });
      if (!changed_children.empty()) std::sort(kids.begin(), kids.end(), by_bound_then_child);
      kept->key = key;
      kept->valid = true;
      ++cache->opening_misses;
      push_run(parent, kids, members.size(), true);
      return;
    }
    if (kept != nullptr) {
      kept->valid = false;  // stays so if a bound throws
      kept->shaped = false;
    }
    auto& found = kept != nullptr ? kept->children : fresh_children;
    found.clear();
    std::size_t first = 0;
    for_each_prefetching_bands(state, children, [&](std::size_t i) {
      const DomainId child = children[i];
      const std::size_t last = gallop_lower_bound(members, first, topology.subtree_end(child));
      const std::size_t count = last - first;
      first = last;
      if (count == 0) return;
      const GroupPlace place = kept != nullptr ? siblings.place(i) : GroupPlace{};
      const double bound = context.group_price_bound_cached(
          tier_index, tier, child, floor, grid, cache, kept != nullptr ? &place : nullptr);
      found.push_back({bound, child, static_cast<std::uint32_t>(count)});
    });
    std::sort(found.begin(), found.end(), by_bound_then_child);
    if (kept != nullptr) {
      kept->versions.assign(versions.begin(), versions.end());
      kept->key = key;
      kept->first = children.front();
      kept->valid = true;
      kept->shaped = true;
      ++cache->opening_misses;
    }
    push_run(parent, found, members.size(), kept != nullptr);
  }

  /// Pushes `children` of `parent` (ascending own bound, then id), holding `held` targets in
  /// all, as one run: each keyed by its own bound or its parent's, whichever is larger. Those
  /// whose own bound is at most the parent's share its key, and come up by id: they lead the
  /// run, sorted by id among themselves. The children are groups (`ScanCache::Opening::Child`)
  /// or targets listed unread (`ScanCache::ListedTarget`, `prune_rest`). `kept`: they lie in
  /// a decider's cache, untouched for the rest of this search (each group opens once), and
  /// unless several share the parent's key they are read there, as they come up, not copied:
  /// most never do.
  void push_run(const Candidate& parent, std::span<const RunChild> children, std::size_t held,
                bool kept) {
    if (children.empty()) return;
    std::size_t tied = 0;
    while (tied < children.size() && children[tied].bound <= parent.bound) ++tied;
    if (kept && tied <= 1) {
      runs.push_back({children.data(), 0, children.size(), held, parent.bound});
    } else {
      const std::size_t begin = run_children.size();
      run_children.insert(run_children.end(), children.begin(), children.end());
      if (tied > 1) {
        std::sort(run_children.begin() + static_cast<std::ptrdiff_t>(begin),
                  run_children.begin() + static_cast<std::ptrdiff_t>(begin + tied),
                  [](const RunChild& a, const RunChild& b) { return a.child < b.child; });
      }
      runs.push_back({nullptr, begin, run_children.size(), held, parent.bound});
    }
    push_run_front(static_cast<std::uint32_t>(runs.size() - 1));
  }

  /// Child `i` of `run`.
  [[nodiscard]] const RunChild& run_child(const Run& run, std::size_t i) const {
    return run.kept != nullptr ? run.kept[i] : run_children[i];
  }

  /// Pushes run `index` keyed and named as its next child, holding the targets of every child
  /// it has left.
  void push_run_front(std::uint32_t index) {
    const Run& run = runs[index];
    const RunChild& next = run_child(run, run.next);
    Candidate item{std::max(run.parent_bound, next.bound), next.child, false,
                   static_cast<std::uint32_t>(run.members_left)};
    item.run = index;
    candidates.push_back(item);
    std::push_heap(candidates.begin(), candidates.end(), later);
    // A run of groups counts as the group it is named as (`open_group` takes it out); a run of
    // targets holds none.
    if (run.members_left > 0) ++groups;
    grouped_targets += run.members_left;
  }

  /// Takes the candidate of least (bound, id) from the heap: a run gives up its next child
  /// (the one it was keyed and named as), the rest of it back in the heap. So candidates come
  /// out in the order they would have with every child pushed on its own.
  Candidate take_front() {
    std::pop_heap(candidates.begin(), candidates.end(), later);
    const Candidate item = candidates.back();
    candidates.pop_back();
    if (item.run == no_run) return item;
    Run& run = runs[item.run];
    const RunChild head = run_child(run, run.next++);
    // The run's place among the groups passes to the child, as if it had been in the heap on
    // its own (`open_group` takes it out); the children left go back as a run of their own.
    run.members_left -= head.members;
    grouped_targets -= run.members_left;
    if (run.next < run.end) push_run_front(item.run);
    return {item.bound, head.child, false, head.members};
  }

  /// A run of consecutive domains of one level at or above the hosts (children of one group
  /// or block): their level, the ordinal of the first, and their versions side by side.
  struct Siblings {
    LevelIndex level = 0;
    std::size_t first = 0;
    std::span<const std::uint64_t> versions;
    /// The `i`th one's place, as `PreemptionContext::group_price_bound_cached` takes it.
    [[nodiscard]] GroupPlace place(std::size_t i) const { return {level, first + i, versions[i]}; }
  };

  /// The entry of a decider's cache that keeps what opening `parent` (a group, or an index
  /// block) into `children` pushes, and in `key` what it is kept by: the group's version, or
  /// a digest of the block's domains' versions (a block is no domain); in `siblings` where
  /// the children lie (consecutive domains of one level at or above the hosts) and their
  /// versions (a run of `Allocation::versions_at`). Null without a cache.
  ScanCache::Opening* opening_of(const Candidate& parent, std::span<const DomainId> children,
                                 std::uint64_t& key, Siblings& siblings) {
    if (cache == nullptr || children.empty()) return nullptr;
    const Topology& topology = context.topology();
    const bool block = parent.block != Allocation::index_no_block;
    const LevelIndex level =
        block ? static_cast<LevelIndex>(host_level - 1) : topology.level(parent.target);
    siblings.level = static_cast<LevelIndex>(block ? level : level + 1);
    siblings.first = static_cast<std::size_t>(children.data() -
                                              topology.domains_at(siblings.level).data());
    siblings.versions =
        state.versions_at(siblings.level).subspan(siblings.first, children.size());
    const auto& versions = siblings.versions;
    if (block) {
      if (cache->block_openings.size() <= tier_index) cache->block_openings.resize(tier_index + 1);
      auto& entries = cache->block_openings[tier_index];
      if (entries.size() <= parent.block) entries.resize(std::size_t{parent.block} + 1);
      key = 0x626c6f636bULL;
      for (const std::uint64_t version : versions) key = key * 0x9e3779b97f4a7c15ULL ^ version;
      return &entries[parent.block];
    }
    if (cache->group_openings.size() <= tier_index) cache->group_openings.resize(tier_index + 1);
    auto& levels = cache->group_openings[tier_index];
    if (levels.size() <= level) levels.resize(level + 1);
    auto& entries = levels[level];
    const std::size_t count = topology.domains_at(level).size();
    if (entries.size() != count) entries.assign(count, {});
    key = state.domain_version(parent.target);
    return &entries[topology.ordinal(parent.target)];
  }

  /// Pushes `children` (as `push_child_groups`) gathered by the preemption index's blocks,
  /// each block one group keyed by its bound (`block_price_bound`): a block whose bound
  /// cannot win is dismissed without reading its members' bands. Returns false (nothing
  /// pushed) when the children have no blocks.
  bool push_child_blocks(const Candidate& parent, std::span<const DomainId> children,
                         std::span<const DomainId> members) {
    if (children.empty()) return false;
    const std::uint32_t first_block = state.index_block_of(children.front());
    if (first_block == Allocation::index_no_block) return false;
    const std::uint32_t last_block = state.index_block_of(children.back());
    // Where each block's run of targets starts (positions in the tier's targets, of which
    // `members` is a run): the first at the parent's, each next where the last one ended.
    std::size_t from = static_cast<std::size_t>(members.data() - context.targets(tier).data());
    for (std::uint32_t b = first_block; b <= last_block; ++b) {
      // A decider's kept covers answer most blocks from their digests alone: only a cold
      // call reads every block's rows, fetched ahead.
      if (cache == nullptr && b + 4 <= last_block) state.prefetch_index_block(b + 4);
      const auto domains = block_domains(b);
      const auto [first, last] = block_targets(b, from);
      const std::size_t count = last - first;
      from = last;
      if (count == 0) continue;
      const double bound = by_gang_blocks
                               ? context.block_gang_bound(tier, b, floor, grid, cache)
                               : context.block_price_bound(tier, b, floor, grid, cache);
      Candidate block{std::max(parent.bound, bound), domains.front(), false,
                      static_cast<std::uint32_t>(count)};
      block.block = b;
      candidates.push_back(block);
      std::push_heap(candidates.begin(), candidates.end(), later);
      ++groups;
      grouped_targets += count;
    }
    return true;
  }

  /// Opens a group: into the groups one level down while those still lie above the targets
  /// and at or above the host level, else into its targets (each host's admitted together).
  /// `for_listing`: only to name pruned targets (bounds, no checks, nothing logged).
  void open_group(const Candidate& group, bool for_listing) {
    --groups;
    grouped_targets -= group.members;
    const Topology& topology = context.topology();
    if (group.block != Allocation::index_no_block) {
      // A block opens into its members: each a group when they lie above the targets (a
      // block's members are at the level above the hosts), else the targets themselves
      // (racks, under the gang bound).
      const auto domains = block_domains(group.block);
      const auto [first, last] = block_targets(group.block, unknown_start);
      const auto members = context.targets(tier).subspan(first, last - first);
      if (by_gang_blocks) {
        open_into_targets(group, members, false, for_listing);
      } else {
        push_child_groups(group, domains, members);
      }
      return;
    }
    const LevelIndex level = topology.level(group.target);
    const auto members = members_of_group(group);
    if (level < host_level && level + 1 < tier.target_level) {
      const auto children = children_of(group.target, level);
      // Many children (the racks of a large cluster's root): taken by blocks first, so that
      // a decision reads the bands of a few blocks and of the racks in the blocks it opens,
      // not every rack's.
      if (!push_child_blocks(group, children, members)) push_child_groups(group, children, members);
      return;
    }
    open_into_targets(group, members, level >= host_level, for_listing);
  }

  /// The domains one level below `group` (a domain of `level`, above the hosts), ascending:
  /// the topology's, their run kept in a decider's cache (`ScanCache::group_children`).
  std::span<const DomainId> children_of(DomainId group, LevelIndex level) {
    const Topology& topology = context.topology();
    const auto child_level = static_cast<LevelIndex>(level + 1);
    if (cache == nullptr) return topology.domains_at(child_level, group);
    return context.domains_below_cached(cache->group_children, group, level,
                                        topology.ordinal(group), child_level);
  }

  /// Opens `group` into its targets `members` (`on_one_host`: all on one host, admitted
  /// together; else one by one, their bands fetched ahead). `for_listing`: as `open_group`.
  void open_into_targets(const Candidate& group, std::span<const DomainId> members,
                         bool on_one_host, bool for_listing) {
    if (for_listing && group.block != Allocation::index_no_block) {
      push_listed_gang_targets(group, members);
      return;
    }
    if (for_listing) {
      // One run, in the order they would come up one by one (only the closest dozen ever
      // do). Kept by the group's version in a decider's cache: a pruned group that did not
      // change lists its targets without a look at each.
      const auto targets = context.listed_targets_cached(tier_index, tier, group.target,
                                                         members, floor, grid, cache, listed);
      // Kept in the cache unless handed back in the scratch (`listed`).
      push_run(group, targets, 0, targets.data() != listed.data());
      return;
    }
    statistics.domains_considered += members.size();
    // Kept by the group's version in a decider's cache: a group that did not change admits
    // its targets as it did, without a look at each (the same log, heap and reads).
    if (const auto* kept = context.admissions_cached(tier_index, tier, group.target, members,
                                                     floor, grid, cache)) {
      batch.clear();
      for (std::size_t i = 0; i < members.size(); ++i) {
        settle(members[i], (*kept)[i], group.bound);
        if (!on_one_host && !batch.empty()) {
          scan(std::span<const DomainId>(batch));
          batch.clear();
        }
      }
      if (!batch.empty()) scan(std::span<const DomainId>(batch));
      return;
    }
    if (on_one_host) {
      admit(members, group.bound);
    } else {
      // Targets far apart in memory: those at the host level have their bands fetched ahead.
      for_each_prefetching_bands(
          state, members, [&](std::size_t i) { admit(members.subspan(i, 1), group.bound); });
    }
  }

  /// Pushes a gang block's targets `members` to be listed (`open_into_targets` for listing),
  /// each keyed by its group's bound, rack-level bound and rack-gang bound, no host's bands
  /// read: its per-host bound waits until it comes up in `prune_rest` (`list_pending`).
  void push_listed_gang_targets(const Candidate& group, std::span<const DomainId> members) {
    for_each_prefetching_bands(state, members, [&](std::size_t i) {
      const DomainId target = members[i];
      Candidate item{std::max(group.bound,
                              context.index_price_bound_cached(tier_index, tier, target, floor,
                                                               grid, false, cache)),
                     target, false};
      if (context.per_host_bound_applies(tier, target)) {
        item.bound = std::max(item.bound, context.target_gang_bound(tier, target, floor, grid));
        item.list_pending = true;
      }
      candidates.push_back(item);
      std::push_heap(candidates.begin(), candidates.end(), later);
    });
  }

  // --- Searching and pruning --------------------------------------------------------------

  /// Puts `item` back into the heap with its deferred bound `deferred` taken: keyed by the
  /// larger of it and its key, nothing left deferred (`refine`, `list_pending`).
  void push_rekeyed(Candidate item, double deferred) {
    item.bound = std::max(item.bound, deferred);
    item.refine = false;
    item.list_pending = false;
    candidates.push_back(item);
    std::push_heap(candidates.begin(), candidates.end(), later);
  }

  /// Every domain left (`live` of them) has a bound at least the best cost: all are pruned at
  /// once, the closest read ones listed first, then unread ones.
  void prune_rest(std::size_t live) {
    statistics.domains_pruned += live;
    statistics.domains_considered += grouped_targets;  // pruned whole, by their group
    std::size_t listed = 0;
    while (!candidates.empty() && log.wants_more()) {
      const Candidate item = take_front();
      if (item.members > 0) {
        open_group(item, true);
        continue;
      }
      if (item.list_pending) {
        // From a group opened for listing: re-keyed by the bound it is listed by.
        push_rekeyed(item, context.per_host_index_bound_cached(tier_index, tier, item.target,
                                                               floor, grid, cache));
        continue;
      }
      if (item.refine) {
        // Keyed by its rack-gang bound, its per-host bound never taken: listed by the bound it
        // would have waited by without the rack-gang bound (its rack-level bound when that
        // cannot win, else its per-host bound), never less than its key, so the closest
        // competitors are listed, and by the same bounds, as one by one.
        const double banded = context.index_price_bound_cached(tier_index, tier, item.target,
                                                               floor, grid, false, cache);
        push_rekeyed(item, banded >= best_cost
                               ? banded
                               : std::max(banded, context.per_host_index_bound_cached(
                                                      tier_index, tier, item.target, floor,
                                                      grid, cache)));
        continue;
      }
      log.searched({item.target,
                    item.read ? Rejection::Kind::bound : Rejection::Kind::bound_unread,
                    {},
                    item.bound,
                    best_cost,
                    {}});
      ++listed;
    }
    for (std::size_t shown = 0;
         shown < max_listed_verdicts && cursor < unread.size() && log.wants_more(); ++shown) {
      const DomainId target = unread[cursor++];
      if (auto shortfall = context.too_small_cached(tier_index, tier, target, cache)) {
        log.scanned({target, Rejection::Kind::too_small, *shortfall, 0.0, 0.0, {}});
      } else {
        log.searched({target, Rejection::Kind::bound_unread, {}, floor, best_cost, {}});
      }
      ++listed;
    }
    log.count_unlisted(live - listed);
  }

  /// Phase "per-domain search" for one read domain: the solver's `DomainSearch` in depth, its
  /// outcome kept if it beats the best so far. `live`: the domains left, this one included.
  void search_domain(const Candidate& item, std::size_t live) {
    // The last cheap proof before a search in depth: too few hosts for the gang even with
    // every eligible victim gone (what an exhaustive search would otherwise prove slowly).
    if (auto shortfall = context.host_count_shortfall(tier, item.target)) {
      ++statistics.domains_pruned;
      log.scanned({item.target, Rejection::Kind::too_few_hosts, *shortfall, 0.0, 0.0, {}});
      return;
    }
    const ScanCache::Entry* const scanned = kept_scan(item.target);
    if (!reuse_problem(item.target, scanned)) {
      ScanCache::KeptProblem& kept = buffers.kept_problems[slot_of(problem)];
      kept.valid = false;  // stays so if reading it throws
      (void)context.build_problem(tier, item.target, *problem);
      if (scanned != nullptr) kept = {true, item.target, scanned->key};
    }
    ++statistics.domains_solved;
    ++searched_here;
    SearchLimits domain_limits = limits;
    domain_limits.domains_left = live;
    DomainOutcome outcome = search_outcome(domain_limits, scanned);
    if (outcome.limit_reached) statistics.limit_reached = true;
    if (outcome.downgrade) downgrades.push_back({item.target, *outcome.downgrade, outcome.note});
    if (!outcome.exact) open_bound = std::min(open_bound, std::max(outcome.lower_bound, item.bound));
    if (outcome.found && outcome.cost < best_cost) {
      if (best_problem) {
        log.searched({best_problem->target,
                      Rejection::Kind::costlier,
                      {},
                      best.cost,
                      outcome.cost,
                      best.note});
      }
      best_cost = outcome.cost;
      best = std::move(outcome);
      // The two slots trade roles, nothing moved: `problem` is rebuilt (or reused) before its
      // next use.
      best_problem = problem;
      problem = other_slot(best_problem);
    } else if (outcome.found) {
      log.searched(
          {item.target, Rejection::Kind::costlier, {}, outcome.cost, best_cost, outcome.note});
    } else {
      if (!outcome.exact) search_unproven = true;
      log.searched({item.target, Rejection::Kind::no_better, {}, 0.0, best_cost, outcome.note});
    }
  }

  /// A decider's scan of `target` in this call (its key the digest of the versions the scan
  /// read, which cover every domain the problem and the search read), when results may be
  /// kept by it (no clock), else null.
  [[nodiscard]] const ScanCache::Entry* kept_scan(DomainId target) const {
    if (cache == nullptr || limits.time_limit != std::chrono::nanoseconds::max()) return nullptr;
    const ScanCache::Entry& entry = cache->tiers[tier_index][context.topology().ordinal(target)];
    return entry.valid ? &entry : nullptr;
  }

  /// The buffers' slot `slot` points at: 0 for `problem`, 1 for `spare_problem`.
  [[nodiscard]] std::size_t slot_of(const DomainProblem* slot) const {
    return slot == &buffers.problem ? 0 : 1;
  }
  /// The buffers' slot that is not `slot`.
  [[nodiscard]] DomainProblem* other_slot(const DomainProblem* slot) {
    return slot == &buffers.problem ? &buffers.spare_problem : &buffers.problem;
  }

  /// Points `problem` at a slot (not the best domain's) that holds `target`'s problem read at
  /// the versions `scanned` was read at, in this call or an earlier one: the problem is a
  /// function of those alone, so it is the one reading would build. Its pointers into the
  /// state and the tier are set again (a change elsewhere may have moved the state's
  /// records). False when no slot does.
  bool reuse_problem(DomainId target, const ScanCache::Entry* scanned) {
    if (scanned == nullptr) return false;
    for (DomainProblem* slot : {&buffers.problem, &buffers.spare_problem}) {
      const ScanCache::KeptProblem& kept = buffers.kept_problems[slot_of(slot)];
      if (slot == best_problem || !kept.valid || kept.target != target ||
          kept.key != scanned->key) {
        continue;
      }
      problem = slot;
      problem->tier = &tier;
      for (CandidateVictim& victim : problem->victims) victim.workload = &state.workload(victim.id);
      ++cache->problem_hits;
      return true;
    }
    return false;
  }

  /// The search of `problem` against the best cost so far: a decider's kept one when it was
  /// searched with the very same inputs (`ScanCache::KeptSearch`: search type, target, scan
  /// versions, incumbent, nodes explored before it and domains left), its counters added to
  /// the statistics; else the search, kept when it may be reused. `scanned`: `kept_scan`.
  DomainOutcome search_outcome(const SearchLimits& domain_limits,
                               const ScanCache::Entry* scanned) {
    const bool keepable = scanned != nullptr;
    const std::uint64_t key = keepable ? scanned->key : 0;
    ScanCache::KeptSearch* const kept = keepable ? kept_search(problem->target) : nullptr;
    const std::uint64_t incumbent = std::bit_cast<std::uint64_t>(best_cost);
    const std::uint64_t spent = statistics.nodes_explored;
    if (kept != nullptr && kept->key == key && kept->incumbent == incumbent &&
        kept->spent == spent && kept->domains_left == domain_limits.domains_left) {
      ++cache->search_hits;
      detail::accumulate(statistics, kept->counts);
      return kept->outcome;
    }
    const SolverStatistics before = statistics;
    DomainOutcome outcome = search.search(state, *problem, best_cost, domain_limits, statistics);
    if (keepable && !outcome.limit_reached &&
        statistics.limit_reached == before.limit_reached) {
      ScanCache::KeptSearch& slot = kept != nullptr ? *kept : new_kept_search();
      slot.search = nullptr;  // not this search's until every field is
      slot.outcome = outcome;
      slot.counts = counted_since(statistics, before);
      slot.tier = static_cast<std::uint32_t>(tier_index);
      slot.target = problem->target;
      slot.key = key;
      slot.incumbent = incumbent;
      slot.spent = spent;
      slot.domains_left = domain_limits.domains_left;
      slot.search = &search_tag;
      ++cache->search_misses;
    }
    return outcome;
  }

  /// The kept search of `target` in this tier under this search type, or null.
  ScanCache::KeptSearch* kept_search(DomainId target) {
    for (ScanCache::KeptSearch& kept : cache->searches) {
      if (kept.search == &search_tag && kept.target == target && kept.tier == tier_index)
        return &kept;
    }
    return nullptr;
  }

  /// A slot for a search not kept yet: a new one until `kept_search_slots`, then the oldest.
  ScanCache::KeptSearch& new_kept_search() {
    if (cache->searches.size() < ScanCache::kept_search_slots)
      return cache->searches.emplace_back();
    ScanCache::KeptSearch& slot = cache->searches[cache->next_search_slot];
    cache->next_search_slot = (cache->next_search_slot + 1) % ScanCache::kept_search_slots;
    return slot;
  }

  /// One address per search type (and model): what a kept search was searched by.
  static constexpr char search_tag = 0;

  // What the solve shares (see `SolveRun`).
  const Allocation& state;
  PreemptionContext<Model>& context;
  const Search& search;
  const SearchLimits limits;
  ScanCache* const cache;
  DeadlineWatch& deadline;
  SolverStatistics& statistics;
  RejectionLog& log;
  std::vector<Downgrade>& downgrades;
  const double floor;
  const double grid;

  // This tier.
  const std::size_t tier_index;
  const Tier& tier;
  const LevelIndex host_level;
  /// Its buffers: a decider's cache's from the last call, used where they lie (each tier's
  /// search has its own, and the cache holds them for the search's life), else its own. The
  /// names below are views of them.
  std::optional<ScanCache::SearchBuffers> own_buffers;
  ScanCache::SearchBuffers& buffers;
  std::vector<Candidate>& candidates = buffers.candidates;  ///< a heap of read domains,
                                                            ///< unread priced ones, groups
  std::size_t groups = 0;             ///< group candidates in the heap
  std::size_t grouped_targets = 0;    ///< targets they hold
  /// Blocks are keyed by `block_gang_bound` and open into their members as targets
  /// (`PreemptionContext::gang_blocks`).
  bool by_gang_blocks = false;
  /// Unread candidates, ascending id. Their bound is the price floor, so taken cheapest
  /// bound first they come in id order: a cursor replaces a heap.
  std::vector<DomainId>& unread = buffers.unread;
  std::size_t cursor = 0;
  /// The problem the next domain is read into, and the best domain's (null until one has a
  /// plan): the buffers' two slots, trading roles as the best changes.
  DomainProblem* problem = &buffers.problem;
  ScanWorkspace& workspace = buffers.workspace;
  std::vector<DomainId>& batch = buffers.batch;
  std::vector<DomainId>& same_host = buffers.same_host;
  std::vector<ScanCache::ListedTarget>& listed = buffers.listed;  ///< `open_group`'s, listing
  std::vector<std::size_t>& changed_children = buffers.changed_children;  ///< `push_child_groups`
  /// `push_child_groups`' children without a decider's cache to keep them in.
  std::vector<ScanCache::Opening::Child>& fresh_children = buffers.fresh_children;
  std::vector<RunChild>& run_children = buffers.run_children;  ///< every run's children, in turn
  std::vector<Run>& runs = buffers.runs;
  bool skipped_at_deadline = false;  ///< targets left unread by the time limit (full scan)
  bool cut_short = false;  ///< the deadline left domains of this tier unscanned or unsearched
  std::size_t searched_here = 0;
  /// A searched domain that found no plan without proving that none exists (a limit stopped
  /// its search): the tier is not proven empty.
  bool search_unproven = false;
  double best_cost = std::numeric_limits<double>::infinity();
  DomainProblem* best_problem = nullptr;
  DomainOutcome best;
  double open_bound = std::numeric_limits<double>::infinity();  ///< least bound left unclosed
};

/// The driver every solver shares: checks "fits already", then per tier screens every target
/// domain from aggregates (capacity, and the preemption index: can evicting every eligible
/// victim free enough?), and takes domains in ascending lower-bound order: an unread domain
/// (bound: the model's declared price floor, see `PriceFloorModel`) is read (scanned: victims
/// and fractional bound) and goes back with its scan bound; a read one is searched. Once the
/// least bound left cannot beat the best plan, the rest is pruned, most of it never read.
/// Tiers are taken tightest first; the first tier with a plan wins. `limits.full_scan` reads
/// every domain first (the path before the index). `cache` (optional) keeps scan results
/// across decisions of one preemptor class and cost model (`IncrementalDecider`).
/// The phases are `plan_if_fits_already` and `TierSearch`'s.
template <CostModel Model, DomainSearch Search>
PreemptionPlan solve_with(std::string_view solver, const Allocation& state,
                          const Workload& preemptor, const Model& model, const Search& search,
                          SearchLimits limits, ScanCache* cache = nullptr) {
  const auto start = Clock::now();
  DeadlineWatch deadline(deadline_after(start, limits.time_limit));
  PreemptionContext<Model> context(state, preemptor, model, cache);
  SolverStatistics statistics;
  const auto finish = [&](PreemptionPlan plan) {
    // The text is worded before the clock stops: a plan with text costs what it did.
    if (limits.text) context.fill_text(plan);
    plan.statistics.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    record_dependencies(state, preemptor, plan);  // what a later commit checks
    return plan;
  };
  if (auto plan = plan_if_fits_already(solver, state, context, statistics)) {
    return finish(std::move(*plan));
  }
  RejectionLog log(cache);
  std::vector<Downgrade> downgrades;  // every tier's, in search order
  bool unproven = false;  // an earlier tier ended at a limit without proving it has no plan
  // Whether the last tier taken was proven to hold no plan. Tiers go from tightest to loosest,
  // and the last one relaxes every other (its levels are the loosest of each scope), so its
  // proof alone makes the answer `infeasible`; without it the answer is `unknown`.
  bool loosest_proven_empty = true;
  const SolveRun<Model, Search> run{.state = state,
                                    .context = context,
                                    .search = search,
                                    .limits = limits,
                                    .cache = cache,
                                    .deadline = deadline,
                                    .statistics = statistics,
                                    .log = log,
                                    .downgrades = downgrades,
                                    .floor = context.price_floor(),
                                    .grid = context.cost_grid()};
  if (cache != nullptr) cache->keep_bounds_for(run.floor, run.grid);
  for (std::size_t tier_index = 0; tier_index < context.tiers().size(); ++tier_index) {
    TierSearch<Model, Search> tier_search(run, tier_index);
    tier_search.order_candidates();
    tier_search.search_domains();
    if (tier_search.found()) {
      PreemptionPlan plan = tier_search.make_plan(solver, unproven);
      plan.downgrades = std::move(downgrades);
      return finish(std::move(plan));
    }
    if (statistics.limit_reached) unproven = true;
    loosest_proven_empty = tier_search.proven_empty();
  }
  PreemptionPlan plan = context.make_plan_without_victims(
      solver, loosest_proven_empty ? PlanStatus::infeasible : PlanStatus::unknown, nullptr,
      statistics, log.verdicts(), log.total());
  plan.downgrades = std::move(downgrades);
  return finish(std::move(plan));
}

}  // namespace topopreempt::detail
