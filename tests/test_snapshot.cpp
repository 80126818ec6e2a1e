// SPDX-License-Identifier: MIT
// Snapshot I/O: every example loads, every malformed input fails at its JSON path, save -> load
// round trips, and plans serialise with their paths.
#include <doctest/doctest.h>

// The unit-test target links nlohmann_json only where it is found; elsewhere this file is empty.
#if __has_include(<nlohmann/json.hpp>)

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "topopreempt/io/snapshot.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/knapsack.hpp"

using namespace topopreempt;
using nlohmann::json;

namespace {

std::filesystem::path snapshots_dir() {
#ifdef TOPOPREEMPT_SOURCE_DIR
  return std::filesystem::path(TOPOPREEMPT_SOURCE_DIR) / "examples" / "snapshots";
#else
  // __FILE__ is absolute under CMake; by hand, compile from the repository root.
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "examples" / "snapshots";
#endif
}

io::Snapshot load_example(const std::string& name) {
  return io::load_snapshot_file((snapshots_dir() / name).string());
}

/// A small valid document to break field by field.
json base_document() {
  return json::parse(R"({
    "format": "topopreempt-snapshot/1",
    "topology": {"cluster_of": {"shape": "rtx4090_server", "nodes": 2, "nodes_per_rack": 2}},
    "workloads": [
      {"id": 10, "name": "a", "priority": 1,
       "demand": {"whole_devices": 1, "resources": {"cpu_milli": 2000}},
       "placement": [[{"domain": "rack0/node0/socket0/numa0/gpu0"},
                      {"domain": "rack0/node0/socket0/numa0/cores0", "amount": {"cpu_milli": 2000}}]]}
    ],
    "preemptor": {"id": 1, "priority": 100, "demand": {"whole_devices": 1},
                  "replica_scope": {"mode": "guaranteed", "level": "numa"}}
  })");
}

/// The path of the `SnapshotError` that loading `document` throws ("" if it loads).
std::string error_path(const json& document) {
  try {
    (void)io::load_snapshot(document);
  } catch (const io::SnapshotError& error) {
    return error.path();
  }
  return "";
}

std::string error_message(const json& document) {
  try {
    (void)io::load_snapshot(document);
  } catch (const io::SnapshotError& error) {
    return error.message();
  }
  return "";
}

/// Same topology, same running workloads at the same placements, same preemptor.
void check_same(const io::Snapshot& a, const io::Snapshot& b) {
  CHECK(io::to_json(*a.topology) == io::to_json(*b.topology));
  REQUIRE(a.state.workload_ids() == b.state.workload_ids());
  for (WorkloadId id : a.state.workload_ids()) {
    CHECK(io::to_json(a.state.workload(id), *a.topology) ==
          io::to_json(b.state.workload(id), *b.topology));
    CHECK(a.state.placement(id) == b.state.placement(id));
  }
  for (std::uint32_t d = 0; d < a.topology->size(); ++d) {
    CHECK(a.state.used(DomainId{d}) == b.state.used(DomainId{d}));
  }
  CHECK(io::to_json(a.preemptor, *a.topology) == io::to_json(b.preemptor, *b.topology));
  CHECK(a.description == b.description);
  CHECK(a.solver == b.solver);
  CHECK(a.cost_model.has_value() == b.cost_model.has_value());
  if (a.cost_model && b.cost_model) CHECK(io::to_json(*a.cost_model) == io::to_json(*b.cost_model));
}

}  // namespace

