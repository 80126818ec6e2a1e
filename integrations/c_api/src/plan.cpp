// SPDX-License-Identifier: MIT
// The C entry points of plans: options, the decider cache, verification, commit, read-out.
#include <cmath>
#include <cstring>
#include <utility>

#include "c_api_internal.hpp"
#include "guarded.hpp"

namespace topopreempt_c {

WeightedTerms::WeightedTerms(const std::vector<tp_cost_term>& terms,
                             const std::vector<std::int32_t>& priorities)
    : terms_(terms) {
  for (const tp_cost_term& term : terms_) {
    double floor = 0.0;  // priority_weighted declares none: a shrink may cost arbitrarily little
    switch (term.model) {
      case TP_COST_VICTIM_COUNT:
        floor = 1.0;
        break;
      case TP_COST_KUBERNETES_ORDER:
        if (!kubernetes_) kubernetes_.emplace(priorities, term.base);
        floor = 1.0;
        break;
      case TP_COST_LOST_WORK:
        floor = tp::cost::lost_work{.floor = term.floor}.least_price();
        break;
      case TP_COST_RELOAD_TIME:
        floor = tp::cost::reload_time{.bandwidth_gib_per_s = term.bandwidth_gib_per_s,
                                      .floor = term.floor}
                    .least_price();
        break;
      case TP_COST_EXTRA:
        floor = term.floor;
        break;
      default:
        break;
    }
    least_price_ += term.weight * floor;
  }
}

double WeightedTerms::price(const tp_cost_term& term, const tp::Workload& victim,
                            std::optional<std::int32_t> dropped) const {
  const auto priced = [&](const auto& model) {
    return dropped ? static_cast<double>(model.shrink(victim, *dropped))
                   : static_cast<double>(model.evict(victim));
  };
  switch (term.model) {
    case TP_COST_PRIORITY_WEIGHTED:
      return priced(tp::cost::priority_weighted{.offset = term.offset});
    case TP_COST_VICTIM_COUNT:
      return priced(tp::cost::victim_count{});
    case TP_COST_KUBERNETES_ORDER:
      return priced(*kubernetes_);
    case TP_COST_LOST_WORK:
      return priced(tp::cost::lost_work{.floor = term.floor});
    case TP_COST_RELOAD_TIME:
      return priced(tp::cost::reload_time{.bandwidth_gib_per_s = term.bandwidth_gib_per_s,
                                          .floor = term.floor});
    case TP_COST_EXTRA: {
      // The caller's own price (a PodDisruptionBudget or SLO penalty), pro rata for a shrink.
      const double whole = term.floor + victim.cost.extra_cost;
      return dropped ? whole * *dropped / std::max(victim.replicas, 1) : whole;
    }
    default:
      return 0.0;
  }
}

double WeightedTerms::evict(const tp::Workload& victim) const {
  double total = 0.0;
  for (const tp_cost_term& term : terms_) total += term.weight * price(term, victim, std::nullopt);
  return total;
}

double WeightedTerms::shrink(const tp::Workload& victim, std::int32_t dropped) const {
  double total = 0.0;
  for (const tp_cost_term& term : terms_) total += term.weight * price(term, victim, dropped);
  return total;
}

std::unique_ptr<Decider> make_decider(const Question& question) {
  switch (question.solver) {
    case TP_SOLVER_GREEDY:
      return make_greedy_decider(question);
    case TP_SOLVER_KNAPSACK:
      return make_knapsack_decider(question);
    case TP_SOLVER_BRANCH_AND_BOUND:
      return make_branch_and_bound_decider(question);
  }
  fail(TP_E_INVALID, "unknown solver");
}

std::unique_ptr<QueuePlanner> make_queue_planner(const PlanSettings& settings) {
  switch (settings.solver) {
    case TP_SOLVER_GREEDY:
      return make_greedy_queue_planner(settings);
    case TP_SOLVER_KNAPSACK:
      return make_knapsack_queue_planner(settings);
    case TP_SOLVER_BRANCH_AND_BOUND:
      return make_branch_and_bound_queue_planner(settings);
  }
  fail(TP_E_INVALID, "unknown solver");
}

PlanSettings to_settings(const tp_cluster& cluster, const tp_plan_options* options) {
  if (options == nullptr) fail(TP_E_NULL, "options is NULL");
  check_struct_size(options->struct_size, sizeof(tp_plan_options), "tp_plan_options");
  PlanSettings question;
  if (options->solver != TP_SOLVER_GREEDY && options->solver != TP_SOLVER_KNAPSACK &&
      options->solver != TP_SOLVER_BRANCH_AND_BOUND) {
    fail(TP_E_INVALID,
         "options: solver " + std::to_string(options->solver) + " is not a tp_solver");
  }
  question.solver = static_cast<tp_solver>(options->solver);
  question.node_limit = options->node_limit;
  if (!std::isfinite(options->time_limit_s) || options->time_limit_s < 0.0) {
    fail(TP_E_INVALID, "options: time_limit_s must be finite and >= 0, got " +
                           std::to_string(options->time_limit_s));
  }
  question.time_limit_s = options->time_limit_s;
  if (options->cost_term_count < 1 || options->cost_term_count > TP_MAX_COST_TERMS) {
    fail(TP_E_INVALID, "options: cost_term_count must be in 1.." +
                           std::to_string(TP_MAX_COST_TERMS) + ", got " +
                           std::to_string(options->cost_term_count));
  }
  bool kubernetes = false;
  for (std::uint32_t i = 0; i < options->cost_term_count; ++i) {
    const tp_cost_term& term = options->cost[i];
    const std::string where = "options: cost term " + std::to_string(i) + ": ";
    const auto check = [&](double value, const char* field, double least, bool strict) {
      if (!std::isfinite(value) || value < least || (strict && value == least)) {
        fail(TP_E_INVALID, where + field + " is " + std::to_string(value) +
                               "; it must be finite and " + (strict ? "> " : ">= ") +
                               std::to_string(least));
      }
    };
    if (term.model < TP_COST_PRIORITY_WEIGHTED || term.model > TP_COST_EXTRA) {
      fail(TP_E_INVALID, where + "model " + std::to_string(term.model) + " is not a tp_cost_model");
    }
    check(term.weight, "weight", 0.0, false);
    if (!std::isfinite(term.offset)) fail(TP_E_INVALID, where + "offset must be finite");
    check(term.floor, "floor", 0.0, false);
    check(term.bandwidth_gib_per_s, "bandwidth_gib_per_s", 0.0, true);
    // 0: the exact mixed radix over the running workloads (the library's default); else a
    // whole number >= 2 for base^rank.
    if (!(term.base == 0.0 || (term.base >= 2.0 && term.base == std::floor(term.base)))) {
      fail(TP_E_INVALID, where + "base must be 0 (exact mixed radix) or a whole number >= 2, got " +
                             std::to_string(term.base));
    }
    kubernetes = kubernetes || term.model == TP_COST_KUBERNETES_ORDER;
    question.terms.push_back(term);
  }
  if (kubernetes) {
    // Every running workload's priority, duplicates included: they size the mixed radix.
    for (const auto& [priority, count] : cluster.priorities)
      question.priorities.insert(question.priorities.end(), count, priority);
  }
  return question;
}

namespace {

/// The question `options` asks for `preemptor`, validated.
Question to_question(const tp_cluster& cluster, tp::Workload preemptor,
                     const tp_plan_options* options) {
  Question question;
  static_cast<PlanSettings&>(question) = to_settings(cluster, options);
  question.preemptor = std::move(preemptor);
  return question;
}

/// Bytes that tell two questions apart: same key, same plan on the same state.
class KeyWriter {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    text_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put_text(std::string_view text) {
    put(text.size());
    text_.append(text);
  }
  [[nodiscard]] std::string take() && { return std::move(text_); }

