// SPDX-License-Identifier: MIT
// Compass: GPU memory as a cache of models; earliest-start placement; cache-aware reload cost.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model_cache/model_cache.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"

using namespace topopreempt;
using model_cache::ModelCacheState;
using model_cache::ModelRef;
using model_cache::Task;

namespace {

constexpr double bandwidth = 1024.0;  // MiB/s: a model of k GiB loads in k seconds

std::shared_ptr<const Topology> hgx() {
  return std::make_shared<const Topology>(shapes::single_machine(shapes::hgx_h100()));
}

ModelRef gib(const std::string& id, Amount size_gib) { return {id, size_gib * 1024}; }

Task task(const std::string& name, std::vector<ModelRef> models, double duration = 0.0) {
  return Task{name, std::move(models), duration};
}

}  // namespace

TEST_SUITE("model_cache") {
  TEST_CASE("earliest start with and without cached models") {
    ModelCacheState cache(hgx(), bandwidth);
    const auto gpus = cache.workers();
    REQUIRE(gpus.size() == 8);
    CHECK(cache.capacity_mib(gpus[0]) == 81920);
    const Task t = task("chat", {gib("llama-8b", 16), gib("embed", 2)});

    // Nothing cached: 16 s + 2 s of loading after a 5 s queue.
    cache.set_queue_wait(gpus[0], 5.0);
    cache.set_ready_time(gpus[0], 50.0);
    CHECK(model_cache::earliest_start(cache, t, gpus[0], 100.0) == 100.0 + 5.0 + 18.0);
    // The big model cached: only the 2 s of the small one remain.
    cache.insert(gpus[0], gib("llama-8b", 16), 90.0);
    CHECK(model_cache::earliest_start(cache, t, gpus[0], 100.0) == 107.0);
    cache.insert(gpus[0], gib("embed", 2), 90.0);
    CHECK(model_cache::earliest_start(cache, t, gpus[0], 100.0) == 105.0);
    // A worker busy past that point decides the start.
    cache.set_ready_time(gpus[0], 200.0);
    CHECK(model_cache::earliest_start(cache, t, gpus[0], 100.0) == 200.0);
    // Models larger than the GPU together can never start there.
    const Task huge = task("huge", {gib("a", 60), gib("b", 30)});
    CHECK(std::isinf(model_cache::earliest_start(cache, huge, gpus[1], 0.0)));
    CHECK_FALSE(model_cache::place_task(cache, huge, 0.0).valid());
    // No models at all: only the queue.
    CHECK(model_cache::earliest_start(cache, task("noop", {}), gpus[2], 3.0) == 3.0);
  }

  TEST_CASE("place_task picks the earliest start; ties go to the lowest id") {
    ModelCacheState cache(hgx(), bandwidth);
    const auto gpus = cache.workers();
    const Task t = task("chat", {gib("llama-8b", 16)});
    CHECK(model_cache::place_task(cache, t, 0.0) == gpus[0]);  // all equal: lowest id
    cache.insert(gpus[5], gib("llama-8b", 16), 0.0);
    CHECK(model_cache::place_task(cache, t, 0.0) == gpus[5]);  // cached: no load
    cache.set_queue_wait(gpus[5], 20.0);                   // its queue outweighs the load
    CHECK(model_cache::place_task(cache, t, 0.0) == gpus[0]);
    cache.set_queue_wait(gpus[5], 16.0);                   // a tie: 16 s either way
    CHECK(model_cache::place_task(cache, t, 0.0) == gpus[0]);
    const std::vector<DomainId> candidates{gpus[7], gpus[5], gpus[3]};
    CHECK(model_cache::place_task(cache, t, candidates, 0.0) == gpus[3]);
    const std::vector<DomainId> reversed{gpus[3], gpus[5], gpus[7]};
    CHECK(model_cache::place_task(cache, t, reversed, 0.0) == gpus[3]);
  }

  TEST_CASE("eviction frees memory by least reload cost x recency, without superfluous victims") {
    ModelCacheState cache(hgx(), bandwidth);
    const DomainId gpu = cache.workers()[0];
    cache.insert(gpu, gib("a", 20), 0.0);   // score 20 / (1 + 100) = 0.198: goes first
    cache.insert(gpu, gib("b", 10), 90.0);  // score 10 / (1 + 10)  = 0.909: kept longest
    cache.insert(gpu, gib("c", 40), 50.0);  // score 40 / (1 + 50)  = 0.784
    CHECK(cache.free_mib(gpu) == Amount{10} * 1024);
    using names = std::vector<std::string>;
    CHECK(model_cache::choose_evictions(cache, gpu, Amount{8} * 1024, 100.0).empty());    // fits already
    CHECK(model_cache::choose_evictions(cache, gpu, Amount{30} * 1024, 100.0) == names{"a"});
    // 40 GiB: a then c are taken, but c alone covers the need, so a is put back.
    CHECK(model_cache::choose_evictions(cache, gpu, Amount{40} * 1024, 100.0) == names{"c"});
    const std::vector<std::string> keep{"c"};
    CHECK(model_cache::choose_evictions(cache, gpu, Amount{40} * 1024, 100.0, keep) == names{"a", "b"});
    CHECK_THROWS_WITH_AS((void)model_cache::choose_evictions(cache, gpu, Amount{90} * 1024, 100.0),
                         doctest::Contains("gpu0"), std::invalid_argument);

    CHECK(model_cache::evict_for(cache, gpu, gib("d", 30), 100.0) == names{"a"});
    CHECK_FALSE(cache.is_cached(gpu, "a"));
    CHECK(cache.free_mib(gpu) == Amount{30} * 1024);
    cache.insert(gpu, gib("d", 30), 100.0);
    CHECK(model_cache::evict_for(cache, gpu, gib("d", 30), 100.0).empty());  // already cached
    CHECK_THROWS_WITH_AS((void)model_cache::evict_for(cache, gpu, gib("z", 100), 100.0),
                         doctest::Contains("'z'"), std::invalid_argument);
    CHECK(cache.cached(gpu).size() == 3);  // the failed call changed nothing
  }

  TEST_CASE("dispatch loads, evicts and advances the worker") {
    ModelCacheState cache(hgx(), bandwidth);
    const DomainId gpu = cache.workers()[2];
    cache.insert(gpu, gib("old", 70), 0.0);
    const Task t = task("summarise", {gib("llama-70b", 40)}, 30.0);
    const double start = model_cache::dispatch(cache, t, gpu, 10.0);
    CHECK(start == 50.0);  // 40 s of loading
    CHECK(cache.ready_time(gpu) == 80.0);
    CHECK_FALSE(cache.is_cached(gpu, "old"));
    REQUIRE(cache.find(gpu, "llama-70b") != nullptr);
    CHECK(cache.find(gpu, "llama-70b")->last_use == 50.0);
    CHECK(cache.devices_caching("llama-70b").size() == 1);
    CHECK(cache.devices_caching("old").empty());
    // The next task with the same model starts when the worker is ready, nothing to load.
    CHECK(model_cache::earliest_start(cache, t, gpu, 60.0) == 80.0);
    const Task huge = task("huge", {gib("x", 90)});
    CHECK_THROWS_WITH_AS((void)model_cache::dispatch(cache, huge, gpu, 0.0),
                         doctest::Contains("task 'huge'"), std::invalid_argument);
  }

  TEST_CASE("cache_aware_reload prices a victim by reload time unless cached elsewhere") {
    auto topology = hgx();
    ModelCacheState cache(topology, bandwidth);
    Allocation state(topology);
    const auto gpus = cache.workers();
    Workload w;
    w.id = WorkloadId{1};
    w.name = "serve";
    w.replicas = 2;
    w.min_replicas = 1;
    w.demand.whole_devices = 1;
    w.cost.model_id = "llama-8b";
    w.cost.model_size_gib = 16.0;
    Placement placement;
    for (int r = 0; r < 2; ++r) {
      placement.replicas.push_back({{{gpus[r], topology->local_capacity(gpus[r])}}});
    }
    state.add(w, placement);
    const model_cache::cache_aware_reload model(cache, state);
    static_assert(CostModel<model_cache::cache_aware_reload>);

    // Not cached anywhere: 2 replicas x 16 s + the constant.
    CHECK(model.evict(w) == doctest::Approx(0.1 + 32.0));
    CHECK(model.shrink(w, 1) == doctest::Approx(0.1 + 16.0));
    // Cached only on its own GPUs: those go with it, so it still reloads; a shrink does not.
    cache.insert(gpus[0], gib("llama-8b", 16), 0.0);
    CHECK(model.evict(w) == doctest::Approx(32.1));
    CHECK(model.shrink(w, 1) == doctest::Approx(0.1));
    // A copy on another GPU survives the eviction.
    cache.insert(gpus[6], gib("llama-8b", 16), 0.0);
    CHECK(model.evict(w) == doctest::Approx(0.1));
    // Without a model, nothing to reload; the same model as cost::reload_time otherwise.
    Workload plain = w;
    plain.cost.model_id.clear();
    CHECK(model.evict(plain) == doctest::Approx(0.1));

    const auto other = hgx();
    Allocation elsewhere(other);
    CHECK_THROWS_AS(model_cache::cache_aware_reload(cache, elsewhere), std::invalid_argument);
  }

  TEST_CASE("errors name the offending worker, model or task") {
    auto topology = hgx();
    ModelCacheState cache(topology, bandwidth);
    const DomainId gpu = cache.workers()[0];
    const DomainId node = topology->domains_at(topology->host_level())[0];
    const Task t = task("chat", {gib("m", 1)});
    CHECK_THROWS_WITH_AS((void)model_cache::earliest_start(cache, t, node, 0.0),
                         doctest::Contains("node node0 is not a device"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)model_cache::earliest_start(cache, t, DomainId{5000}, 0.0),
                         doctest::Contains("5000"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(cache.set_queue_wait(gpu, -1.0), doctest::Contains("queue wait"),
                         std::invalid_argument);
    cache.insert(gpu, gib("m", 1), 0.0);
    CHECK_THROWS_WITH_AS(cache.insert(gpu, gib("m", 1), 0.0), doctest::Contains("already cached"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(cache.insert(cache.workers()[1], gib("m", 2), 0.0),
                         doctest::Contains("model 'm'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)model_cache::earliest_start(cache, task("bad", {gib("m", 3)}), gpu, 0.0),
                         doctest::Contains("task 'bad'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)model_cache::earliest_start(cache, task("dup", {gib("x", 1), gib("x", 1)}), gpu, 0.0),
                         doctest::Contains("'x' twice"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(cache.insert(gpu, gib("big", 80), 0.0), doctest::Contains("does not fit"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(cache.erase(gpu, "nope"), doctest::Contains("'nope'"), std::invalid_argument);
    CHECK(cache.used_mib(gpu) == 1024);  // failed calls left the cache as it was
    CHECK_THROWS_AS(ModelCacheState(topology, 0.0), std::invalid_argument);
    CHECK_THROWS_AS(ModelCacheState(nullptr), std::invalid_argument);
  }

  TEST_CASE("placement and dispatch are deterministic") {
    const auto run = [] {
      ModelCacheState cache(hgx(), bandwidth);
      std::mt19937_64 rng(3);
      std::vector<DomainId> chosen;
      double now = 0.0;
      for (int i = 0; i < 200; ++i) {
        std::vector<ModelRef> models;
        const int k = std::uniform_int_distribution<int>(0, 5)(rng);
        models.push_back(gib("m" + std::to_string(k), 4 + 6 * k));
        if (k % 2 == 0) models.push_back(gib("tok", 1));
        const Task t = task("t" + std::to_string(i), models, 5.0);
        const DomainId worker = model_cache::place_task(cache, t, now);
        chosen.push_back(worker);
        (void)model_cache::dispatch(cache, t, worker, now);
        now += std::uniform_real_distribution<double>(0.0, 3.0)(rng);
      }
      std::vector<std::vector<model_cache::CachedModel>> contents;
      for (DomainId gpu : cache.workers()) {
        contents.emplace_back(cache.cached(gpu).begin(), cache.cached(gpu).end());
        CHECK(cache.used_mib(gpu) <= cache.capacity_mib(gpu));
      }
      return std::pair{chosen, contents};
    };
    CHECK(run() == run());
  }
}
