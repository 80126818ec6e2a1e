// SPDX-License-Identifier: MIT
#pragma once
/// @file model_cache.hpp
/// GPU memory as a cache of models (after Compass, Yang, Birman et al., arXiv 2402.17652).
///
/// - `ModelCacheState`: per GPU (device leaf) the cached models with their sizes and last-use
///   times, within the device's `gpu_memory_mib`; per GPU the time it is ready and the queue
///   wait in front of it.
/// - `earliest_start`: `max(ready_time(worker), now + queue_wait(worker) + sum of load_time of
///   the task's models not cached on the worker)`, load_time = size / bandwidth.
/// - `place_task`: the worker with the earliest start (ties: lowest domain id). A *worker is a
///   device* (one GPU leaf of the topology): the cache is GPU memory, so that is where caching
///   decides anything.
/// - `choose_evictions` / `evict_for`: free GPU memory for a model, evicting the cached models
///   of least reload cost x recency first (an LRU weighted by how expensive a miss would be).
/// - `dispatch`: commits a task to a worker (evicts, loads, updates times).
/// - `cache_aware_reload`: a `CostModel` for the preemption solvers that prices a victim by
///   the time to reload its model, unless a copy survives on another GPU.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::model_cache {

/// One model resident in a GPU's memory.
struct CachedModel {
  /// The model's id.
  std::string model_id;
  /// GPU memory it occupies.
  Amount size_mib = 0;
  double last_use = 0.0;  ///< seconds, same clock as `now` everywhere
  /// Member-wise equality.
  friend bool operator==(const CachedModel&, const CachedModel&) = default;
};

/// A model a task needs.
struct ModelRef {
  /// The model's id.
  std::string id;
  /// GPU memory it needs when loaded.
  Amount size_mib = 0;
};

/// A unit of work that needs some models resident on its GPU.
struct Task {
  std::string name{};            ///< for messages only
  /// The models it needs in GPU memory.
  std::vector<ModelRef> models{};
  double duration_s = 0.0;       ///< run time once started (used by `dispatch`)
  /// "task 'summarise'" for messages.
  [[nodiscard]] std::string label() const { return "task '" + name + "'"; }
};

namespace impl {
[[nodiscard]] inline std::string number(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}
inline void check_time(double value, std::string_view what) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument("model_cache: " + std::string(what) + " must be finite, got " +
                                number(value));
  }
}
}  // namespace impl

/// The model cache of every GPU of a topology, and each GPU's ready time and queue wait.
///
/// Capacity of a GPU is its `gpu_memory_mib` in the topology. A model id has one size across
/// the whole cluster (checked). Every mutating call validates first and changes nothing when
/// it throws (strong guarantee); errors name the device and the model.
/// Thread-safety: const members may be called concurrently; mutation needs exclusive access.
class ModelCacheState {
 public:
  /// An empty cache over `topology`, loading models at `load_bandwidth_mib_per_s` (default
  /// 12 GiB/s, roughly what a PCIe 4.0 x16 host-to-GPU copy sustains). Throws
  /// `std::invalid_argument` for a null topology, a bandwidth that is not finite and positive,
  /// or a schema without a device dimension `gpu_memory_mib`.
  explicit ModelCacheState(std::shared_ptr<const Topology> topology,
                           double load_bandwidth_mib_per_s = 12288.0)
      : topology_(std::move(topology)), bandwidth_(load_bandwidth_mib_per_s) {
    if (!topology_) throw std::invalid_argument("model_cache: ModelCacheState needs a topology");
    if (!(bandwidth_ > 0.0) || !std::isfinite(bandwidth_)) {
      throw std::invalid_argument("model_cache: load bandwidth must be finite and > 0, got " +
                                  impl::number(bandwidth_));
    }
    const auto dim = topology_->schema().find("gpu_memory_mib");
    if (!dim || !topology_->schema().is_device(*dim)) {
      throw std::invalid_argument("model_cache: the topology has no device dimension 'gpu_memory_mib'");
    }
    memory_dim_ = *dim;
    devices_.resize(topology_->domains_at(topology_->device_level()).size());
  }