 private:
  std::string text_;
};

void put_settings(KeyWriter& key, const PlanSettings& settings) {
  key.put(settings.solver);
  key.put(settings.node_limit);
  key.put(settings.time_limit_s);
  for (const tp_cost_term& term : settings.terms) {
    key.put(term.model);
    key.put(term.weight);
    key.put(term.offset);
    key.put(term.floor);
    key.put(term.bandwidth_gib_per_s);
    key.put(term.base);
  }
  // Run-length: the priorities are sorted, and repeated once per running workload.
  for (std::size_t i = 0; i < settings.priorities.size();) {
    std::size_t j = i;
    while (j < settings.priorities.size() && settings.priorities[j] == settings.priorities[i]) ++j;
    key.put(settings.priorities[i]);
    key.put(j - i);
    i = j;
  }
}

std::string key_of(const Question& question) {
  KeyWriter key;
  const tp::Workload& w = question.preemptor;
  key.put(w.id.value);
  key.put_text(w.name);
  key.put(w.priority);
  key.put(w.preemptible);
  key.put(w.replicas);
  key.put(w.min_replicas.value_or(0));
  key.put(w.demand.whole_devices);
  for (Eigen::Index i = 0; i < w.demand.resources.size(); ++i) key.put(w.demand.resources(i));
  for (const tp::TopologyRequirement* scope : {&w.replica_scope, &w.gang_scope}) {
    key.put(scope->mode);
    key.put_text(scope->level);
  }
  key.put(w.distinct_hosts);
  key.put(w.cost.start_time_s);
  key.put(w.cost.seconds_since_checkpoint);
  key.put_text(w.cost.model_id);
  key.put(w.cost.model_size_gib);
  key.put(w.cost.extra_cost);
  put_settings(key, question);
  return std::move(key).take();
}

constexpr std::size_t decider_cache_size = 16;

/// The cached decider for `question` (moved to the front), or a new one at the front.
Decider& decider_for(tp_cluster& cluster, const Question& question) {
  std::string key = key_of(question);
  auto& cache = cluster.deciders;
  for (std::size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].key != key) continue;
    std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(i),
                cache.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return *cache.front().decider;
  }
  tp_cluster::CachedDecider made{std::move(key), make_decider(question)};
  if (cache.size() == decider_cache_size) cache.pop_back();
  cache.insert(cache.begin(), std::move(made));
  return *cache.front().decider;
}

