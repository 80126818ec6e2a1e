// SPDX-License-Identifier: MIT
// Issue 11, loader items: hostile snapshots fail as `SnapshotError` with a JSON path (never a
// foreign exception), and every loader limit holds exactly, tested just under and just over.
#include <doctest/doctest.h>

// The unit-test target links nlohmann_json only where it is found; elsewhere this file is empty.
#if __has_include(<nlohmann/json.hpp>)

#include <cstdint>
#include <exception>
#include <limits>
#include <string>

#include "topopreempt/io/snapshot.hpp"
#include "topopreempt/model/topology.hpp"

using namespace topopreempt;
using nlohmann::json;

namespace {

/// What loading threw: "ok", "path: message" for a SnapshotError, or "FOREIGN: what" for any
/// other exception (which the loader promises never to let escape).
struct Outcome {
  bool loaded = false;
  bool foreign = false;
  std::string path;
  std::string message;
};

template <class Load>
Outcome outcome_of(Load&& load) {
  Outcome outcome;
  try {
    (void)load();
    outcome.loaded = true;
  } catch (const io::SnapshotError& error) {
    outcome.path = error.path();
    outcome.message = error.message();
  } catch (const std::exception& error) {
    outcome.foreign = true;
    outcome.message = error.what();
  }
  return outcome;
}

Outcome load_json(const json& document) {
  return outcome_of([&] { return io::load_snapshot(document); });
}

Outcome load_text(const std::string& text) {
  return outcome_of([&] { return io::load_snapshot_text(text); });
}

bool mentions(const Outcome& outcome, const std::string& text) {
  return outcome.message.find(text) != std::string::npos;
}

json empty_preemptor() { return {{"id", 1}, {"priority", 5}, {"demand", {{"whole_devices", 1}}}}; }

/// A snapshot around `topology` with no workloads.
json snapshot_of(json topology) {
  return {{"format", "topopreempt-snapshot/1"},
          {"topology", std::move(topology)},
          {"workloads", json::array()},
          {"preemptor", empty_preemptor()}};
}

/// A nested topology: cluster > node (count `nodes`) > gpu (count `gpus`).
json nested(std::int64_t nodes, std::int64_t gpus) {
  return {{"levels", {"cluster", "node", "gpu"}},
          {"device_level", "gpu"},
          {"host_level", "node"},
          {"root",
           {{"children",
             {{{"level", "node"},
               {"name", "node"},
               {"count", nodes},
               {"capacity", {{"cpu_milli", 1000}}},
               {"children",
                {{{"level", "gpu"},
                  {"name", "gpu"},
                  {"count", gpus},
                  {"capacity", {{"gpu_milli", 1000}}}}}}}}}}}};
}

constexpr Amount huge_amount = std::numeric_limits<Amount>::max() / 4;

}  // namespace