  /// The topology.
  [[nodiscard]] const Topology& topology() const noexcept { return *topology_; }
  /// Host-to-GPU load bandwidth in MiB/s.
  [[nodiscard]] double load_bandwidth_mib_per_s() const noexcept { return bandwidth_; }
  /// Seconds to load `size_mib` into a GPU.
  [[nodiscard]] double load_time(Amount size_mib) const noexcept {
    return static_cast<double>(size_mib) / bandwidth_;
  }
  /// All workers (GPU leaves), ascending id.
  [[nodiscard]] std::span<const DomainId> workers() const {
    return topology_->domains_at(topology_->device_level());
  }

  /// GPU memory of `device` (MiB). Throws `std::invalid_argument` naming it if it is not a
  /// device of the topology (so do all per-device accessors).
  [[nodiscard]] Amount capacity_mib(DomainId device) const {
    (void)slot(device);
    return topology_->local_capacity(device)(static_cast<Eigen::Index>(memory_dim_));
  }
  /// Memory held by cached models on `device`.
  [[nodiscard]] Amount used_mib(DomainId device) const { return slot(device).used; }
  /// Memory not held by cached models on `device`.
  [[nodiscard]] Amount free_mib(DomainId device) const {
    return capacity_mib(device) - used_mib(device);
  }
  /// Models cached on `device`, ascending id.
  [[nodiscard]] std::span<const CachedModel> cached(DomainId device) const {
    return slot(device).models;
  }
  /// The cache entry of `model_id` on `device`, or nullptr.
  [[nodiscard]] const CachedModel* find(DomainId device, std::string_view model_id) const {
    const auto& models = slot(device).models;
    const auto it = lower(models, model_id);
    return it != models.end() && it->model_id == model_id ? &*it : nullptr;
  }
  /// Whether `model_id` is cached on `device`.
  [[nodiscard]] bool is_cached(DomainId device, std::string_view model_id) const {
    return find(device, model_id) != nullptr;
  }
  /// Devices caching `model_id`, ascending id (empty when none).
  [[nodiscard]] std::span<const DomainId> devices_caching(std::string_view model_id) const {
    const auto it = catalogue_.find(model_id);
    return it == catalogue_.end() ? std::span<const DomainId>() : std::span(it->second.devices);
  }
  /// Size of `model_id` if some device caches it.
  [[nodiscard]] std::optional<Amount> model_size(std::string_view model_id) const {
    const auto it = catalogue_.find(model_id);
    return it == catalogue_.end() ? std::nullopt : std::optional<Amount>(it->second.size_mib);
  }

  /// When `device` finishes the work already committed to it.
  [[nodiscard]] double ready_time(DomainId device) const { return slot(device).ready; }
  /// Sets the ready time of `device` (finite).
  void set_ready_time(DomainId device, double time) {
    Device& d = slot(device);
    impl::check_time(time, "ready time of " + topology_->describe(device));
    d.ready = time;
  }
  /// Estimated wait of a new task in `device`'s queue (seconds).
  [[nodiscard]] double queue_wait(DomainId device) const { return slot(device).queue_wait; }
  /// Sets the queue wait of `device` (finite, >= 0).
  void set_queue_wait(DomainId device, double seconds) {
    Device& d = slot(device);
    if (!(seconds >= 0.0) || !std::isfinite(seconds)) {
      throw std::invalid_argument("model_cache: queue wait of " + topology_->describe(device) +
                                  " must be finite and >= 0, got " + impl::number(seconds));
    }
    d.queue_wait = seconds;
  }

