// SPDX-License-Identifier: MIT
#pragma once
/// @file snapshot_reader.hpp
/// Loading snapshots: `load_snapshot` (a parsed document), `load_snapshot_text` (duplicate keys
/// refused, parse errors given a JSON path) and `load_snapshot_file`. Every field is validated;
/// unknown keys are errors. Part of the JSON I/O (`io/snapshot.hpp`); needs nlohmann_json.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "topopreempt/io/detail/topology_reading.hpp"
#include "topopreempt/io/detail/workload_reading.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt::io {

namespace detail {

/// `load_snapshot` without its backstop.
[[nodiscard]] inline Snapshot read_snapshot(const nlohmann::json& document) {
  using detail::ObjectReader;
  const std::string root = "$";
  if (!document.is_object()) fail(root, "a snapshot must be a JSON object");
  // The version is checked before anything else: another version's keys would only confuse.
  const auto format = document.find("format");
  if (format == document.end()) {
    fail(root, "missing required key 'format' (expected \"" + std::string(snapshot_format) + "\")");
  }
  if (!format->is_string() || format->get<std::string>() != snapshot_format) {
    fail("$.format", "unsupported format " + detail::describe_value(*format) +
                         "; this reader understands \"" + std::string(snapshot_format) + "\"");
  }
  const ObjectReader object(
      document, root,
      {"format", "description", "topology", "workloads", "preemptor", "cost_model", "solver"});
  std::string description;
  if (const auto* v = object.optional("description"))
    description = detail::read_string(*v, object.at("description"));
  std::shared_ptr<const Topology> topology =
      detail::read_topology(object.required("topology"), object.at("topology"));
  Allocation state(topology);

  const nlohmann::json& workloads = object.required("workloads");
  const std::string workloads_path = object.at("workloads");
  if (!workloads.is_array()) fail(workloads_path, "must be an array of running workloads");
  std::unordered_map<std::uint64_t, std::string> ids;  // id -> path of its "id" (hashed: O(n))
  const auto claim_id = [&](WorkloadId id, const std::string& at) {
    const auto [it, fresh] = ids.try_emplace(id.value, at);
    if (!fresh) fail(at, "id " + std::to_string(id.value) + " is already used at " + it->second);
  };
  detail::DomainPaths paths(*topology);
  std::vector<std::pair<Workload, std::string>> automatic;  // placed after every explicit one
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const ObjectReader entry(workloads[i], detail::index_path(workloads_path, i),
                             {detail::workload_keys.begin(), detail::workload_keys.end()});
    Workload workload = detail::read_workload(entry, *topology);
    claim_id(workload.id, entry.at("id"));
    const nlohmann::json& placement_value = entry.required("placement");
    if (placement_value.is_string()) {
      if (placement_value.get<std::string>() != "auto") {
        fail(entry.at("placement"), "must be an array of replicas or \"auto\"");
      }
      automatic.emplace_back(std::move(workload), entry.at("placement"));
      continue;
    }
    const Placement placement =
        detail::read_placement(placement_value, entry.at("placement"), workload, state, paths);
    try {
      state.add(std::move(workload), placement);
    } catch (const std::invalid_argument& error) {
      fail(entry.at("placement"), error.what());  // replica shape or broken guarantee
    }
  }
  for (auto& [workload, at] : automatic) {
    const PlacementSearchResult found = find_placement(state, workload);
    if (!found.found)
      fail(at, "no placement for " + workload.label() + " on the cluster as it stands");
    try {
      state.add(std::move(workload), found.placement);
    } catch (const std::invalid_argument& error) {
      // The search and Allocation::add disagree on this requirement: report it, never leak it.
      fail(at, std::string("the automatic placement was refused: ") + error.what());
    }
  }

  const ObjectReader preemptor_object(
      object.required("preemptor"), object.at("preemptor"),
      {detail::preemptor_keys.begin(), detail::preemptor_keys.end()});
  Workload preemptor = detail::read_workload(preemptor_object, *topology);
  claim_id(preemptor.id, preemptor_object.at("id"));

  std::optional<CostModelSpec> cost_model;
  if (const auto* v = object.optional("cost_model"))
    cost_model = detail::read_cost_model(*v, object.at("cost_model"));
  if (cost_model) {
    if (const auto* k = std::get_if<KubernetesOrderSpec>(&*cost_model)) {
      try {
        (void)cost::kubernetes_order::of(state, k->base);
      } catch (const std::invalid_argument& error) {
        fail(object.at("cost_model"), error.what());
      }
    }
  }
  std::optional<SolverSpec> solver;
  if (const auto* v = object.optional("solver"))
    solver = detail::read_solver(*v, object.at("solver"));
  return Snapshot{std::move(description), std::move(topology),   std::move(state),
                  std::move(preemptor),   std::move(cost_model), std::move(solver)};
}

}  // namespace detail

