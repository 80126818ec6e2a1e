// SPDX-License-Identifier: MIT
// The C entry points of the queue: several preemptors planned together by the library's
// `plan_queue`, each plan verified on the state it was made on, the outcomes owned by the queue.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "c_api_internal.hpp"
#include "guarded.hpp"

namespace topopreempt_c {
namespace {

tp_nomination_status to_c(tp::NominationStatus status) {
  switch (status) {
    case tp::NominationStatus::kept:
      return TP_NOMINATION_KEPT;
    case tp::NominationStatus::resumed:
      return TP_NOMINATION_RESUMED;
    case tp::NominationStatus::planned:
      return TP_NOMINATION_PLANNED;
    case tp::NominationStatus::replanned:
      return TP_NOMINATION_REPLANNED;
    case tp::NominationStatus::infeasible:
      return TP_NOMINATION_INFEASIBLE;
    case tp::NominationStatus::rejected:
      return TP_NOMINATION_REJECTED;
    case tp::NominationStatus::unknown:
      return TP_NOMINATION_UNKNOWN;
  }
  fail(TP_E_INTERNAL, "the library returned a nomination status this C interface does not know");
}

/// The entry of `pending` that `plan_queue` planned for `id`: it plans in priority order (ties
/// by id, then by position) and rejects an id listed again after its first place, so the
/// planned one is the highest-priority entry with that id, the first listed among equals.
const tp::Workload& planned_entry(const std::vector<tp::Workload>& pending, tp::WorkloadId id) {
  const tp::Workload* planned = nullptr;
  for (const tp::Workload& w : pending) {
    if (w.id == id && (planned == nullptr || w.priority > planned->priority)) planned = &w;
  }
  if (planned == nullptr) {
    fail(TP_E_INTERNAL, "the queue answered for workload " + std::to_string(id.value) +
                            ", which was not pending");
  }
  return *planned;
}

/// The pending preemptors as library workloads; a bad one fails the call, named by its index.
std::vector<tp::Workload> to_pending(const tp_cluster& cluster, const tp_workload* const* given,
                                     std::size_t count) {
  if (given == nullptr && count > 0)
    fail(TP_E_NULL, "preemptors is NULL with a count of " + std::to_string(count));
  std::vector<tp::Workload> pending;
  pending.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string role = "preemptors[" + std::to_string(i) + "]: preemptor";
    pending.push_back(to_workload(cluster, given[i], role.c_str()));
  }
  return pending;
}

/// Checks every outcome on the state it was made on (the plans before it applied, in order, as
/// a caller committing them would) and turns it into what the C side reads.
tp_queue::Outcomes outcomes_of(const tp_cluster& cluster, const QueuePlanner& planner,
                               const std::vector<tp::Workload>& pending,
                               const tp::QueueResult& result) {
  tp_queue::Outcomes out;
  out.plans.reserve(result.plans.size());
  out.moved.reserve(result.plans.size());
  out.items.reserve(result.plans.size());
  const tp::Topology& topology = *cluster.topology;
  tp::Allocation working = *cluster.state;
  for (const tp::QueuedPlan& item : result.plans) {
    auto plan = std::make_unique<tp_plan>();
    plan->cluster_serial = cluster.serial;
    plan->generation = cluster.generation;
    plan->plan = item.plan;
    if (item.status != tp::NominationStatus::rejected) {
      const tp::Workload& preemptor = planned_entry(pending, item.preemptor);
      plan->preemptor = preemptor;
      const tp::PlanVerdict verdict = planner.verify(working, preemptor, item.plan);
      if (!verdict.ok) {
        fail(TP_E_INTERNAL, "the queued " + item.plan.solver + " plan for " + preemptor.label() +
                                " (" + std::string(tp::to_string(item.status)) +
                                ") failed verification: " + verdict.summary());
      }
      if (!item.plan.placement.replicas.empty()) {
        std::string refused;
        try {
          if (!tp::commit(working, item.plan, preemptor).committed) refused = "it is stale";
        } catch (const std::invalid_argument& error) {
          refused = error.what();
        }
        if (!refused.empty()) {
          fail(TP_E_INTERNAL, "the queued plan for " + preemptor.label() +
                                  " does not land after the plans before it: " + refused);
        }
      }
    } else {
      plan->preemptor.id = item.preemptor;
    }
    fill(*plan, topology, planner.cost_name());

    tp_queued_plan c{};
    c.preemptor = item.preemptor.value;
    c.status = to_c(item.status);
    c.plan = plan.get();
    c.error = out.strings.emplace_back(item.error).c_str();
    auto& moved = out.moved.emplace_back();
    moved.reserve(item.moved.size());
    for (const tp::DomainId domain : item.moved)
      moved.push_back(out.strings.emplace_back(topology.path(domain)).c_str());
    c.moved = moved.empty() ? nullptr : moved.data();
    c.moved_count = moved.size();
    out.plans.push_back(std::move(plan));
    out.items.push_back(c);
  }
  return out;
}

}  // namespace
}  // namespace topopreempt_c

using namespace topopreempt_c;

extern "C" {

tp_queue* tp_queue_create(void) {
  try {
    return new tp_queue();  // its members may allocate as they are built (a deque's map)
  } catch (...) {
    return nullptr;
  }
}

void tp_queue_destroy(tp_queue* queue) { delete queue; }

tp_status tp_cluster_plan_queue(tp_cluster* cluster, tp_queue* queue,
                                const tp_workload* const* preemptors, size_t count,
                                const tp_plan_options* options) {
  return guarded(cluster, [&] {
    if (queue == nullptr) fail(TP_E_NULL, "queue is NULL");
    if (queue->cluster_serial != 0 && queue->cluster_serial != cluster->serial)
      fail(TP_E_STATE, "the queue belongs to another cluster; use one queue per cluster");
    if (!cluster->state) fail(TP_E_STATE, "no sealed topology yet: call tp_cluster_seal");
    const std::vector<tp::Workload> pending = to_pending(*cluster, preemptors, count);
    const PlanSettings settings = to_settings(*cluster, options);
    std::string key = settings_key(settings);
    // Nominations are DomainIds of one sealed topology, priced under one cost: a reseal or other
    // settings make them meaningless, so the queue starts over rather than keep a plan that is
    // no longer exact (documented in topopreempt_c.h).
    const bool nominations_apply = queue->cluster_serial == cluster->serial &&
                                   queue->generation == cluster->generation &&
                                   queue->settings_key == key;
    tp::Nominations nominations = nominations_apply ? queue->nominations : tp::Nominations{};
    const std::unique_ptr<QueuePlanner> planner = make_queue_planner(settings);
    const tp::QueueResult result = planner->plan(*cluster->state, pending, nominations);
    tp_queue::Outcomes outcomes = outcomes_of(*cluster, *planner, pending, result);
    // Nothing below throws: the queue changes all at once, or not at all.
    queue->outcomes = std::move(outcomes);
    queue->nominations = std::move(nominations);
    queue->settings_key = std::move(key);
    queue->cluster_serial = cluster->serial;
    queue->generation = cluster->generation;
  });
}

tp_status tp_queue_get_plans(const tp_queue* queue, const tp_queued_plan** plans, size_t* count) {
  if (queue == nullptr || plans == nullptr || count == nullptr) return TP_E_NULL;
  *plans = queue->outcomes.items.empty() ? nullptr : queue->outcomes.items.data();
  *count = queue->outcomes.items.size();
  return TP_OK;
}

size_t tp_queue_nomination_count(const tp_queue* queue) {
  return queue == nullptr ? 0 : queue->nominations.size();
}

}  // extern "C"