  /// Caches `model` on `device`, last used at `now`. Throws `std::invalid_argument` naming the
  /// model and device for an empty id, a size <= 0 or different from the size the model has
  /// elsewhere, a model already cached there, or not enough free memory (call `evict_for`
  /// first).
  void insert(DomainId device, const ModelRef& model, double now) {
    Device& d = slot(device);
    impl::check_time(now, "now");
    check_model(model);
    const auto it = lower(d.models, model.id);
    if (it != d.models.end() && it->model_id == model.id) {
      throw std::invalid_argument("model_cache: model '" + model.id + "' is already cached on " +
                                  topology_->describe(device));
    }
    if (model.size_mib > capacity_mib(device) - d.used) {
      throw std::invalid_argument("model_cache: model '" + model.id + "' (" +
                                  std::to_string(model.size_mib) + " MiB) does not fit on " +
                                  topology_->describe(device) + ": " +
                                  std::to_string(capacity_mib(device) - d.used) +
                                  " MiB free; evict first");
    }
    // Allocate everything before changing anything (strong guarantee).
    auto entry = catalogue_.find(model.id);
    const bool new_entry = entry == catalogue_.end();
    if (new_entry) entry = catalogue_.emplace(model.id, Catalogued{model.size_mib, {}}).first;
    try {
      auto& devices = entry->second.devices;
      devices.insert(std::lower_bound(devices.begin(), devices.end(), device), device);
      try {
        d.models.insert(it, CachedModel{model.id, model.size_mib, now});
      } catch (...) {
        devices.erase(std::lower_bound(devices.begin(), devices.end(), device));
        throw;
      }
    } catch (...) {
      if (new_entry) catalogue_.erase(entry);
      throw;
    }
    d.used += model.size_mib;
  }

  /// Marks `model_id` on `device` as used at `now` (the later of the two times is kept).
  /// Throws naming both if it is not cached there.
  void touch(DomainId device, std::string_view model_id, double now) {
    impl::check_time(now, "now");
    CachedModel& model = entry(device, model_id);
    model.last_use = std::max(model.last_use, now);
  }

  /// Drops `model_id` from `device`. Throws naming both if it is not cached there.
  void erase(DomainId device, std::string_view model_id) {
    Device& d = slot(device);
    const auto it = lower(d.models, model_id);
    if (it == d.models.end() || it->model_id != model_id) {
      throw std::invalid_argument("model_cache: model '" + std::string(model_id) +
                                  "' is not cached on " + topology_->describe(device));
    }
    // No-throw from here on: erasing never allocates.
    const auto entry = catalogue_.find(model_id);
    auto& devices = entry->second.devices;
    devices.erase(std::lower_bound(devices.begin(), devices.end(), device));
    if (devices.empty()) catalogue_.erase(entry);
    d.used -= it->size_mib;
    d.models.erase(it);
  }

  /// Throws `std::invalid_argument` naming the model if `model` has an empty id, a size <= 0,
  /// or a size different from the one it is cached with.
  void check_model(const ModelRef& model) const {
    if (model.id.empty()) throw std::invalid_argument("model_cache: a model has an empty id");
    if (model.size_mib <= 0) {
      throw std::invalid_argument("model_cache: model '" + model.id + "' has size " +
                                  std::to_string(model.size_mib) + " MiB; it must be > 0");
    }
    if (const auto known = model_size(model.id); known && *known != model.size_mib) {
      throw std::invalid_argument("model_cache: model '" + model.id + "' is given as " +
                                  std::to_string(model.size_mib) + " MiB but is cached as " +
                                  std::to_string(*known) + " MiB");
    }
  }

 private:
  struct Device {
    std::vector<CachedModel> models;  // ascending id
    Amount used = 0;
    double ready = 0.0;
    double queue_wait = 0.0;
  };
  struct Catalogued {
    Amount size_mib = 0;
    std::vector<DomainId> devices;  // ascending
  };