/// Reads a snapshot document (see docs/snapshot-format.md). Every field is validated; unknown
/// keys are errors. Throws `SnapshotError` with the JSON path of the first problem.
/// Running workloads with explicit placements are added in document order; those with
/// `"placement": "auto"` are then placed by `find_placement`, in document order.
[[nodiscard]] inline Snapshot load_snapshot(const nlohmann::json& document) {
  try {
    return detail::read_snapshot(document);
  } catch (const SnapshotError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& error) {
    // Every rule has its own check with a precise path; a library error that still escapes
    // them must not leave as a foreign exception without a path.
    detail::fail("$", std::string("the snapshot was refused: ") + error.what());
  }
}

namespace detail {

/// What the parser callback knows about the value being read: one frame per open object or
/// array, holding only its current key or index (O(depth) memory; paths are built on error).
struct ParseTrail {
  struct Frame {
    bool array = false;
    std::size_t index = 0;
    std::string key;
    std::unordered_set<std::string> keys;  ///< keys seen so far in this object
  };
  std::vector<Frame> frames;

  /// The JSON path of the value the parser is reading (or has just read) inside the innermost
  /// open container; "$" outside of any.
  [[nodiscard]] std::string current_path() const {
    std::string path = "$";
    for (const Frame& frame : frames) {
      path = frame.array ? index_path(path, frame.index) : key_path(path, frame.key);
    }
    return path;
  }
  /// The path of the innermost open container itself.
  [[nodiscard]] std::string container_path() const {
    std::string path = "$";
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
      const Frame& frame = frames[i];
      path = frame.array ? index_path(path, frame.index) : key_path(path, frame.key);
    }
    return path;
  }
};

/// Parser callback that rejects duplicate keys (plain parsing silently keeps the last one) and
/// nesting deeper than `max_snapshot_depth`, tracking where the parser is in `trail` (shared
/// with the caller, which reports errors thrown by the parser itself at that path).
class DuplicateKeyGuard {
 public:
  explicit DuplicateKeyGuard(ParseTrail& trail) noexcept : trail_(&trail) {}
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    std::vector<ParseTrail::Frame>& frames = trail_->frames;
    switch (event) {
      case event_t::object_start:
      case event_t::array_start:
        if (frames.size() >= max_snapshot_depth) {
          fail(trail_->current_path(),
               "nesting deeper than " + std::to_string(max_snapshot_depth) + " arrays and objects");
        }
        frames.push_back(ParseTrail::Frame{event == event_t::array_start, 0, {}, {}});
        break;
      case event_t::key: {
        ParseTrail::Frame& frame = frames.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second) {
          fail(trail_->current_path(), "duplicate key '" + frame.key + "'");
        }
        break;
      }
      case event_t::object_end:
      case event_t::array_end:
        frames.pop_back();
        completed();
        break;
      case event_t::value:
        completed();
        break;
    }
    return true;
  }

 private:
  void completed() {
    if (!trail_->frames.empty() && trail_->frames.back().array) ++trail_->frames.back().index;
  }
  ParseTrail* trail_;
};

/// nlohmann's message without its "[json.exception.x.n] " prefix.
[[nodiscard]] inline std::string parser_message(const nlohmann::json::exception& error) {
  std::string message = error.what();
  if (const auto end = message.find("] ");
      message.rfind("[json.exception", 0) == 0 && end != std::string::npos) {
    message = message.substr(end + 2);
  }
  return message;
}

}  // namespace detail

/// Parses snapshot text, rejecting text over `max_snapshot_bytes`, invalid JSON, nesting
/// deeper than `max_snapshot_depth` and duplicate keys (`SnapshotError` at "$" or at the
/// offending value's path), then `load_snapshot`.
[[nodiscard]] inline Snapshot load_snapshot_text(std::string_view text) {
  if (text.size() > max_snapshot_bytes) {
    detail::fail("$", "the snapshot has " + std::to_string(text.size()) + " bytes; at most " +
                          std::to_string(max_snapshot_bytes) + " are read");
  }
  nlohmann::json document;
  detail::ParseTrail trail;
  try {
    document = nlohmann::json::parse(text.begin(), text.end(), detail::DuplicateKeyGuard(trail));
  } catch (const nlohmann::json::parse_error& error) {
    detail::fail("$", "invalid JSON: " + detail::parser_message(error));
  } catch (const nlohmann::json::exception& error) {
    // e.g. a number beyond double (1e400): the parser stops at that value.
    detail::fail(trail.current_path(), "invalid JSON value: " + detail::parser_message(error));
  }
  return load_snapshot(document);
}

/// Reads a snapshot file (`load_snapshot_text` of its contents); an unreadable file is a
/// `SnapshotError` at "$".
[[nodiscard]] inline Snapshot load_snapshot_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::fail("$", "cannot open '" + path + "'");
  // Read in chunks and stop one byte past the limit: a huge file (or /dev/zero) is refused
  // without being read into memory.
  std::string contents;
  std::array<char, 65536> chunk{};
  while (contents.size() <= max_snapshot_bytes &&
         in.read(chunk.data(), chunk.size()).gcount() > 0) {
    contents.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) detail::fail("$", "cannot read '" + path + "'");
  return load_snapshot_text(contents);
}

}  // namespace topopreempt::io