TEST_SUITE("snapshot") {
  TEST_CASE("the example snapshots load") {
    const io::Snapshot paper = load_example("paper-server.json");
    CHECK(paper.state.size() == 16);
    CHECK(paper.topology->domains_at(paper.topology->level_index("numa")).size() == 8);
    CHECK(paper.preemptor.replica_scope == TopologyRequirement::guaranteed("numa"));
    CHECK(paper.state.workload(WorkloadId{202}).preemptible == false);
    REQUIRE(paper.cost_model);
    CHECK(io::cost_model_name(*paper.cost_model) == "priority_weighted");
    CHECK(
        paper.topology->has_affinity(paper.topology->domains_at(paper.topology->host_level())[0]));

    const io::Snapshot hgx = load_example("hgx-rack.json");
    CHECK(hgx.state.size() == 6);
    CHECK(hgx.topology->domains_at(hgx.topology->level_index("rack")).size() == 2);
    CHECK(hgx.state.workload(WorkloadId{13}).min_replicas == 1);
    CHECK(hgx.preemptor.gang_scope == TopologyRequirement::guaranteed("rack"));
    REQUIRE(hgx.solver);
    CHECK(hgx.solver->time_limit_ms == 2000);

    const io::Snapshot shares = load_example("gpu-shares.json");
    CHECK(shares.state.size() == 13);
    CHECK(shares.topology->domains_at(shares.topology->host_level()).size() == 3);
    CHECK(shares.topology->find("rack1/openb-node-0103/socket1/numa1/gpu3").has_value());
    const auto gpu0 = *shares.topology->find("rack0/openb-node-0100/socket0/numa0/gpu0");
    CHECK(shares.state.free(gpu0, 0) == 40);  // two shares, 500 + 460 milli-GPU

    const io::Snapshot infeasible = load_example("infeasible-guarantee.json");
    CHECK(infeasible.state.size() == 1);  // "auto" placement
    CHECK(infeasible.state.idle_devices(Topology::root()) == 7);
  }

  TEST_CASE("malformed example files fail at their JSON path") {
    struct Case {
      const char* file;
      const char* path;
      const char* message;
    };
    const std::vector<Case> cases{
        {"unknown-key.json", "$.workloads[1].priorty", "did you mean 'priority'"},
        {"bad-domain-path.json", "$.workloads[1].placement[0][0].domain", "has no child 'node9'"},
        {"over-capacity.json", "$.workloads[1].placement[0][0].domain", "held by workload 10"},
        {"negative-amount.json", "$.workloads[0].placement[0][1].amount.cpu_milli",
         "negative amount"},
        {"wrong-format-version.json", "$.format", "topopreempt-snapshot/1"},
        {"bad-scope-level.json", "$.preemptor.replica_scope.level", "unknown level 'nvlink'"},
        {"duplicate-id.json", "$.workloads[1].id", "already used at $.workloads[0].id"},
        {"duplicate-key.json", "$.preemptor.priority", "duplicate key"},
        {"unknown-shape.json", "$.topology.cluster_of.shape", "did you mean 'hgx_h100'"},
        {"number-overflow.json", "$.preemptor.priority", "number overflow parsing '1e388'"},
        {"trailing-slash.json", "$.workloads[0].placement[0][0].domain", "trailing '/'"},
        {"capacity-overflow.json", "$.topology.openb.nodes[4]", "total capacity in 'cpu_milli'"},
        {"too-many-domains.json", "$.topology.root.children[0].count", "10000000 domains"},
    };
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(snapshots_dir() / "invalid")) {
      files += entry.path().extension() == ".json" ? 1 : 0;
    }
    CHECK(files == cases.size());  // every invalid example is covered here
    for (const Case& c : cases) {
      CAPTURE(c.file);
      try {
        (void)load_example(std::string("invalid/") + c.file);
        FAIL("loaded without error");
      } catch (const io::SnapshotError& error) {
        CHECK(error.path() == c.path);
        CHECK(error.message().find(c.message) != std::string::npos);
        CHECK(std::string(error.what()).rfind(std::string(c.path) + ": ", 0) == 0);
      }
    }
  }

  TEST_CASE("every field is validated, with its path") {
    json doc = base_document();
    CHECK(error_path(doc).empty());

    doc = base_document();
    doc["workloads"][0].erase("priority");
    CHECK(error_path(doc) == "$.workloads[0]");
    CHECK(error_message(doc) == "missing required key 'priority'");

    doc = base_document();
    doc["workloads"][0]["priority"] = 1.5;
    CHECK(error_path(doc) == "$.workloads[0].priority");
    doc["workloads"][0]["priority"] = 4294967296LL;
    CHECK(error_path(doc) == "$.workloads[0].priority");

    doc = base_document();
    doc["workloads"][0]["demand"]["resources"]["tpu"] = 1;
    CHECK(error_path(doc) == "$.workloads[0].demand.resources.tpu");

    doc = base_document();
    doc["workloads"][0]["demand"]["resources"]["gpu_milli"] = 500;
    CHECK(error_path(doc) == "$.workloads[0].demand.resources.gpu_milli");  // with whole devices

    doc = base_document();
    doc["workloads"][0]["placement"][0][1]["domain"] = "rack0/node0/socket0/numa1/cores2";
    doc["workloads"][0]["placement"][0][1]["amount"]["gpu_milli"] = 5;
    CHECK(error_path(doc) == "$.workloads[0].placement[0][1].amount.gpu_milli");

    doc = base_document();
    doc["workloads"][0]["placement"][0][1].erase("amount");
    CHECK(error_path(doc) == "$.workloads[0].placement[0][1]");  // pooled entries need an amount

    doc = base_document();
    doc["workloads"][0]["placement"].push_back(doc["workloads"][0]["placement"][0]);
    CHECK(error_path(doc) == "$.workloads[0].placement");  // 2 replicas for a 1-replica workload

    doc = base_document();
    doc["workloads"][0]["placement"][0][1]["amount"]["cpu_milli"] = 1000;  // sums to 1000 != 2000
    CHECK(error_path(doc) == "$.workloads[0].placement");

    doc = base_document();
    doc["workloads"][0]["replica_scope"] = {{"mode", "guaranteed"}, {"level", "numa"}};
    doc["workloads"][0]["placement"][0][1]["domain"] = "rack0/node0/socket0/numa1/cores2";
    CHECK(error_path(doc) == "$.workloads[0].placement");
    CHECK(error_message(doc).find("guaranteed replica scope") != std::string::npos);

    doc = base_document();
    doc["preemptor"]["replica_scope"]["level"] = "rack";
    CHECK(error_path(doc) == "$.preemptor.replica_scope.level");  // a replica never spans hosts

    doc = base_document();
    doc["preemptor"]["gang_scope"] = {{"mode", "guaranteed"}, {"level", "gpu"}};
    CHECK(error_path(doc) == "$.preemptor.gang_scope.level");  // tighter than the replica scope

    doc = base_document();
    doc["preemptor"]["replica_scope"]["mode"] = "strict";
    CHECK(error_path(doc) == "$.preemptor.replica_scope.mode");

    doc = base_document();
    doc["preemptor"]["placement"] = "auto";
    CHECK(error_path(doc) == "$.preemptor.placement");

    doc = base_document();
    doc["preemptor"]["id"] = 10;
    CHECK(error_path(doc) == "$.preemptor.id");

    doc = base_document();
    doc["preemptor"]["min_replicas"] = 2;
    CHECK(error_path(doc) == "$.preemptor.min_replicas");

    doc = base_document();
    doc["preemptor"]["cost"] = {{"seconds_since_checkpoint", -1}};
    CHECK(error_path(doc) == "$.preemptor.cost.seconds_since_checkpoint");

    doc = base_document();
    doc["cost_model"] = {{"name", "lost_work"}, {"offset", 3}};
    CHECK(error_path(doc) == "$.cost_model.offset");
    doc["cost_model"] = "lost_wrok";
    CHECK(error_path(doc) == "$.cost_model");
    CHECK(error_message(doc).find("did you mean 'lost_work'") != std::string::npos);
    doc["cost_model"] = {{"name", "kubernetes_order"}, {"base", 1}};
    CHECK(error_path(doc) == "$.cost_model.base");

    doc = base_document();
    doc["solver"] = {{"name", "branch_and_bound"}, {"time_limit_ms", -5}};
    CHECK(error_path(doc) == "$.solver.time_limit_ms");
    doc["solver"] = "simplex";
    CHECK(error_path(doc) == "$.solver");

    doc = base_document();
    doc["topology"]["cluster_of"]["nodes"] = 0;
    CHECK(error_path(doc) == "$.topology.cluster_of.nodes");
    doc = base_document();
    doc["topology"]["levels"] = {"cluster", "node", "gpu"};
    CHECK(error_path(doc) == "$.topology.levels");  // an assertion that does not hold
    doc = base_document();
    doc["topology"]["root"] = json::object();
    CHECK(error_path(doc) == "$.topology");  // two forms at once

    doc = base_document();
    doc["workloads"][0]["placement"] = "auto";
    CHECK(error_path(doc).empty());
    doc["workloads"][0]["demand"]["whole_devices"] = 9;
    CHECK(error_path(doc) == "$.workloads[0].placement");  // no room for 9 GPUs in one node

    CHECK(error_path(json::array()) == "$");
    CHECK(error_path(json{{"format", "topopreempt-snapshot/1"}}) == "$");
  }

  TEST_CASE("text input: invalid JSON and duplicate keys") {
    try {
      (void)io::load_snapshot_text("{\"format\": \"topopreempt-snapshot/1\",}");
      FAIL("parsed");
    } catch (const io::SnapshotError& error) {
      CHECK(error.path() == "$");
      CHECK(error.message().find("invalid JSON") != std::string::npos);
    }
    try {
      (void)io::load_snapshot_text(R"({"a": [1, {"b": 1, "b": 2}]})");
      FAIL("parsed");
    } catch (const io::SnapshotError& error) {
      CHECK(error.path() == "$.a[1].b");
    }
    CHECK_THROWS_AS((void)io::load_snapshot_file("/nonexistent/snapshot.json"), io::SnapshotError);
  }

  TEST_CASE("nested topology with counts, affinity and a custom schema") {
    json doc = base_document();
    doc["workloads"] = json::array();
    doc["preemptor"] = {{"id", 1}, {"priority", 5}, {"demand", {{"whole_devices", 2}}}};
    doc["topology"] = json::parse(R"({
      "schema": [{"name": "gpu", "kind": "device"}, {"name": "cpu", "kind": "pooled"}],
      "levels": ["cluster", "node", "island", "gpu"],
      "device_level": "gpu", "host_level": "node",
      "root": {"name": "lab", "children": [
        {"level": "node", "name": "box", "count": 3, "capacity": {"cpu": 64},
         "affinity": [[0, 9, 1, 1], [9, 0, 1, 1], [1, 1, 0, 9], [1, 1, 9, 0]],
         "children": [{"level": "island", "name": "nvl", "count": 2,
                       "children": [{"level": "gpu", "name": "g", "count": 2, "capacity": {"gpu": 1}}]}]}
      ]}
    })");
    const io::Snapshot snapshot = io::load_snapshot(doc);
    const Topology& topology = *snapshot.topology;
    CHECK(topology.size() == 1 + 3 * (1 + 2 * (1 + 2)));
    const auto g = *topology.find("box2/nvl1/g0");
    const auto h = *topology.find("box2/nvl1/g1");
    CHECK(*topology.device_affinity(g, h) == 9.0);
    CHECK_FALSE(topology.device_affinity(*topology.find("box0/nvl0/g0"), g).has_value());
    CHECK(topology.capacity(Topology::root())(1) == 192);

    doc["topology"]["root"]["children"][0]["affinity"][0][1] = 8;
    CHECK(error_path(doc) == "$.topology.root.children[0].affinity[1][0]");
    doc["topology"]["root"]["children"][0]["affinity"] = {{1}};
    CHECK(error_path(doc) == "$.topology.root.children[0].affinity");
    doc["topology"]["root"]["children"][0].erase("affinity");
    doc["topology"]["root"]["children"][0]["children"][0]["capacity"] = {{"cpu", 4}};
    CHECK(error_path(doc).empty());  // islands may hold pooled capacity
    doc["topology"]["root"]["children"][0]["children"][0]["capacity"] = {{"gpu", 4}};
    CHECK(error_path(doc) == "$.topology.root.children[0].children[0].capacity.gpu");
    doc["topology"]["root"]["children"][0]["children"][0].erase("capacity");
    doc["topology"]["root"]["children"][0]["children"][0]["level"] = "node";
    CHECK(error_path(doc) == "$.topology.root.children[0].children[0].level");
    doc["topology"]["root"]["children"][0]["children"][0]["level"] = "island";
    doc["topology"]["root"]["children"].push_back({{"level", "node"}, {"name", "box1"}});
    CHECK(error_path(doc) == "$.topology.root.children[1].name");  // box1 exists via count
    doc["topology"]["root"]["children"][1]["name"] = "a/b";
    CHECK(error_path(doc) == "$.topology.root.children[1].name");
  }

  TEST_CASE("custom cluster_of shape and openb rows") {
    json doc = base_document();
    doc["workloads"] = json::array();
    doc["topology"] = json::parse(R"({"cluster_of": {"nodes": 4, "nodes_per_rack": 2, "shape": {
      "model": "tiny", "levels": ["node", "numa", "gpu"],
      "root": {"level": "node", "name": "n", "children": [
        {"level": "numa", "name": "numa", "count": 2, "capacity": {"cpu_milli": 8000},
         "children": [{"level": "gpu", "name": "gpu", "count": 2,
                       "capacity": {"gpu_milli": 1000, "gpu_memory_mib": 16384}}]}],
        "affinity": [[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 2], [1, 1, 2, 0]]}}}})");
    const io::Snapshot snapshot = io::load_snapshot(doc);
    CHECK(snapshot.topology->levels() ==
          std::vector<std::string>{"cluster", "rack", "node", "numa", "gpu"});
    CHECK(snapshot.topology->find("rack1/node3/numa1/gpu1").has_value());
    CHECK(snapshot.topology->has_affinity(*snapshot.topology->find("rack1/node3")));
    CHECK(snapshot.topology->device_count(Topology::root()) == 16);

    doc["topology"]["cluster_of"]["shape"]["levels"] = {"node", "numa", "accel"};
    CHECK(error_path(doc) == "$.topology.cluster_of.shape.levels");

    doc["topology"] = json::parse(R"({"openb": {"nodes": [
      {"sn": "n0", "cpu_milli": 64000, "memory_mib": 262144, "gpu": 2, "model": "P100"},
      ["n1", 96000, 393216, 8, "G2"], ["cpu0", 32000, 65536, 0, ""]], "nodes_per_rack": 2}})");
    const io::Snapshot openb = io::load_snapshot(doc);
    CHECK(openb.topology->device_count(Topology::root()) == 10);
    CHECK(openb.topology->find("rack1/cpu0").has_value());
    doc["topology"]["openb"]["nodes"][1][4] = "G4";
    CHECK(error_path(doc) == "$.topology.openb.nodes[1][4]");
    doc["topology"]["openb"]["nodes"][1][4] = "G2";
    doc["topology"]["openb"]["nodes"][0]["gpus"] = 2;
    CHECK(error_path(doc) == "$.topology.openb.nodes[0].gpus");
  }

  TEST_CASE("save -> load reproduces the snapshot") {
    for (const char* name :
         {"paper-server.json", "hgx-rack.json", "gpu-shares.json", "infeasible-guarantee.json"}) {
      CAPTURE(name);
      const io::Snapshot original = load_example(name);
      const json saved = io::save_snapshot(original);
      CHECK(saved["format"] == "topopreempt-snapshot/1");
      CHECK(saved["topology"].contains("root"));  // always written in the nested form
      const io::Snapshot reloaded = io::load_snapshot(saved);
      check_same(original, reloaded);
      CHECK(io::save_snapshot(reloaded) == saved);  // a fixed point: deterministic output
      CHECK(io::load_snapshot_text(saved.dump(2)).state.size() == original.state.size());
    }
    const auto file =
        std::filesystem::temp_directory_path() / "topopreempt_snapshot_roundtrip.json";
    const io::Snapshot hgx = load_example("hgx-rack.json");
    io::save_snapshot_file(hgx, file.string());
    check_same(hgx, io::load_snapshot_file(file.string()));
    std::filesystem::remove(file);
  }

  TEST_CASE("distinct_hosts: read, written back, and checked with its path") {
    json doc = base_document();
    doc["preemptor"]["replicas"] = 2;
    doc["preemptor"]["distinct_hosts"] = true;
    const io::Snapshot loaded = io::load_snapshot(doc);
    CHECK(loaded.preemptor.distinct_hosts);
    const json saved = io::save_snapshot(loaded);
    CHECK(saved["preemptor"]["distinct_hosts"] == true);
    CHECK_FALSE(saved["workloads"][0].contains("distinct_hosts"));  // the default is left out
    CHECK(io::load_snapshot(saved).preemptor.distinct_hosts);

    doc["preemptor"]["distinct_hosts"] = "yes";
    CHECK(error_path(doc) == "$.preemptor.distinct_hosts");
    doc["preemptor"]["distinct_hosts"] = true;
    doc["preemptor"]["gang_scope"] = {{"mode", "guaranteed"}, {"level", "node"}};
    CHECK(error_path(doc) == "$.preemptor.distinct_hosts");
    CHECK(error_message(doc).find("distinct hosts cannot share one 'node'") != std::string::npos);

    // A running gang on one node that asks for distinct hosts is refused at load.
    doc = base_document();
    json& running = doc["workloads"][0];
    running["replicas"] = 2;
    running["distinct_hosts"] = true;
    running["placement"].push_back(json::parse(R"([{"domain": "rack0/node0/socket0/numa1/gpu1"},
                        {"domain": "rack0/node0/socket0/numa1/cores2", "amount": {"cpu_milli": 2000}}])"));
    CHECK(error_path(doc).starts_with("$.workloads[0]"));
    CHECK(error_message(doc).find("distinct_hosts") != std::string::npos);
    running["distinct_hosts"] = false;
    CHECK(error_path(doc).empty());
  }

  TEST_CASE("a plan as JSON") {
    const io::Snapshot paper = load_example("paper-server.json");
    const PreemptionPlan plan =
        io::visit_cost_model(*paper.cost_model, paper.state, [&](const auto& model) {
          return solvers::branch_and_bound.solve(paper.state, paper.preemptor, model);
        });
    const json out = io::to_json(plan, paper.state);
    CHECK(out["format"] == "topopreempt-plan/1");
    CHECK(out["solver"] == "branch_and_bound");
    CHECK(out["status"] == "optimal");
    CHECK(out["gap"] == 0.0);
    CHECK(out["topology_satisfied"] == true);
    // The example is built so that NUMA node 3 is the unique cheapest (priorities 14 + 9).
    REQUIRE(out["victims"].size() == 2);
    CHECK(out["victims"][0]["id"] == 103);
    CHECK(out["victims"][0]["name"] == "gpu-infer-3");
    CHECK(out["victims"][0]["action"] == "evict");
    CHECK(out["victims"][1]["id"] == 203);
    CHECK(out["victims"][1]["priority"] == 9);
    CHECK(out["target_level"] == "numa");
    CHECK(out["target_domain"].get<std::string>().rfind("rack0/node0/socket0/numa3", 0) == 0);
    const std::string device = out["placement"][0][0]["domain"];
    CHECK(device == "rack0/node0/socket0/numa3/gpu3");
    CHECK(out["placement"][0][0]["amount"]["gpu_milli"] == 1000);
    CHECK(out["cost"].get<double>() == doctest::Approx(plan.cost));
    CHECK(out["statistics"].contains("nodes_explored"));
    CHECK(!out["explanation"].get<std::string>().empty());
    // What commit checks: the preemptor and the dependency versions, as hex text.
    CHECK(out["preemptor"] == paper.preemptor.id.value);
    REQUIRE(out["dependencies"].size() == plan.dependencies.size());
    REQUIRE_FALSE(plan.dependencies.empty());
    CHECK(out["dependencies"][0]["domain"] == paper.topology->path(plan.dependencies[0].domain));
    CHECK(std::stoull(out["dependencies"][0]["version"].get<std::string>(), nullptr, 16) ==
          plan.dependencies[0].version);
    // Without the state, victims keep ids but not names.
    const json bare = io::to_json(plan, *paper.topology);
    CHECK_FALSE(bare["victims"][0].contains("name"));
    CHECK(bare["victims"][0]["id"] == 103);

    CHECK(out["downgrades"].is_array());
    CHECK(out["downgrades"].empty());
    // Knapsack over its cell limit says so in a structured field (issue 11 #14).
    const PreemptionPlan capped =
        io::visit_cost_model(*paper.cost_model, paper.state, [&](const auto& model) {
          return solvers::knapsack_solver{}.max_cells(1).solve(paper.state, paper.preemptor, model);
        });
    const json downgraded = io::to_json(capped, paper.state);
    REQUIRE_FALSE(downgraded["downgrades"].empty());
    int cell_limits = 0;
    for (const json& item : downgraded["downgrades"]) {
      CHECK(item["domain"].is_string());
      CHECK(!item["detail"].get<std::string>().empty());
      cell_limits += item["reason"] == "cell_limit" ? 1 : 0;
    }
    CHECK(cell_limits >= 1);

    PreemptionPlan empty;  // infeasible, no target
    const json none = io::to_json(empty, *paper.topology);
    CHECK(none["status"] == "infeasible");
    CHECK(none["target_domain"].is_null());
    CHECK(none["placement"].empty());
  }

  TEST_CASE("cost model specs") {
    const io::Snapshot hgx = load_example("hgx-rack.json");
    REQUIRE(hgx.cost_model);
    CHECK(std::get<cost::lost_work>(*hgx.cost_model).floor == 60.0);
    CHECK(io::to_json(*hgx.cost_model) == json{{"name", "lost_work"}, {"floor", 60.0}});
    for (std::string_view name : io::cost_model_names) {
      const auto spec = io::make_cost_model(name);
      REQUIRE(spec);
      CHECK(io::cost_model_name(*spec) == name);
      CHECK(io::to_json(*spec) == std::string(name));
      const double price = io::visit_cost_model(*spec, hgx.state, [&](const auto& model) {
        return model.evict(hgx.state.workload(WorkloadId{11}));
      });
      CHECK(price > 0.0);
    }
    CHECK_FALSE(io::make_cost_model("nope"));
  }
}

#endif  // __has_include(<nlohmann/json.hpp>)