const char* keep(tp_plan& out, std::string text) {
  return out.strings.emplace_back(std::move(text)).c_str();
}

}  // namespace

std::string settings_key(const PlanSettings& settings) {
  KeyWriter key;
  put_settings(key, settings);
  return std::move(key).take();
}

void fill(tp_plan& out, const tp::Topology& topology, std::string_view cost_name) {
  const tp::PreemptionPlan& plan = out.plan;
  const tp::ResourceSchema& schema = topology.schema();
  out.cost_name = keep(out, std::string(cost_name));
  std::vector<const char*> resource_names;
  for (const auto& dimension : schema.dimensions())
    resource_names.push_back(keep(out, dimension.name));
  const auto host_of = [&](tp::DomainId d) {
    return topology.level(d) >= topology.host_level()
               ? topology.ancestor_at(d, topology.host_level())
               : tp::DomainId{};
  };
  if (plan.target_domain.valid()) {
    out.target = keep(out, topology.path(plan.target_domain));
    out.target_level = keep(out, topology.levels()[topology.level(plan.target_domain)]);
    const tp::DomainId host = host_of(plan.target_domain);
    if (host.valid()) out.target_host = keep(out, std::string(topology.local_name(host)));
  }
  out.victims.reserve(plan.victims.size());
  for (const tp::Victim& victim : plan.victims) {
    tp_victim v{};
    v.id = victim.id.value;
    v.action = victim.action == tp::VictimAction::evict ? TP_VICTIM_EVICT : TP_VICTIM_SHRINK;
    v.dropped_count = victim.dropped_replicas.size();
    v.dropped_replicas = victim.dropped_replicas.empty() ? nullptr : victim.dropped_replicas.data();
    v.cost = victim.cost;
    v.reason = victim.reason.c_str();
    out.victims.push_back(v);
  }
  std::size_t amount_total = 0;
  for (const auto& replica : plan.placement.replicas) {
    for (const auto& entry : replica.entries)
      amount_total += static_cast<std::size_t>((entry.amount.array() != 0).count());
  }
  out.amounts.reserve(amount_total);  // entries point into it: no reallocation after this
  for (std::size_t r = 0; r < plan.placement.replicas.size(); ++r) {
    for (const auto& entry : plan.placement.replicas[r].entries) {
      tp_plan_entry e{};
      e.replica = static_cast<std::uint32_t>(r);
      const std::string path = topology.path(entry.domain);
      e.path = keep(out, path);
      const tp::DomainId host = host_of(entry.domain);
      const std::string host_path = host.valid() ? topology.path(host) : std::string();
      e.host = keep(out, host.valid() ? std::string(topology.local_name(host)) : std::string());
      e.host_path = keep(out, host.valid() && path.size() > host_path.size()
                                  ? path.substr(host_path.size() + 1)
                                  : std::string());
      e.level = keep(out, topology.levels()[topology.level(entry.domain)]);
      e.is_device = topology.is_device(entry.domain) ? 1 : 0;
      e.device_index = e.is_device != 0 ? topology.device_ordinal(entry.domain) : 0;
      e.amounts = out.amounts.data() + out.amounts.size();
      for (std::size_t dim = 0; dim < schema.size(); ++dim) {
        const tp::Amount amount = entry.amount(static_cast<Eigen::Index>(dim));
        if (amount != 0) out.amounts.push_back({resource_names[dim], amount});
      }
      e.amount_count =
          static_cast<std::size_t>(out.amounts.data() + out.amounts.size() - e.amounts);
      if (e.amount_count == 0) e.amounts = nullptr;
      out.entries.push_back(e);
    }
  }
}

}  // namespace topopreempt_c