  static std::vector<CachedModel>::const_iterator lower(const std::vector<CachedModel>& models,
                                                        std::string_view id) {
    return std::lower_bound(models.begin(), models.end(), id,
                            [](const CachedModel& m, std::string_view key) { return m.model_id < key; });
  }
  static std::vector<CachedModel>::iterator lower(std::vector<CachedModel>& models,
                                                  std::string_view id) {
    return std::lower_bound(models.begin(), models.end(), id,
                            [](const CachedModel& m, std::string_view key) { return m.model_id < key; });
  }
  [[nodiscard]] std::size_t index(DomainId device) const {
    if (!topology_->valid_domain(device)) {
      throw std::invalid_argument("model_cache: domain id " + std::to_string(device.value) +
                                  " is not in the topology");
    }
    if (!topology_->is_device(device)) {
      throw std::invalid_argument("model_cache: " + topology_->describe(device) +
                                  " is not a device (workers are GPU leaves)");
    }
    return topology_->ordinal(device);
  }
  [[nodiscard]] const Device& slot(DomainId device) const { return devices_[index(device)]; }
  [[nodiscard]] Device& slot(DomainId device) { return devices_[index(device)]; }
  [[nodiscard]] CachedModel& entry(DomainId device, std::string_view model_id) {
    Device& d = slot(device);
    const auto it = lower(d.models, model_id);
    if (it == d.models.end() || it->model_id != model_id) {
      throw std::invalid_argument("model_cache: model '" + std::string(model_id) +
                                  "' is not cached on " + topology_->describe(device));
    }
    return *it;
  }

  std::shared_ptr<const Topology> topology_;
  double bandwidth_;
  std::size_t memory_dim_ = 0;
  std::vector<Device> devices_;                                   // by device ordinal
  std::map<std::string, Catalogued, std::less<>> catalogue_;      // model -> size, devices
};

/// Throws `std::invalid_argument` naming the task and the model if `task` lists a model twice,
/// a model with an empty id or size <= 0 or a size that differs from its cached size, or has a
/// duration that is not finite and >= 0.
inline void validate(const ModelCacheState& state, const Task& task) {
  for (std::size_t i = 0; i < task.models.size(); ++i) {
    try {
      state.check_model(task.models[i]);
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(task.label() + ": " + error.what());
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (task.models[j].id == task.models[i].id) {
        throw std::invalid_argument(task.label() + " lists model '" + task.models[i].id + "' twice");
      }
    }
  }
  if (!(task.duration_s >= 0.0) || !std::isfinite(task.duration_s)) {
    throw std::invalid_argument(task.label() + ": duration must be finite and >= 0, got " +
                                impl::number(task.duration_s));
  }
}

/// Earliest time `task` can start on `worker` (a device):
/// `max(ready_time(worker), now + queue_wait(worker) + sum of load_time(m))` over the task's
/// models m not cached on the worker. +infinity when the task's models together exceed the
/// worker's GPU memory (it can never run there). Throws `std::invalid_argument` for an invalid
/// task (see `validate`), a worker that is not a device, or a non-finite `now`.
[[nodiscard]] inline double earliest_start(const ModelCacheState& state, const Task& task,
                                           DomainId worker, double now) {
  impl::check_time(now, "now");
  validate(state, task);
  Amount total = 0;
  double loading = 0.0;
  for (const ModelRef& model : task.models) {
    total += model.size_mib;
    if (!state.is_cached(worker, model.id)) loading += state.load_time(model.size_mib);
  }
  if (total > state.capacity_mib(worker)) return std::numeric_limits<double>::infinity();
  return std::max(state.ready_time(worker), now + state.queue_wait(worker) + loading);
}

/// The worker among `workers` with the earliest start for `task` (ties: lowest domain id,
/// whatever the order of `workers`); an invalid `DomainId` when none can hold the task's
/// models. Throws as `earliest_start`, naming the offending worker.
[[nodiscard]] inline DomainId place_task(const ModelCacheState& state, const Task& task,
                                         std::span<const DomainId> workers, double now) {
  DomainId best;
  double best_start = std::numeric_limits<double>::infinity();
  for (DomainId worker : workers) {
    const double start = earliest_start(state, task, worker, now);
    if (start < best_start || (start == best_start && best.valid() && worker < best)) {
      best = worker;
      best_start = start;
    }
  }
  return best;
}