TEST_SUITE("hardening_loader") {
  TEST_CASE("a number beyond double fails at its path, not as nlohmann's out_of_range") {
    const Outcome outcome = load_text(
        R"({"format": "topopreempt-snapshot/1", "workloads": [{"id": 1, "priority": 1e388}]})");
    REQUIRE_FALSE(outcome.foreign);
    CHECK(outcome.path == "$.workloads[0].priority");
    CHECK(mentions(outcome, "1e388"));
    const Outcome top = load_text("1e388");
    REQUIRE_FALSE(top.foreign);
    CHECK(top.path == "$");
  }

  TEST_CASE("\"placement\": \"auto\" never leaks std::invalid_argument") {
    // The trigger of issue 11: a device-less replica guaranteed below the level of its pools.
    json doc = snapshot_of({{"cluster_of", {{"shape", "hgx_h100"}, {"nodes", 1}}}});
    doc["workloads"] =
        json::array({json{{"id", 7},
                          {"priority", 1},
                          {"demand", {{"resources", {{"cpu_milli", 1000}}}}},
                          {"replica_scope", {{"mode", "guaranteed"}, {"level", "pcie_switch"}}},
                          {"placement", "auto"}}});
    const Outcome outcome = load_json(doc);
    CHECK_FALSE(outcome.foreign);
    if (!outcome.loaded) CHECK(outcome.path == "$.workloads[0].placement");
  }

  TEST_CASE("capacity totals beyond int64 fail at their path in every topology form") {
    SUBCASE("nested") {
      json topology = nested(8, 1);
      topology["root"]["children"][0]["capacity"]["cpu_milli"] = huge_amount;
      const Outcome outcome = load_json(snapshot_of(topology));
      REQUIRE_FALSE(outcome.foreign);
      CHECK(outcome.path == "$.topology.root");
      CHECK(mentions(outcome, "cpu_milli"));
      topology["root"]["children"][0]["count"] = 4;  // 4 x max/4 still fits
      CHECK(load_json(snapshot_of(topology)).loaded);
    }
    SUBCASE("cluster_of with a custom shape") {
      const json shape = {
          {"levels", {"node", "gpu"}},
          {"root",
           {{"level", "node"},
            {"capacity", {{"cpu_milli", huge_amount}}},
            {"children",
             {{{"level", "gpu"}, {"name", "gpu0"}, {"capacity", {{"gpu_milli", 1000}}}}}}}}};
      const Outcome outcome =
          load_json(snapshot_of({{"cluster_of", {{"shape", shape}, {"nodes", 5}}}}));
      REQUIRE_FALSE(outcome.foreign);
      CHECK(outcome.path == "$.topology.cluster_of.nodes");
      CHECK(load_json(snapshot_of({{"cluster_of", {{"shape", shape}, {"nodes", 4}}}})).loaded);
    }
    SUBCASE("openb") {
      json nodes = json::array();
      for (int i = 0; i < 5; ++i) {
        nodes.push_back({"n" + std::to_string(i), huge_amount, 0, 0, ""});
      }
      const Outcome outcome = load_json(snapshot_of({{"openb", {{"nodes", nodes}}}}));
      REQUIRE_FALSE(outcome.foreign);
      CHECK(outcome.path == "$.topology.openb.nodes[4]");
      CHECK(mentions(outcome, "cpu_milli"));
      nodes.erase(4);
      json doc = snapshot_of({{"openb", {{"nodes", nodes}}}});
      doc["preemptor"]["demand"] = {{"resources", {{"cpu_milli", 1}}}};
      CHECK(load_json(doc).loaded);
    }
  }

  TEST_CASE("a domain path with a trailing, leading or doubled '/' names nothing") {
    json doc = snapshot_of({{"cluster_of", {{"shape", "hgx_h100"}, {"nodes", 1}}}});
    for (const std::string path :
         {"rack0/node0/socket0/numa0/pcie0/gpu0/", "/rack0/node0/socket0/numa0/pcie0/gpu0",
          "rack0//node0/socket0/numa0/pcie0/gpu0"}) {
      CAPTURE(path);
      doc["workloads"] = json::array({json{{"id", 7},
                                           {"priority", 1},
                                           {"demand", {{"whole_devices", 1}}},
                                           {"placement", {{{{"domain", path}}}}}}});
      const Outcome outcome = load_json(doc);
      REQUIRE_FALSE(outcome.foreign);
      CHECK(outcome.path == "$.workloads[0].placement[0][0].domain");
    }
    const Topology topology = shapes::single_machine(shapes::hgx_h100());
    CHECK(topology.find("node0/socket0").has_value());
    CHECK_FALSE(topology.find("node0/socket0/").has_value());
    CHECK_FALSE(topology.find("/node0").has_value());
  }

  TEST_CASE("the domain cap is exact in the nested form, checked before building") {
    // cluster + N nodes x (1 + G gpus): N = 10, G = 999,999 gives exactly 10,000,001.
    const Outcome over = load_json(snapshot_of(nested(10, 999'999)));
    REQUIRE_FALSE(over.foreign);
    CHECK(over.path == "$.topology.root.children[0].count");
    CHECK(mentions(over, "10000000"));
    // Just under: 1 + 9 x (1 + 999,999) + ... parsed (not built) to exactly 10,000,000.
    json topology = nested(9, 999'999);
    topology["root"]["children"].push_back(
        {{"level", "node"},
         {"name", "spare"},
         {"capacity", {{"cpu_milli", 1}}},
         {"children", {{{"level", "gpu"}, {"name", "gpu"}, {"count", 999'998}}}}});
    const io::detail::DomainContext context{
        {"cluster", "node", "gpu"}, ResourceSchema::standard(), 2, 1, false};
    const io::detail::ParsedDomain root =
        io::detail::parse_domain(topology["root"], "$.topology.root", context, std::nullopt);
    CHECK(root.domains == io::max_snapshot_domains);
    // One more GPU tips it over, at that count.
    topology["root"]["children"][1]["children"][0]["count"] = 999'999;
    const Outcome tipped = load_json(snapshot_of(topology));
    CHECK(tipped.path == "$.topology.root.children[1]");
  }

  TEST_CASE("the domain cap counts racks in cluster_of") {
    // A 10-domain shape: node + 9 gpus. 1 + racks + 10 x 999,999 = 9,999,991 + racks.
    json gpus = json::array();
    for (int g = 0; g < 9; ++g) {
      gpus.push_back({{"level", "gpu"}, {"name", "gpu" + std::to_string(g)}});
    }
    const json shape = {{"levels", {"node", "gpu"}},
                        {"root", {{"level", "node"}, {"children", gpus}}}};
    const auto cluster_of = [&](std::int64_t per_rack) {
      return snapshot_of(
          {{"cluster_of", {{"shape", shape}, {"nodes", 999'999}, {"nodes_per_rack", per_rack}}}});
    };
    // 10 racks: 10,000,001 domains (the old check, without racks, said 9,999,991).
    const Outcome over = load_json(cluster_of(111'110));
    REQUIRE_FALSE(over.foreign);
    CHECK(over.path == "$.topology.cluster_of.nodes");
    // 9 racks: exactly 10,000,000 (counted, not built: building it takes gigabytes).
    CHECK(io::detail::cluster_domains(10 * 999'999, 999'999, 111'111, false) ==
          io::max_snapshot_domains);
    CHECK_FALSE(io::detail::cluster_domains(10 * 999'999, 999'999, 111'110, false).has_value());
  }

  TEST_CASE("the domain cap is checked in openb") {
    // An 8-GPU openb node is 15 domains (node, 2 sockets, 4 NUMA nodes, 8 GPUs).
    CHECK(io::detail::shape_domains(shapes::openb_node("T4", 8, 0, 0).root) == 15);
    // 1 cluster + 1 rack + 15 x 666,665 = 9,999,977; adding 1-domain nodes (gpu 0, one socket
    // and NUMA node: 3 domains) reaches the cap: 7 more are 21 -> 9,999,998; 8 more 10,000,001.
    // Written as text: building 666,673 nlohmann values one by one is slow in debug builds.
    std::string text = R"({"format": "topopreempt-snapshot/1", "workloads": [],
        "preemptor": {"id": 1, "priority": 5, "demand": {"whole_devices": 1}},
        "topology": {"openb": {"nodes": [)";
    for (int i = 0; i < 666'665; ++i) text += "[\"n" + std::to_string(i) + "\",0,0,8,\"T4\"],";
    for (int i = 0; i < 8; ++i) text += "[\"s" + std::to_string(i) + "\",0,0,0,\"\"],";
    text.back() = ']';
    text += "}}}";
    const Outcome over = load_text(text);
    REQUIRE_FALSE(over.foreign);
    CHECK(over.path == "$.topology.openb.nodes[666672]");
    CHECK(mentions(over, "10000000"));
  }

  TEST_CASE("nesting depth: 256 levels parse, 257 fail at the deepest path") {
    const auto nested_description = [](std::size_t depth) {
      return R"({"format": "topopreempt-snapshot/1", "description": )" + std::string(depth, '[') +
             std::string(depth, ']') + "}";
    };
    // The document itself is one level: 255 more arrays are 256 in all.
    const Outcome under = load_text(nested_description(io::max_snapshot_depth - 1));
    CHECK(under.path == "$.description");
    CHECK(mentions(under, "must be a string"));
    const Outcome over = load_text(nested_description(io::max_snapshot_depth));
    REQUIRE_FALSE(over.foreign);
    CHECK(mentions(over, "nesting deeper than 256"));
    CHECK(over.path.rfind("$.description[0][0]", 0) == 0);
    // 100,000 brackets fail at the same depth with O(depth) memory, not O(depth^2).
    CHECK(mentions(load_text(std::string(100'000, '[')), "nesting deeper than 256"));
  }

  TEST_CASE("input size: at most max_snapshot_bytes of text") {
    const std::string document = R"({"format": "topopreempt-snapshot/1"})";
    std::string text = document + std::string(io::max_snapshot_bytes - document.size(), ' ');
    const Outcome under = load_text(text);
    CHECK(under.path == "$");
    CHECK(mentions(under, "missing required key 'topology'"));
    text.push_back(' ');
    const Outcome over = load_text(text);
    CHECK(over.path == "$");
    CHECK(mentions(over, "at most 67108864"));
  }

  TEST_CASE("affinity matrices: at most 4096 devices per host, checked before reading") {
    json topology = nested(1, 4097);
    topology["root"]["children"][0]["affinity"] = json::array();
    const Outcome over = load_json(snapshot_of(topology));
    CHECK(over.path == "$.topology.root.children[0].affinity");
    CHECK(mentions(over, "limited to 4096 devices"));
    topology["root"]["children"][0]["children"][0]["count"] = 4096;
    const Outcome under = load_json(snapshot_of(topology));
    CHECK(under.path == "$.topology.root.children[0].affinity");
    CHECK(mentions(under, "must be a 4096x4096 matrix"));
  }

  TEST_CASE("one affinity matrix serves every copy of a counted host") {
    json topology = nested(2000, 4);
    topology["root"]["children"][0]["affinity"] = {
        {0, 2, 1, 1}, {2, 0, 1, 1}, {1, 1, 0, 2}, {1, 1, 2, 0}};
    json doc = snapshot_of(topology);
    const io::Snapshot snapshot = io::load_snapshot(doc);
    const Topology& built = *snapshot.topology;
    const DomainId host = *built.find("node1999");
    const auto devices = built.domains_at(built.device_level(), host);
    REQUIRE(devices.size() == 4);
    CHECK(built.device_affinity(devices[0], devices[1]) == 2.0);
    CHECK(built.device_affinity(devices[1], devices[2]) == 1.0);
  }

  TEST_CASE("sibling names: clashes between counted and named domains keep their path") {
    json topology = nested(2, 2);
    topology["root"]["children"].push_back(
        {{"level", "node"}, {"name", "node1"}, {"capacity", {{"cpu_milli", 1}}}});
    const Outcome outcome = load_json(snapshot_of(topology));
    REQUIRE_FALSE(outcome.foreign);
    CHECK(outcome.path == "$.topology.root.children[1].name");
    CHECK(mentions(outcome, "already exists"));
  }

  TEST_CASE("a root named after a level name that is no domain name fails at the root") {
    // Found by the snapshot fuzzer: the root took the name 'c/uster' unchecked, and the saved
    // snapshot then failed to load again.
    json topology = nested(2, 2);
    topology["levels"][0] = "c/uster";
    const Outcome outcome = load_json(snapshot_of(topology));
    REQUIRE_FALSE(outcome.foreign);
    REQUIRE_FALSE(outcome.loaded);
    CHECK(outcome.path == "$.topology.root");
    CHECK(mentions(outcome, "give the root a name"));
    topology["root"]["name"] = "cluster";  // named explicitly, the same levels load
    CHECK(load_json(snapshot_of(topology)).loaded);
    CHECK_THROWS_WITH_AS(TopologyBuilder({"cluster", "node", "gpu"}, ResourceSchema::standard(),
                                         "gpu", "node", "a/b"),
                         doctest::Contains("root domain name 'a/b'"), std::invalid_argument);
    CHECK_THROWS_AS(
        TopologyBuilder({"cluster", "node", "gpu"}, ResourceSchema::standard(), "gpu", "node", ""),
        std::invalid_argument);
  }

  TEST_CASE("TopologyBuilder rejects duplicate siblings and keeps its state") {
    TopologyBuilder builder({"cluster", "node", "gpu"}, ResourceSchema::standard(), "gpu", "node");
    const auto a = builder.add(TopologyBuilder::root(), "node", "a");
    const auto b = builder.add(TopologyBuilder::root(), "node", "b");
    (void)builder.add(a, "gpu", "g", ResourceSchema::standard().zeros());
    (void)builder.add(b, "gpu", "g", ResourceSchema::standard().zeros());  // other parent: fine
    CHECK_THROWS_AS((void)builder.add(TopologyBuilder::root(), "node", "a"), std::invalid_argument);
    CHECK(builder.size() == 5);
    const Topology topology = builder.build();
    CHECK(topology.find("b/g").has_value());
  }

  TEST_CASE("solver time limits beyond max_time_limit_ms are errors") {
    json doc = snapshot_of({{"cluster_of", {{"shape", "hgx_h100"}, {"nodes", 1}}}});
    doc["solver"] = {{"name", "branch_and_bound"}, {"time_limit_ms", io::max_time_limit_ms}};
    CHECK(load_json(doc).loaded);
    doc["solver"]["time_limit_ms"] = io::max_time_limit_ms + 1;
    CHECK(load_json(doc).path == "$.solver.time_limit_ms");
  }
}

#endif