using namespace topopreempt_c;

extern "C" {

void tp_cost_term_init(tp_cost_term* term, tp_cost_model model) {
  if (term == nullptr) return;
  *term = tp_cost_term{};
  term->model = model;
  term->weight = 1.0;
  term->offset = tp::cost::priority_weighted{}.offset;
  term->floor = tp::cost::lost_work{}.floor;
  term->bandwidth_gib_per_s = tp::cost::reload_time{}.bandwidth_gib_per_s;
  term->base = 0.0;  // the exact mixed radix, as cost::kubernetes_order's default
}

void tp_plan_options_init(tp_plan_options* options) {
  if (options == nullptr) return;
  *options = tp_plan_options{};
  options->struct_size = sizeof(tp_plan_options);
  options->solver = TP_SOLVER_BRANCH_AND_BOUND;
  options->cost_term_count = 1;
  for (tp_cost_term& term : options->cost) tp_cost_term_init(&term, TP_COST_PRIORITY_WEIGHTED);
}

tp_status tp_cluster_plan(tp_cluster* cluster, const tp_workload* preemptor,
                          const tp_plan_options* options, tp_plan** plan) {
  if (plan != nullptr) *plan = nullptr;
  return guarded(cluster, [&] {
    if (plan == nullptr) fail(TP_E_NULL, "plan (the out pointer) is NULL");
    tp::Workload workload = to_workload(*cluster, preemptor, "preemptor");
    const tp::Allocation& state = *cluster->state;
    if (state.contains(workload.id)) {
      fail(TP_E_CONFLICT, workload.label() + " is already running; a preemptor must be pending");
    }
    const Question question = to_question(*cluster, std::move(workload), options);
    auto out = std::make_unique<tp_plan>();
    out->cluster_serial = cluster->serial;
    out->generation = cluster->generation;
    out->preemptor = question.preemptor;
    Decider& decider = decider_for(*cluster, question);
    const std::uint64_t reused = decider.reused_reads();
    const std::uint64_t fresh = decider.fresh_reads();
    out->plan = decider.decide(state);
    cluster->reused_reads += decider.reused_reads() - reused;
    cluster->fresh_reads += decider.fresh_reads() - fresh;
    const tp::PlanVerdict verdict = decider.verify(state, out->plan);
    if (!verdict.ok) {
      fail(TP_E_INTERNAL, "the " + out->plan.solver + " plan for " + question.preemptor.label() +
                              " failed verification: " + verdict.summary());
    }
    fill(*out, *cluster->topology, decider.cost_name());
    *plan = out.release();
  });
}

tp_status tp_cluster_commit(tp_cluster* cluster, const tp_plan* plan) {
  return guarded(cluster, [&] {
    if (plan == nullptr) fail(TP_E_NULL, "plan is NULL");
    if (plan->cluster_serial != cluster->serial)
      fail(TP_E_STATE, "the plan was made on another cluster");
    if (plan->generation != cluster->generation || !cluster->state) {
      fail(TP_E_STATE, "the plan was made on topology generation " +
                           std::to_string(plan->generation) + ", the cluster is at " +
                           std::to_string(cluster->generation) + "; plan again");
    }
    tp::Allocation& state = *cluster->state;
    std::vector<std::int32_t> gone;
    for (const tp::Victim& victim : plan->plan.victims) {
      if (victim.action == tp::VictimAction::evict && state.contains(victim.id)) {
        gone.push_back(state.workload(victim.id).priority);
      }
    }
    auto priorities = priorities_after(cluster->priorities, {plan->preemptor.priority}, gone);
    const tp::CommitResult result = tp::commit(state, plan->plan, plan->preemptor);
    if (!result.committed) {
      std::string moved;
      for (const tp::DomainId d : result.moved)
        moved += (moved.empty() ? "" : ", ") + cluster->topology->describe(d);
      fail(TP_E_CONFLICT, "the plan for " + plan->preemptor.label() + " is stale: " + moved +
                              " changed since it was made; nothing was applied, plan again");
    }
    cluster->priorities = std::move(priorities);
  });
}

void tp_plan_destroy(tp_plan* plan) { delete plan; }

void tp_plan_info_init(tp_plan_info* info) {
  if (info == nullptr) return;
  *info = tp_plan_info{};
  info->struct_size = sizeof(tp_plan_info);
}

tp_status tp_plan_get_info(const tp_plan* plan, tp_plan_info* info) {
  if (plan == nullptr || info == nullptr) return TP_E_NULL;
  if (info->struct_size != sizeof(tp_plan_info)) return TP_E_ABI;
  const tp::PreemptionPlan& p = plan->plan;
  tp_plan_info out{};
  out.struct_size = sizeof(tp_plan_info);
  switch (p.status) {
    case tp::PlanStatus::optimal:
      out.status = TP_PLAN_OPTIMAL;
      break;
    case tp::PlanStatus::feasible:
      out.status = TP_PLAN_FEASIBLE;
      break;
    case tp::PlanStatus::infeasible:
      out.status = TP_PLAN_INFEASIBLE;
      break;
    case tp::PlanStatus::no_preemption_needed:
      out.status = TP_PLAN_NO_PREEMPTION_NEEDED;
      break;
    case tp::PlanStatus::unknown:
      out.status = TP_PLAN_UNKNOWN;
      break;
  }
  out.preemptor = plan->preemptor.id.value;
  out.cost = p.cost;
  out.lower_bound = p.lower_bound;
  out.gap = p.gap();
  out.solver = p.solver.c_str();
  out.cost_model = plan->cost_name;
  out.target = plan->target;
  out.target_level = plan->target_level;
  out.target_host = plan->target_host;
  out.victim_count = plan->victims.size();
  out.entry_count = plan->entries.size();
  out.replicas = static_cast<std::int32_t>(p.placement.replicas.size());
  out.explanation = p.explanation.c_str();
  out.domains_considered = p.statistics.domains_considered;
  out.domains_solved = p.statistics.domains_solved;
  out.nodes_explored = p.statistics.nodes_explored;
  out.limit_reached = p.statistics.limit_reached ? 1 : 0;
  out.seconds = p.statistics.seconds;
  out.generation = plan->generation;
  *info = out;
  return TP_OK;
}

tp_status tp_plan_get_victims(const tp_plan* plan, const tp_victim** victims, size_t* count) {
  if (plan == nullptr || victims == nullptr || count == nullptr) return TP_E_NULL;
  *victims = plan->victims.empty() ? nullptr : plan->victims.data();
  *count = plan->victims.size();
  return TP_OK;
}

tp_status tp_plan_get_placement(const tp_plan* plan, const tp_plan_entry** entries, size_t* count) {
  if (plan == nullptr || entries == nullptr || count == nullptr) return TP_E_NULL;
  *entries = plan->entries.empty() ? nullptr : plan->entries.data();
  *count = plan->entries.size();
  return TP_OK;
}

}  // extern "C"