/// `place_task` over every GPU of the topology.
[[nodiscard]] inline DomainId place_task(const ModelCacheState& state, const Task& task, double now) {
  return place_task(state, task, state.workers(), now);
}

/// The cached models of `device` to evict so that `size_mib` more MiB are free, never touching
/// the models named in `keep`. Candidates are taken in ascending order of
/// `load_time(size) / (1 + age)` with age = now - last_use (a model cheap to reload or long
/// unused goes first; ties: older, then lower id) until enough is free; then any taken model
/// that is no longer needed for the total is put back (latest taken first), so no eviction is
/// superfluous. Empty when enough is already free.
/// Throws `std::invalid_argument` naming the device and the amount when even evicting every
/// candidate frees too little.
[[nodiscard]] inline std::vector<std::string> choose_evictions(
    const ModelCacheState& state, DomainId device, Amount size_mib, double now,
    std::span<const std::string> keep = {}) {
  impl::check_time(now, "now");
  const Amount need = size_mib - state.free_mib(device);
  if (need <= 0) return {};
  struct Candidate {
    double score;
    double last_use;
    const CachedModel* model;
  };
  std::vector<Candidate> candidates;
  Amount evictable = 0;
  for (const CachedModel& model : state.cached(device)) {
    if (std::find(keep.begin(), keep.end(), model.model_id) != keep.end()) continue;
    const double age = std::max(0.0, now - model.last_use);
    candidates.push_back({state.load_time(model.size_mib) / (1.0 + age), model.last_use, &model});
    evictable += model.size_mib;
  }
  if (evictable < need) {
    throw std::invalid_argument("model_cache: cannot free " + std::to_string(size_mib) + " MiB on " +
                                state.topology().describe(device) + ": " +
                                std::to_string(state.free_mib(device)) + " MiB free and " +
                                std::to_string(evictable) + " MiB evictable");
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.last_use != b.last_use) return a.last_use < b.last_use;
    return a.model->model_id < b.model->model_id;
  });
  std::vector<const Candidate*> taken;
  Amount freed = 0;
  for (const Candidate& candidate : candidates) {
    if (freed >= need) break;
    taken.push_back(&candidate);
    freed += candidate.model->size_mib;
  }
  // A big model taken late may cover the need alone: keep the cheap ones it made useless.
  std::vector<bool> evict(taken.size(), true);
  for (std::size_t i = taken.size(); i-- > 0;) {
    if (freed - taken[i]->model->size_mib >= need) {
      evict[i] = false;
      freed -= taken[i]->model->size_mib;
    }
  }
  std::vector<std::string> result;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (evict[i]) result.push_back(taken[i]->model->model_id);
  }
  return result;
}

/// Frees room for `model` on `device` by evicting what `choose_evictions` picks (nothing when
/// it is already cached there or fits), and returns the evicted ids in eviction order. Strong
/// guarantee: the choice is made before anything changes.
inline std::vector<std::string> evict_for(ModelCacheState& state, DomainId device,
                                          const ModelRef& model, double now,
                                          std::span<const std::string> keep = {}) {
  state.check_model(model);
  if (state.is_cached(device, model.id)) return {};
  std::vector<std::string> victims;
  try {
    victims = choose_evictions(state, device, model.size_mib, now, keep);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string(error.what()) + " (for model '" + model.id + "')");
  }
  for (const std::string& id : victims) state.erase(device, id);
  return victims;
}

/// Commits `task` to `worker`: evicts what it must (never the task's own models), loads the
/// missing models, marks all of them used at the start time, and sets the worker's ready time
/// to start + duration. Returns the start time (`earliest_start`). Throws
/// `std::invalid_argument` naming the task and worker when the task cannot run there; strong
/// guarantee (works on a copy of the state, O(cache size)).
inline double dispatch(ModelCacheState& state, const Task& task, DomainId worker, double now) {
  const double start = earliest_start(state, task, worker, now);
  if (!std::isfinite(start)) {
    throw std::invalid_argument("model_cache: " + task.label() + " does not fit on " +
                                state.topology().describe(worker));
  }
  ModelCacheState next = state;
  std::vector<std::string> keep;
  Amount missing = 0;
  for (const ModelRef& model : task.models) {
    keep.push_back(model.id);
    if (!next.is_cached(worker, model.id)) missing += model.size_mib;
  }
  for (const std::string& id : choose_evictions(next, worker, missing, now, keep)) {
    next.erase(worker, id);
  }
  for (const ModelRef& model : task.models) {
    if (next.is_cached(worker, model.id)) {
      next.touch(worker, model.id, start);
    } else {
      next.insert(worker, model, start);
    }
  }
  next.set_ready_time(worker, start + task.duration_s);
  state = std::move(next);
  return start;
}

/// A `CostModel` (drop-in for `cost::reload_time`) that knows the model cache: evicting a
/// workload costs `cached_elsewhere_cost` when its model stays cached on some GPU it does not
/// occupy (it can be restored from there cheaply), otherwise `cached_elsewhere_cost` plus
/// `replicas x load_time(model size)`. A workload without a `model_id` costs
/// `cached_elsewhere_cost` (nothing to reload). Model size: `cost.model_size_gib` (x 1024 MiB)
/// when set, else the size it is cached with, else 0.
///
/// Shrinking by `dropped` replicas: the surviving replicas normally hold the model, so if any
/// replica survives and the model is cached anywhere, `cached_elsewhere_cost`; otherwise priced
/// like an eviction of `dropped` replicas.
///
/// Holds pointers to `cache` and `state`: both must outlive it and not change while a solver
/// runs. Thread-safety: const reads only.
class cache_aware_reload {
 public:
  /// The name plans and reports carry.
  static constexpr std::string_view name = "cache_aware_reload";
  /// Price of a victim whose model survives elsewhere (and of a model-less victim).
  double cached_elsewhere_cost = 0.1;

  /// Throws `std::invalid_argument` if `cache` and `state` are not over the same topology
  /// object.
  cache_aware_reload(const ModelCacheState& cache, const Allocation& state)
      : cache_(&cache), state_(&state) {
    if (&cache.topology() != &state.topology()) {
      throw std::invalid_argument("model_cache: cache_aware_reload needs the cache and the state "
                                  "over the same topology");
    }
  }

  /// See the class comment.
  [[nodiscard]] double evict(const Workload& victim) const {
    if (victim.cost.model_id.empty()) return cached_elsewhere_cost;
    if (cached_off(victim)) return cached_elsewhere_cost;
    return cached_elsewhere_cost + victim.replicas * cache_->load_time(size_mib(victim));
  }
  /// See the class comment.
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const {
    if (victim.cost.model_id.empty()) return cached_elsewhere_cost;
    const bool survivors = victim.replicas > dropped;
    if ((survivors && !cache_->devices_caching(victim.cost.model_id).empty()) || cached_off(victim)) {
      return cached_elsewhere_cost;
    }
    return cached_elsewhere_cost + dropped * cache_->load_time(size_mib(victim));
  }

 private:
  [[nodiscard]] Amount size_mib(const Workload& victim) const {
    if (victim.cost.model_size_gib > 0.0) {
      return static_cast<Amount>(std::llround(victim.cost.model_size_gib * 1024.0));
    }
    return cache_->model_size(victim.cost.model_id).value_or(0);
  }
  /// Whether the victim's model is cached on a GPU the victim does not hold.
  [[nodiscard]] bool cached_off(const Workload& victim) const {
    const auto holders = cache_->devices_caching(victim.cost.model_id);
    if (holders.empty()) return false;
    if (!state_->contains(victim.id)) return true;
    const WorkloadView view = state_->view(victim.id);
    return std::any_of(holders.begin(), holders.end(), [&](DomainId device) {
      return std::find(view.domains.begin(), view.domains.end(), device) == view.domains.end();
    });
  }

  const ModelCacheState* cache_;
  const Allocation* state_;
};

static_assert(CostModel<cache_aware_reload>);

}  // namespace topopreempt::model_cache
