// SPDX-License-Identifier: MIT
#pragma once
/// @file snapshot.hpp
/// Cluster snapshots as JSON (format "topopreempt-snapshot/1", see docs/snapshot-format.md):
/// load with every field validated, save for round trips, and plans as JSON.
///
/// Errors carry the JSON path of the offending value, e.g.
/// `$.workloads[3].placement[0][1].domain: unknown domain 'rack0/node9/gpu2' ...`. Unknown keys
/// are errors, because a typo ("priorty") that is silently ignored changes the decision.
///
/// Needs nlohmann_json (the core headers never include it).

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
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/solvers/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::io {

/// The format string every snapshot carries in `"format"`.
inline constexpr std::string_view snapshot_format = "topopreempt-snapshot/1";
/// The format string of plan documents written by `to_json(const PreemptionPlan&, ...)`.
inline constexpr std::string_view plan_format = "topopreempt-plan/1";

/// A snapshot that cannot be read: `path()` is the JSON path of the offending value ("$" for
/// the document itself), `message()` says what is wrong; `what()` is "path: message".
class SnapshotError : public std::runtime_error {
 public:
  /// An error at JSON path `path`.
  SnapshotError(std::string path, std::string message)
      : std::runtime_error(path + ": " + message),
        path_(std::move(path)),
        message_(std::move(message)) {}
  /// JSON path, e.g. "$.workloads[3].placement[0][1].domain".
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The problem without the path.
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  std::string path_;
  std::string message_;
};

/// Parameters of `cost::kubernetes_order`, whose priority ranks come from the loaded state.
struct KubernetesOrderSpec {
  static constexpr std::string_view name = "kubernetes_order";
  double base = 1024.0;  ///< see `cost::kubernetes_order`
};

/// A cost model chosen by a snapshot (or a command line). Default: `victim_count`.
using CostModelSpec = std::variant<cost::victim_count, cost::priority_weighted, cost::lost_work,
                                   cost::reload_time, KubernetesOrderSpec>;

/// Names accepted for cost models, in documentation order.
inline constexpr std::array<std::string_view, 5> cost_model_names{
    "victim_count", "priority_weighted", "lost_work", "reload_time", "kubernetes_order"};

/// Names accepted for solvers ("all" runs every one of them).
inline constexpr std::array<std::string_view, 6> solver_names{
    "greedy", "knapsack", "branch_and_bound", "kube_default", "exhaustive_subsets", "all"};

/// The name of the model a spec selects, e.g. "lost_work".
[[nodiscard]] inline std::string_view cost_model_name(const CostModelSpec& spec) noexcept {
  return std::visit(
      [](const auto& model) -> std::string_view { return std::decay_t<decltype(model)>::name; },
      spec);
}

/// The spec of cost model `name` with default parameters; nullopt for an unknown name.
[[nodiscard]] inline std::optional<CostModelSpec> make_cost_model(std::string_view name) {
  if (name == "victim_count") return CostModelSpec{cost::victim_count{}};
  if (name == "priority_weighted") return CostModelSpec{cost::priority_weighted{}};
  if (name == "lost_work") return CostModelSpec{cost::lost_work{}};
  if (name == "reload_time") return CostModelSpec{cost::reload_time{}};
  if (name == "kubernetes_order") return CostModelSpec{KubernetesOrderSpec{}};
  return std::nullopt;
}

/// Calls `visitor(model)` with the concrete `CostModel` a spec selects and returns its result.
/// `kubernetes_order` is built from the priorities running in `state` (its victims' priorities).
template <class Visitor>
decltype(auto) visit_cost_model(const CostModelSpec& spec, const Allocation& state,
                                Visitor&& visitor) {
  return std::visit(
      [&](const auto& model) -> decltype(auto) {
        if constexpr (std::is_same_v<std::decay_t<decltype(model)>, KubernetesOrderSpec>) {
          return visitor(cost::kubernetes_order::of(state, model.base));
        } else {
          return visitor(model);
        }
      },
      spec);
}

/// A solver chosen by a snapshot; limits apply to solvers that support them.
struct SolverSpec {
  std::string name = "branch_and_bound";      ///< one of `solver_names`
  std::optional<std::int64_t> time_limit_ms;  ///< wall-clock limit in milliseconds
  std::optional<std::uint64_t> node_limit;    ///< search-node limit
  friend bool operator==(const SolverSpec&, const SolverSpec&) = default;
};

/// A loaded snapshot: the cluster, what runs on it, and the workload that wants in.
struct Snapshot {
  std::string description;                   ///< free text from the file (may be empty)
  std::shared_ptr<const Topology> topology;  ///< shared with `state`
  Allocation state;                          ///< the running workloads at their placements
  Workload preemptor;                        ///< not running; its id is unused in `state`
  std::optional<CostModelSpec> cost_model;   ///< the file's choice, if any
  std::optional<SolverSpec> solver;          ///< the file's choice, if any
};

// Loader limits (docs/snapshot-format.md, "Limits"). Each holds by construction: it is checked
// from sizes known before the memory it bounds is allocated.

/// Upper bound on the size of snapshot text (`load_snapshot_text`, `load_snapshot_file`).
inline constexpr std::size_t max_snapshot_bytes = std::size_t{64} << 20;
/// Upper bound on nested arrays and objects in snapshot text.
inline constexpr std::size_t max_snapshot_depth = 256;
/// Upper bound on domains a snapshot may create (exact in every topology form, checked before
/// anything is built), so a typo in a count cannot exhaust memory.
inline constexpr std::size_t max_snapshot_domains = 10'000'000;
/// Upper bound on `count` in a domain and on replicas of a workload.
inline constexpr std::int64_t max_repeat = 1'000'000;
/// Upper bound on the devices of a host that carries an affinity matrix (4096 x 4096 doubles
/// are 128 MiB).
inline constexpr std::uint64_t max_affinity_devices = 4096;
/// Upper bound on topology levels (the builder's own limit).
inline constexpr std::size_t max_levels = 64;
/// Upper bound on a solver time limit in milliseconds (2^40 ms, about 34.8 years): larger
/// values are errors, never clamped, and stay far from overflowing `std::chrono::nanoseconds`.
inline constexpr std::int64_t max_time_limit_ms = std::int64_t{1} << 40;

namespace detail {

using nlohmann::json;

[[noreturn]] inline void fail(const std::string& path, std::string message) {
  throw SnapshotError(path, std::move(message));
}

/// `path.key`, or `path["key"]` for keys that are not identifiers.
[[nodiscard]] inline std::string key_path(const std::string& path, std::string_view key) {
  const bool identifier = !key.empty() && !std::isdigit(static_cast<unsigned char>(key.front())) &&
                          std::all_of(key.begin(), key.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                          });
  if (identifier) return path + "." + std::string(key);
  std::string quoted;
  for (char c : key) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return path + "[\"" + quoted + "\"]";
}

/// `path[index]`.
[[nodiscard]] inline std::string index_path(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

/// A short rendering of a value for messages ("1.5", "\"x\"", "an object").
[[nodiscard]] inline std::string describe_value(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

/// Edit distance, for "did you mean" hints on unknown keys and names.
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// "; did you mean 'x'?" when one candidate is close to `given`, else "".
template <class Range>
[[nodiscard]] std::string suggestion(std::string_view given, const Range& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, given.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(given, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best.empty() ? std::string() : "; did you mean '" + best + "'?";
}

/// "a, b, c" (at most `limit` items, then "...").
template <class Range>
[[nodiscard]] std::string join(const Range& items, std::size_t limit = 12) {
  std::string text;
  std::size_t count = 0;
  for (const auto& item : items) {
    if (count == limit) return text + ", ...";
    if (count++ > 0) text += ", ";
    text += std::string(item);
  }
  return text;
}

/// A JSON object whose keys were checked against a fixed list; lookups carry their paths.
class ObjectReader {
 public:
  ObjectReader(const json& value, std::string path, std::vector<std::string_view> keys)
      : value_(&value), path_(std::move(path)), keys_(std::move(keys)) {
    if (!value.is_object()) fail(path_, "must be an object, got " + describe_value(value));
    for (const auto& [key, item] : value.items()) {
      if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) {
        fail(key_path(path_, key), "unknown key '" + key + "' (allowed: " + join(keys_, 100) + ")" +
                                       suggestion(key, keys_));
      }
    }
  }
  /// The object's own path.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Path of member `key`.
  [[nodiscard]] std::string at(std::string_view key) const { return key_path(path_, key); }
  /// Whether member `key` is present.
  [[nodiscard]] bool has(std::string_view key) const { return value_->contains(std::string(key)); }
  /// Member `key`, or nullptr when absent.
  [[nodiscard]] const json* optional(std::string_view key) const {
    const auto it = value_->find(std::string(key));
    return it == value_->end() ? nullptr : &*it;
  }
  /// Member `key`; an error at the object's path when absent.
  [[nodiscard]] const json& required(std::string_view key) const {
    const json* member = optional(key);
    if (member == nullptr) fail(path_, "missing required key '" + std::string(key) + "'");
    return *member;
  }

 private:
  const json* value_;
  std::string path_;
  std::vector<std::string_view> keys_;
};

[[nodiscard]] inline std::string read_string(const json& value, const std::string& path) {
  if (!value.is_string()) fail(path, "must be a string, got " + describe_value(value));
  return value.get<std::string>();
}

[[nodiscard]] inline bool read_bool(const json& value, const std::string& path) {
  if (!value.is_boolean()) fail(path, "must be true or false, got " + describe_value(value));
  return value.get<bool>();
}

[[nodiscard]] inline std::int64_t read_integer(const json& value, const std::string& path,
                                               std::int64_t min, std::int64_t max) {
  if (!value.is_number_integer()) fail(path, "must be an integer, got " + describe_value(value));
  const bool too_big =
      value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max);
  const std::int64_t number = too_big ? max : value.get<std::int64_t>();
  if (too_big || number < min || number > max) {
    fail(path, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                   value.dump());
  }
  return number;
}

[[nodiscard]] inline std::uint64_t read_unsigned(const json& value, const std::string& path) {
  if (!value.is_number_integer()) fail(path, "must be an integer, got " + describe_value(value));
  // Documents built in C++ store small non-negative integers as signed: accept both.
  if (!value.is_number_unsigned() && value.get<std::int64_t>() < 0) {
    fail(path, "must be >= 0, got " + value.dump());
  }
  return value.get<std::uint64_t>();
}

[[nodiscard]] inline double read_number(const json& value, const std::string& path,
                                        double min = -std::numeric_limits<double>::max()) {
  if (!value.is_number()) fail(path, "must be a number, got " + describe_value(value));
  const double number = value.get<double>();
  if (!std::isfinite(number)) fail(path, "must be finite");
  if (number < min) fail(path, "must be >= " + json(min).dump() + ", got " + value.dump());
  return number;
}

/// A resource object `{"gpu_milli": 1000, ...}`: known dimensions, integer, non-negative.
[[nodiscard]] inline ResourceVector read_resources(const json& value, const std::string& path,
                                                   const ResourceSchema& schema) {
  if (!value.is_object()) fail(path, "must be an object of amounts by dimension name");
  ResourceVector result = schema.zeros();
  std::vector<std::string_view> names;
  for (const auto& dimension : schema.dimensions()) names.emplace_back(dimension.name);
  for (const auto& [name, amount] : value.items()) {
    const std::string at = key_path(path, name);
    const auto index = schema.find(name);
    if (!index) {
      fail(at, "unknown resource dimension '" + name + "' (dimensions: " + join(names) + ")" +
                   suggestion(name, names));
    }
    if (amount.is_number_integer() && !amount.is_number_unsigned() &&
        amount.get<std::int64_t>() < 0) {
      fail(at, "negative amount " + amount.dump() + "; amounts are >= 0");
    }
    result(static_cast<Eigen::Index>(*index)) =
        read_integer(amount, at, 0, std::numeric_limits<Amount>::max() / 4);
  }
  return result;
}

/// A non-empty list of distinct strings.
[[nodiscard]] inline std::vector<std::string> read_names(const json& value, const std::string& path,
                                                         std::string_view what) {
  if (!value.is_array() || value.empty())
    fail(path, "must be a non-empty array of " + std::string(what));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string name = read_string(value[i], index_path(path, i));
    if (name.empty()) fail(index_path(path, i), "must not be empty");
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      fail(index_path(path, i), "'" + name + "' is listed twice");
    }
    names.push_back(std::move(name));
  }
  return names;
}

[[nodiscard]] inline ResourceSchema read_schema(const json& value, const std::string& path) {
  if (!value.is_array() || value.empty()) fail(path, "must be a non-empty array of dimensions");
  std::vector<ResourceDimension> dimensions;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const ObjectReader dimension(value[i], index_path(path, i), {"name", "kind"});
    std::string name = read_string(dimension.required("name"), dimension.at("name"));
    if (name.empty()) fail(dimension.at("name"), "must not be empty");
    for (const auto& earlier : dimensions) {
      if (earlier.name == name)
        fail(dimension.at("name"), "dimension '" + name + "' is declared twice");
    }
    const std::string kind = read_string(dimension.required("kind"), dimension.at("kind"));
    if (kind != "device" && kind != "pooled") {
      fail(dimension.at("kind"), "must be \"device\" or \"pooled\", got '" + kind + "'");
    }
    dimensions.push_back(
        {std::move(name), kind == "device" ? ResourceKind::device : ResourceKind::pooled});
  }
  return ResourceSchema(std::move(dimensions));
}

/// What domains are checked against while they are parsed.
struct DomainContext {
  std::vector<std::string> levels;
  ResourceSchema schema;
  LevelIndex device_level = 0;
  LevelIndex host_level = 0;
  /// In a `cluster_of` shape only the shape's root may carry an affinity matrix.
  bool affinity_on_root_only = false;
};

/// One parsed domain object. Counts are NOT expanded: a `count` of 1,000 is one object here
/// and becomes 1,000 domains only in the builder, so memory while parsing is proportional to
/// the document, and every limit is checked from the exact sizes below before anything is
/// materialised.
struct ParsedDomain {
  LevelIndex level = 0;
  std::string name;
  std::uint32_t json_index = 0;       ///< position in the parent's "children" array (for paths)
  std::optional<std::int64_t> count;  ///< copies named name0, name1, ...; absent: one named name
  ResourceVector capacity;
  std::vector<ParsedDomain> children;
  std::optional<Eigen::MatrixXd> affinity;  ///< one matrix for every copy
  std::uint64_t domains = 1;  ///< domains in the subtree of ONE copy, this one included
  std::uint64_t devices = 0;  ///< device leaves in the subtree of ONE copy
  ResourceVector total;       ///< capacity of the subtree of ONE copy (checked for overflow)
  [[nodiscard]] std::uint64_t copies() const noexcept {
    return count ? static_cast<std::uint64_t>(*count) : 1;
  }
};

/// `a * b`, or nullopt past `limit` (the operands are at most `limit`, so nothing wraps).
[[nodiscard]] inline std::optional<std::uint64_t> product_within(std::uint64_t a, std::uint64_t b,
                                                                 std::uint64_t limit) {
  if (a != 0 && b > limit / a) return std::nullopt;
  return a * b;
}

/// "more than 10000000 domains" with where they come from.
[[nodiscard]] inline std::string too_many_domains() {
  return "the topology would have more than " + std::to_string(max_snapshot_domains) +
         " domains (the limit of a snapshot)";
}

/// Adds `copies` x `amount` into `total`; an error at `path` naming the dimension on overflow.
inline void add_capacity(ResourceVector& total, const ResourceVector& amount, std::uint64_t copies,
                         const ResourceSchema& schema, const std::string& path) {
  for (std::size_t i = 0; i < schema.size(); ++i) {
    const auto dim = static_cast<Eigen::Index>(i);
    Amount scaled = 0;
    if (__builtin_mul_overflow(amount(dim), copies, &scaled) ||
        __builtin_add_overflow(total(dim), scaled, &total(dim))) {
      fail(path, "the total capacity in '" + schema[i].name + "' exceeds " +
                     std::to_string(std::numeric_limits<Amount>::max()));
    }
  }
}

[[nodiscard]] inline Eigen::MatrixXd read_affinity(const json& value, const std::string& path,
                                                   std::uint64_t devices) {
  if (devices > max_affinity_devices) {
    fail(path, "the host has " + std::to_string(devices) + " devices; affinity matrices are " +
                   "limited to " + std::to_string(max_affinity_devices) + " devices");
  }
  const auto n = static_cast<Eigen::Index>(devices);
  if (!value.is_array() || value.size() != devices) {
    fail(path, "must be a " + std::to_string(devices) + "x" + std::to_string(devices) +
                   " matrix (one row per device of the host, in document order)");
  }
  for (std::size_t r = 0; r < devices; ++r) {  // shape first: nothing is allocated for a bad one
    if (!value[r].is_array() || value[r].size() != devices) {
      fail(index_path(path, r), "must be an array of " + std::to_string(devices) + " numbers");
    }
  }
  Eigen::MatrixXd matrix(n, n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const json& row = value[static_cast<std::size_t>(r)];
    const std::string row_path = index_path(path, static_cast<std::size_t>(r));
    for (Eigen::Index c = 0; c < n; ++c) {
      matrix(r, c) = read_number(row[static_cast<std::size_t>(c)],
                                 index_path(row_path, static_cast<std::size_t>(c)));
    }
  }
  for (Eigen::Index r = 0; r < n; ++r) {
    for (Eigen::Index c = 0; c < r; ++c) {
      if (matrix(r, c) != matrix(c, r)) {
        fail(index_path(index_path(path, static_cast<std::size_t>(r)), static_cast<std::size_t>(c)),
             "the matrix must be symmetric: [" + std::to_string(r) + "][" + std::to_string(c) +
                 "] differs from [" + std::to_string(c) + "][" + std::to_string(r) + "]");
      }
    }
  }
  return matrix;
}

/// Parses a domain object and its subtree (counts kept, not expanded). Every size (domains,
/// devices, capacity totals) is computed exactly from the counts and checked here, at the
/// domain whose subtree first exceeds a limit. `parent_level` is nullopt for the root, which
/// may omit its level and name.
[[nodiscard]] inline ParsedDomain parse_domain(const json& value, const std::string& path,
                                               const DomainContext& context,
                                               std::optional<LevelIndex> parent_level) {
  const bool is_root = !parent_level;
  std::vector<std::string_view> keys{"level", "name", "capacity", "children", "affinity"};
  if (!is_root) keys.emplace_back("count");  // a root is one domain
  const ObjectReader object(value, path, std::move(keys));
  ParsedDomain domain;
  if (is_root && !object.has("level")) {
    domain.level = 0;
  } else {
    const std::string level = read_string(object.required("level"), object.at("level"));
    const auto it = std::find(context.levels.begin(), context.levels.end(), level);
    if (it == context.levels.end()) {
      fail(object.at("level"), "unknown level '" + level + "' (levels: " + join(context.levels) +
                                   ")" + suggestion(level, context.levels));
    }
    domain.level = static_cast<LevelIndex>(it - context.levels.begin());
    if (is_root && domain.level != 0) {
      fail(object.at("level"),
           "the root must be at the first level '" + context.levels.front() + "'");
    }
    if (!is_root && domain.level <= *parent_level) {
      fail(object.at("level"), "level '" + level + "' must be deeper than the parent's level '" +
                                   context.levels[*parent_level] + "'");
    }
  }
  // An unnamed root takes its level's name, which is checked as any name: a name with '/' would
  // load here but be refused when the saved snapshot is loaded again.
  const bool named = !is_root || object.has("name");
  domain.name =
      named ? read_string(object.required("name"), object.at("name")) : context.levels.front();
  if (!is_valid_domain_name(domain.name)) {
    if (named) fail(object.at("name"), "a domain name must be non-empty and contain no '/'");
    fail(path, "the root has no 'name' and its level's name '" + domain.name +
                   "' is not a valid domain name (non-empty, no '/'): give the root a name");
  }
  if (const json* repeat = object.optional("count")) {
    domain.count = read_integer(*repeat, object.at("count"), 1, max_repeat);
  }
  const bool device = domain.level == context.device_level;
  domain.capacity = context.schema.zeros();
  if (const json* capacity = object.optional("capacity")) {
    domain.capacity = read_resources(*capacity, object.at("capacity"), context.schema);
    for (std::size_t i = 0; i < context.schema.size(); ++i) {
      if (domain.capacity(static_cast<Eigen::Index>(i)) > 0 &&
          context.schema.is_device(i) != device) {
        fail(key_path(object.at("capacity"), context.schema[i].name),
             "'" + context.schema[i].name + "' is a " +
                 (context.schema.is_device(i)
                      ? "device dimension: only device leaves ('" +
                            context.levels[context.device_level] + "') hold it"
                      : "pooled dimension: device leaves cannot hold it"));
      }
    }
  }
  domain.total = domain.capacity;
  if (const json* children = object.optional("children")) {
    const std::string children_path = object.at("children");
    if (!children->is_array()) fail(children_path, "must be an array of domains");
    if (device && !children->empty())
      fail(children_path, "devices are leaves and have no children");
    domain.children.reserve(children->size());
    for (std::size_t i = 0; i < children->size(); ++i) {
      const std::string child_path = index_path(children_path, i);
      ParsedDomain child = parse_domain((*children)[i], child_path, context, domain.level);
      child.json_index = static_cast<std::uint32_t>(i);
      const auto copies = child.copies();
      // Each operand is at most the limit (checked in the child), so these cannot wrap.
      const auto domains = product_within(child.domains, copies, max_snapshot_domains);
      if (!domains || domain.domains + *domains > max_snapshot_domains) {
        fail(child.count ? key_path(child_path, "count") : child_path, too_many_domains());
      }
      domain.domains += *domains;
      domain.devices += child.devices * copies;  // devices <= domains: cannot wrap
      add_capacity(domain.total, child.total, copies, context.schema, path);
      domain.children.push_back(std::move(child));
    }
  }
  if (device) domain.devices = 1;
  if (domain.count && !product_within(domain.domains, domain.copies(), max_snapshot_domains)) {
    fail(object.at("count"), too_many_domains());
  }
  if (const json* affinity = object.optional("affinity")) {
    if (domain.level != context.host_level) {
      fail(object.at("affinity"), "affinity matrices belong to host-level ('" +
                                      context.levels[context.host_level] + "') domains");
    }
    if (context.affinity_on_root_only && !is_root) {
      fail(object.at("affinity"),
           "in a cluster_of shape only the shape's root may carry an affinity matrix");
    }
    domain.affinity = read_affinity(*affinity, object.at("affinity"), domain.devices);
  }
  return domain;
}

/// The JSON path of a parsed domain: `base` then `.children[i]` per step of `indices`.
[[nodiscard]] inline std::string parsed_path(const std::string& base,
                                             const std::vector<std::uint32_t>& indices) {
  std::string path = base;
  for (std::uint32_t index : indices) path = index_path(key_path(path, "children"), index);
  return path;
}

/// Adds every copy of `domain` (and their subtrees) under `parent`. Sibling names are checked
/// by the builder (in O(1) each); a clash is reported at the domain's JSON path, rebuilt from
/// `indices` (the route from the root object) only then.
inline void add_parsed(TopologyBuilder& builder, TopologyBuilder::Handle parent,
                       const ParsedDomain& domain, const DomainContext& context,
                       const std::string& base_path, std::vector<std::uint32_t>& indices) {
  indices.push_back(domain.json_index);
  for (std::uint64_t k = 0; k < domain.copies(); ++k) {
    TopologyBuilder::Handle handle;
    std::string name = domain.count ? domain.name + std::to_string(k) : domain.name;
    try {
      handle = builder.add(parent, context.levels[domain.level], std::move(name), domain.capacity);
    } catch (const std::invalid_argument& error) {
      fail(key_path(parsed_path(base_path, indices), "name"), error.what());
    }
    for (const auto& child : domain.children) {
      add_parsed(builder, handle, child, context, base_path, indices);
    }
    if (domain.affinity) builder.set_affinity(handle, *domain.affinity);
  }
  indices.pop_back();
}

/// Builds the topology of a parsed root (`path` is the root object's JSON path).
[[nodiscard]] inline Topology build_parsed(const ParsedDomain& root, const DomainContext& context,
                                           const std::string& path) {
  TopologyBuilder builder(context.levels, context.schema, context.levels[context.device_level],
                          context.levels[context.host_level], root.name);
  builder.set_root_capacity(root.capacity);
  std::vector<std::uint32_t> indices;
  for (const auto& child : root.children) {
    add_parsed(builder, TopologyBuilder::root(), child, context, path, indices);
  }
  if (root.affinity) builder.set_affinity(TopologyBuilder::root(), *root.affinity);
  try {
    return builder.build();
  } catch (const std::exception& error) {
    // Sizes and totals were checked while parsing with precise paths; this is a backstop.
    fail(path, error.what());
  }
}

/// The nested form: schema (optional), levels, device_level, host_level, root.
[[nodiscard]] inline Topology read_nested_topology(const ObjectReader& object) {
  DomainContext context{{}, ResourceSchema::standard(), 0, 0, false};
  if (const json* schema = object.optional("schema"))
    context.schema = read_schema(*schema, object.at("schema"));
  context.levels = read_names(object.required("levels"), object.at("levels"), "level names");
  if (context.levels.size() > max_levels) {
    fail(object.at("levels"), "at most " + std::to_string(max_levels) + " levels are supported");
  }
  const auto level_named = [&](std::string_view key) {
    const std::string name = read_string(object.required(key), object.at(key));
    const auto it = std::find(context.levels.begin(), context.levels.end(), name);
    if (it == context.levels.end()) {
      fail(object.at(key), "unknown level '" + name + "' (levels: " + join(context.levels) + ")" +
                               suggestion(name, context.levels));
    }
    return static_cast<LevelIndex>(it - context.levels.begin());
  };
  context.device_level = level_named("device_level");
  context.host_level = level_named("host_level");
  if (context.host_level >= context.device_level) {
    fail(object.at("host_level"), "the host level must lie above the device level '" +
                                      context.levels[context.device_level] + "'");
  }
  const ParsedDomain root =
      parse_domain(object.required("root"), object.at("root"), context, std::nullopt);
  if (root.level == context.device_level) fail(object.at("root"), "the root cannot be a device");
  return build_parsed(root, context, object.at("root"));
}

/// A shape's parsed domain with its counts expanded (the shape was size-checked when parsed).
[[nodiscard]] inline shapes::ShapeDomain expand_shape(const ParsedDomain& domain,
                                                      const std::vector<std::string>& levels,
                                                      std::string name) {
  shapes::ShapeDomain result{levels[domain.level], std::move(name), domain.capacity, {}};
  for (const auto& child : domain.children) {
    for (std::uint64_t k = 0; k < child.copies(); ++k) {
      result.children.push_back(
          expand_shape(child, levels, child.count ? child.name + std::to_string(k) : child.name));
    }
  }
  return result;
}

/// A custom machine shape of `cluster_of`: {model, levels, root} over the standard schema.
[[nodiscard]] inline shapes::MachineShape read_custom_shape(const json& value,
                                                            const std::string& path) {
  const ObjectReader object(value, path, {"model", "levels", "root"});
  shapes::MachineShape shape;
  shape.model =
      object.has("model") ? read_string(object.required("model"), object.at("model")) : "custom";
  shape.levels = read_names(object.required("levels"), object.at("levels"), "level names");
  const auto position = [&](std::string_view level) {
    return std::find(shape.levels.begin(), shape.levels.end(), level) - shape.levels.begin();
  };
  const auto levels_size = static_cast<std::ptrdiff_t>(shape.levels.size());
  if (position("node") == levels_size || position("gpu") == levels_size ||
      position("node") > position("gpu")) {
    fail(object.at("levels"),
         "a cluster_of shape uses the standard schema: it needs a 'node' "
         "(host) level above a 'gpu' (device) level");
  }
  if (position("cluster") != levels_size)
    fail(object.at("levels"), "'cluster' is added by cluster_of");
  if (position("rack") != levels_size && position("rack") != 0) {
    fail(object.at("levels"), "'rack' may only be the shape's first level (a rack-scale machine)");
  }
  const DomainContext context{shape.levels, ResourceSchema::standard(),
                              static_cast<LevelIndex>(position("gpu")),
                              static_cast<LevelIndex>(position("node")), true};
  const ParsedDomain root =
      parse_domain(object.required("root"), object.at("root"), context, std::nullopt);
  if (root.level == context.device_level)
    fail(object.at("root"), "the shape's root cannot be a device");
  // One machine of the shape, built once: sibling-name clashes are reported with their paths
  // here instead of once per node of the cluster.
  (void)build_parsed(root, context, object.at("root"));
  // The shape's root takes the node name in the cluster; its own name is not used.
  shape.root = expand_shape(root, shape.levels, root.name);
  if (root.affinity) shape.affinity = *root.affinity;
  return shape;
}

/// The built-in shape named `name`, or an error at `path`.
[[nodiscard]] inline shapes::MachineShape builtin_shape(const std::string& name,
                                                        const std::string& path) {
  if (name == "dense_8gpu_server") return shapes::dense_8gpu_server();
  if (name == "hgx_h100") return shapes::hgx_h100();
  if (name == "rtx4090_server") return shapes::rtx4090_server();
  if (name == "gb200_nvl72_rack") return shapes::gb200_nvl72_rack();
  static constexpr std::array<std::string_view, 4> names{"dense_8gpu_server", "hgx_h100",
                                                         "rtx4090_server", "gb200_nvl72_rack"};
  fail(path, "unknown machine shape '" + name + "' (shapes: " + join(names) + ", or an object)" +
                 suggestion(name, names));
}

[[nodiscard]] inline std::uint64_t shape_domains(const shapes::ShapeDomain& domain) {
  std::uint64_t total = 1;
  for (const auto& child : domain.children) total += shape_domains(child);
  return total;
}

/// The capacity of one machine of a shape (built-in or already size-checked custom shapes).
[[nodiscard]] inline ResourceVector shape_capacity(const shapes::ShapeDomain& domain,
                                                   const ResourceSchema& schema,
                                                   const std::string& path) {
  ResourceVector total = schema.zeros();
  if (domain.local_capacity.size() != 0)
    add_capacity(total, domain.local_capacity, 1, schema, path);
  for (const auto& child : domain.children) {
    add_capacity(total, shape_capacity(child, schema, path), 1, schema, path);
  }
  return total;
}

/// Domains of a cluster of `machine_domains` in total over `machines` machines grouped
/// `per_rack` to a rack: the cluster root, the racks (unless the shape is a rack) and the
/// machines; nullopt past the limit.
[[nodiscard]] inline std::optional<std::uint64_t> cluster_domains(std::uint64_t machine_domains,
                                                                  std::uint64_t machines,
                                                                  std::uint64_t per_rack,
                                                                  bool racked) {
  const std::uint64_t racks = racked ? 0 : (machines + per_rack - 1) / per_rack;
  const std::uint64_t total = 1 + racks + machine_domains;  // each term is at most ~10^13
  if (total > max_snapshot_domains) return std::nullopt;
  return total;
}

/// The compact form `{"shape": ..., "nodes": N, "nodes_per_rack": K}`.
[[nodiscard]] inline Topology read_cluster_of(const json& value, const std::string& path) {
  const ObjectReader object(value, path, {"shape", "nodes", "nodes_per_rack"});
  const json& shape_value = object.required("shape");
  shapes::MachineShape shape =
      shape_value.is_string() ? builtin_shape(shape_value.get<std::string>(), object.at("shape"))
                              : read_custom_shape(shape_value, object.at("shape"));
  const auto nodes = static_cast<std::size_t>(
      read_integer(object.required("nodes"), object.at("nodes"), 1, max_repeat));
  const bool racked = shape.levels.front() == "rack";
  std::size_t per_rack = nodes;
  if (const json* per = object.optional("nodes_per_rack")) {
    if (racked) {
      fail(object.at("nodes_per_rack"), "the shape's root is already a rack; 'nodes' counts racks");
    }
    per_rack =
        static_cast<std::size_t>(read_integer(*per, object.at("nodes_per_rack"), 1, max_repeat));
  }
  // Exact: the cluster root, every rack and every domain of every machine.
  const auto machine_domains =
      product_within(shape_domains(shape.root), nodes, max_snapshot_domains);
  if (!machine_domains || !cluster_domains(*machine_domains, nodes, per_rack, racked)) {
    fail(object.at("nodes"), too_many_domains());
  }
  ResourceVector total = ResourceSchema::standard().zeros();
  add_capacity(total, shape_capacity(shape.root, ResourceSchema::standard(), object.at("shape")),
               nodes, ResourceSchema::standard(), object.at("nodes"));
  try {
    return shapes::cluster(shape, nodes, per_rack);
  } catch (const std::invalid_argument& error) {
    fail(object.at("shape"), error.what());
  }
}

/// The openb form `{"nodes": [...], "nodes_per_rack": K}`; a node is an object with the trace's
/// columns or a 5-element row `[sn, cpu_milli, memory_mib, gpu, model]`.
[[nodiscard]] inline Topology read_openb(const json& value, const std::string& path) {
  const ObjectReader object(value, path, {"nodes", "nodes_per_rack"});
  const json& nodes = object.required("nodes");
  const std::string nodes_path = object.at("nodes");
  if (!nodes.is_array() || nodes.empty())
    fail(nodes_path, "must be a non-empty array of openb nodes");
  if (nodes.size() > static_cast<std::size_t>(max_repeat)) {
    fail(nodes_path, "has " + std::to_string(nodes.size()) + " nodes; at most " +
                         std::to_string(max_repeat) + " are read");
  }
  std::size_t per_rack = nodes.size();
  if (const json* per = object.optional("nodes_per_rack")) {
    per_rack =
        static_cast<std::size_t>(read_integer(*per, object.at("nodes_per_rack"), 1, max_repeat));
  }
  std::vector<shapes::ClusterMember> members;
  std::unordered_set<std::string> names;
  // One entry per distinct (cpu, memory, gpus, model): its shape, domains and capacity.
  struct NodeKind {
    std::shared_ptr<const shapes::MachineShape> shape;
    std::uint64_t domains = 0;
    ResourceVector capacity;
  };
  std::map<std::string, NodeKind> cache;
  const ResourceSchema schema = ResourceSchema::standard();
  ResourceVector total = schema.zeros();
  std::uint64_t machine_domains = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string at = index_path(nodes_path, i);
    const json& node = nodes[i];
    const std::array<std::string_view, 5> columns{"sn", "cpu_milli", "memory_mib", "gpu", "model"};
    std::array<std::pair<const json*, std::string>, 5> fields;
    if (node.is_array()) {
      if (node.size() != 5) fail(at, "a row must be [sn, cpu_milli, memory_mib, gpu, model]");
      for (std::size_t c = 0; c < 5; ++c) fields[c] = {&node[c], index_path(at, c)};
    } else {
      const ObjectReader row(node, at, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
      for (std::size_t c = 0; c < 5; ++c) {
        fields[c] = {c == 4 && !row.has("model") ? nullptr : &row.required(columns[c]),
                     row.at(columns[c])};
      }
    }
    std::string name = read_string(*fields[0].first, fields[0].second);
    if (!is_valid_domain_name(name)) {
      fail(fields[0].second, "a node name must be non-empty and contain no '/'");
    }
    if (!names.insert(name).second) fail(fields[0].second, "node '" + name + "' is listed twice");
    const Amount cpu =
        read_integer(*fields[1].first, fields[1].second, 0, std::numeric_limits<Amount>::max() / 4);
    const Amount memory =
        read_integer(*fields[2].first, fields[2].second, 0, std::numeric_limits<Amount>::max() / 4);
    const auto gpus = static_cast<int>(read_integer(*fields[3].first, fields[3].second, 0, 8));
    const std::string model =
        fields[4].first ? read_string(*fields[4].first, fields[4].second) : "";
    if (gpus > 0) {
      try {
        (void)shapes::openb_gpu_memory_mib(model);
      } catch (const std::invalid_argument&) {
        static constexpr std::array<std::string_view, 7> models{"A10", "G2",      "G3",     "P100",
                                                                "T4",  "V100M16", "V100M32"};
        fail(fields[4].second, "unknown openb GPU model '" + model + "' (models: " + join(models) +
                                   ")" + suggestion(model, models));
      }
    }
    const std::string key = std::to_string(cpu) + "," + std::to_string(memory) + "," +
                            std::to_string(gpus) + "," + model;
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto shape = std::make_shared<const shapes::MachineShape>(
          shapes::openb_node(model, gpus, cpu, memory));
      const std::uint64_t domains = shape_domains(shape->root);
      ResourceVector capacity = shape_capacity(shape->root, schema, at);
      it = cache.emplace(key, NodeKind{std::move(shape), domains, std::move(capacity)}).first;
    }
    machine_domains += it->second.domains;  // at most 15 per node: cannot wrap
    if (!cluster_domains(machine_domains, i + 1, per_rack, false)) fail(at, too_many_domains());
    add_capacity(total, it->second.capacity, 1, schema, at);
    members.push_back({std::move(name), it->second.shape});
  }
  return shapes::cluster(members, per_rack);
}

/// `"topology"`: exactly one of root / cluster_of / openb. In the compact forms, schema,
/// levels, device_level and host_level may be given as assertions and must match.
[[nodiscard]] inline std::shared_ptr<const Topology> read_topology(const json& value,
                                                                   const std::string& path) {
  const ObjectReader object(
      value, path,
      {"schema", "levels", "device_level", "host_level", "root", "cluster_of", "openb"});
  const int forms =
      int{object.has("root")} + int{object.has("cluster_of")} + int{object.has("openb")};
  if (forms != 1) {
    fail(path, "give exactly one of 'root' (a nested domain tree), 'cluster_of' or 'openb'");
  }
  if (object.has("root")) return std::make_shared<const Topology>(read_nested_topology(object));
  auto topology = std::make_shared<const Topology>(
      object.has("cluster_of")
          ? read_cluster_of(object.required("cluster_of"), object.at("cluster_of"))
          : read_openb(object.required("openb"), object.at("openb")));
  if (const json* schema = object.optional("schema")) {
    if (!(read_schema(*schema, object.at("schema")) == topology->schema())) {
      fail(object.at("schema"), "does not match the shape's schema (the standard one)");
    }
  }
  if (const json* levels = object.optional("levels")) {
    if (read_names(*levels, object.at("levels"), "level names") != topology->levels()) {
      fail(object.at("levels"),
           "does not match the shape's levels [" + join(topology->levels(), 64) + "]");
    }
  }
  const auto check_level = [&](std::string_view key, LevelIndex expected) {
    if (const json* level = object.optional(key)) {
      if (read_string(*level, object.at(key)) != topology->levels()[expected]) {
        fail(object.at(key),
             "the shape's " + std::string(key) + " is '" + topology->levels()[expected] + "'");
      }
    }
  };
  check_level("device_level", topology->device_level());
  check_level("host_level", topology->host_level());
  return topology;
}

[[nodiscard]] inline TopologyRequirement read_scope(const json& value, const std::string& path,
                                                    const Topology& topology) {
  const ObjectReader object(value, path, {"mode", "level"});
  const std::string mode = read_string(object.required("mode"), object.at("mode"));
  TopologyRequirement requirement;
  if (mode == "none") {
    if (object.has("level")) fail(object.at("level"), "a scope of mode 'none' takes no level");
    return requirement;
  }
  if (mode == "guaranteed") {
    requirement.mode = RequirementMode::guaranteed;
  } else if (mode == "best_effort") {
    requirement.mode = RequirementMode::best_effort;
  } else {
    fail(object.at("mode"),
         "must be \"guaranteed\", \"best_effort\" or \"none\", got '" + mode + "'");
  }
  requirement.level = read_string(object.required("level"), object.at("level"));
  if (!topology.find_level(requirement.level)) {
    fail(object.at("level"), "unknown level '" + requirement.level +
                                 "' (levels: " + join(topology.levels()) + ")" +
                                 suggestion(requirement.level, topology.levels()));
  }
  return requirement;
}

[[nodiscard]] inline CostInputs read_cost_inputs(const json& value, const std::string& path) {
  const ObjectReader object(
      value, path,
      {"start_time_s", "seconds_since_checkpoint", "model_id", "model_size_gib", "extra_cost"});
  CostInputs inputs;
  if (const json* v = object.optional("start_time_s"))
    inputs.start_time_s = read_number(*v, object.at("start_time_s"));
  if (const json* v = object.optional("seconds_since_checkpoint")) {
    inputs.seconds_since_checkpoint = read_number(*v, object.at("seconds_since_checkpoint"), 0.0);
  }
  if (const json* v = object.optional("model_id"))
    inputs.model_id = read_string(*v, object.at("model_id"));
  if (const json* v = object.optional("model_size_gib"))
    inputs.model_size_gib = read_number(*v, object.at("model_size_gib"), 0.0);
  if (const json* v = object.optional("extra_cost"))
    inputs.extra_cost = read_number(*v, object.at("extra_cost"), 0.0);
  return inputs;
}

/// A workload without its placement; `running` allows (and requires) the "placement" key.
[[nodiscard]] inline Workload read_workload(const ObjectReader& object, const Topology& topology) {
  const ResourceSchema& schema = topology.schema();
  Workload workload;
  workload.id = WorkloadId{read_unsigned(object.required("id"), object.at("id"))};
  if (const json* name = object.optional("name"))
    workload.name = read_string(*name, object.at("name"));
  workload.priority = static_cast<std::int32_t>(read_integer(
      object.required("priority"), object.at("priority"), std::numeric_limits<std::int32_t>::min(),
      std::numeric_limits<std::int32_t>::max()));
  if (const json* v = object.optional("preemptible"))
    workload.preemptible = read_bool(*v, object.at("preemptible"));
  if (const json* v = object.optional("replicas")) {
    workload.replicas =
        static_cast<std::int32_t>(read_integer(*v, object.at("replicas"), 1, max_repeat));
  }
  if (const json* v = object.optional("min_replicas")) {
    workload.min_replicas = static_cast<std::int32_t>(
        read_integer(*v, object.at("min_replicas"), 1, workload.replicas));
  }
  const ObjectReader demand(object.required("demand"), object.at("demand"),
                            {"whole_devices", "resources"});
  if (const json* v = demand.optional("whole_devices")) {
    workload.demand.whole_devices =
        static_cast<std::int32_t>(read_integer(*v, demand.at("whole_devices"), 0, max_repeat));
  }
  workload.demand.resources = schema.zeros();
  if (const json* v = demand.optional("resources")) {
    workload.demand.resources = read_resources(*v, demand.at("resources"), schema);
    for (std::size_t i = 0; i < schema.size(); ++i) {
      if (workload.demand.whole_devices > 0 && schema.is_device(i) &&
          workload.demand.resources(static_cast<Eigen::Index>(i)) > 0) {
        fail(key_path(demand.at("resources"), schema[i].name),
             "a workload asking for whole devices already gets every device dimension; give '" +
                 schema[i].name + "' only for a device share (whole_devices 0)");
      }
    }
  }
  if (const json* v = object.optional("replica_scope")) {
    workload.replica_scope = read_scope(*v, object.at("replica_scope"), topology);
    if (workload.replica_scope.mode != RequirementMode::none &&
        topology.level_index(workload.replica_scope.level) < topology.host_level()) {
      fail(key_path(object.at("replica_scope"), "level"),
           "a replica never spans hosts: the level must be '" +
               topology.levels()[topology.host_level()] + "' or deeper");
    }
  }
  if (const json* v = object.optional("gang_scope")) {
    workload.gang_scope = read_scope(*v, object.at("gang_scope"), topology);
    if (workload.gang_scope.mode != RequirementMode::none &&
        workload.replica_scope.mode != RequirementMode::none &&
        topology.level_index(workload.gang_scope.level) >
            topology.level_index(workload.replica_scope.level)) {
      fail(key_path(object.at("gang_scope"), "level"),
           "the gang scope cannot be tighter than the replica scope '" +
               workload.replica_scope.level + "'");
    }
  }
  if (const json* v = object.optional("cost"))
    workload.cost = read_cost_inputs(*v, object.at("cost"));
  try {
    validate(workload, topology);  // backstop: every rule above has its own path already
  } catch (const std::invalid_argument& error) {
    fail(object.path(), error.what());
  }
  return workload;
}

/// Free amount held by `domain` itself (not its children) as `state` stands.
[[nodiscard]] inline ResourceVector local_free(const Allocation& state, DomainId domain) {
  ResourceVector free = state.free(domain);
  for (DomainId child : state.topology().children(domain)) free -= state.free(child);
  return free;
}

/// " (held by workload 3 'x', workload 5)" for messages about a full domain.
[[nodiscard]] inline std::string holders(const Allocation& state, DomainId domain) {
  const Topology& topology = state.topology();
  const DomainId host = topology.ancestor_at(domain, topology.host_level());
  if (!host.valid()) return "";
  std::vector<WorkloadId> ids(state.occupants(host).begin(), state.occupants(host).end());
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> labels;
  for (WorkloadId id : ids) {
    for (const auto& replica : state.placement(id).replicas) {
      const bool here =
          std::any_of(replica.entries.begin(), replica.entries.end(),
                      [&](const PlacementEntry& entry) { return entry.domain == domain; });
      if (here) {
        labels.push_back(state.workload(id).label());
        break;
      }
    }
  }
  return labels.empty() ? std::string() : " (held by " + join(labels, 6) + ")";
}

/// An error message for a path that names no domain, pointing at the first missing part.
[[nodiscard]] inline std::string unknown_domain(const Topology& topology, const std::string& text) {
  if (!text.empty() && (text.back() == '/' || text.front() == '/')) {
    return "unknown domain '" + text + "': a domain path has no leading or trailing '/'";
  }
  DomainId at = Topology::root();
  std::string_view rest = text;
  std::string walked;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    const auto children = topology.children(at);
    const auto it = std::find_if(children.begin(), children.end(), [&](DomainId child) {
      return topology.local_name(child) == part;
    });
    if (it == children.end()) {
      std::vector<std::string> names;
      for (DomainId child : children) names.emplace_back(topology.local_name(child));
      return "unknown domain '" + text +
             "': " + (walked.empty() ? std::string("the root") : "'" + walked + "'") +
             " has no child '" + std::string(part) +
             "' (children: " + (names.empty() ? "none" : join(names, 8)) + ")" +
             suggestion(part, names);
    }
    walked += (walked.empty() ? "" : "/") + std::string(part);
    at = *it;
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  return "unknown domain '" + text + "'";
}

/// A placement `[[{"domain": path, "amount": {...}}, ...], ...]` checked entry by entry against
/// `state` (which must not yet hold the workload), so every error has its entry's path.
[[nodiscard]] inline Placement read_placement(const json& value, const std::string& path,
                                              const Workload& workload, const Allocation& state) {
  const Topology& topology = state.topology();
  const ResourceSchema& schema = topology.schema();
  if (!value.is_array())
    fail(path, "must be an array of replicas (each an array of entries) or \"auto\"");
  if (value.size() != static_cast<std::size_t>(workload.replicas)) {
    fail(path, "has " + std::to_string(value.size()) + " replicas, the workload has " +
                   std::to_string(workload.replicas));
  }
  Placement placement;
  std::vector<std::pair<DomainId, ResourceVector>> claimed;  // by earlier entries of this workload
  for (std::size_t r = 0; r < value.size(); ++r) {
    const std::string replica_path = index_path(path, r);
    if (!value[r].is_array()) fail(replica_path, "must be an array of placement entries");
    ReplicaPlacement replica;
    for (std::size_t e = 0; e < value[r].size(); ++e) {
      const ObjectReader entry(value[r][e], index_path(replica_path, e), {"domain", "amount"});
      const std::string text = read_string(entry.required("domain"), entry.at("domain"));
      const std::optional<DomainId> domain = topology.find(text);
      if (!domain) fail(entry.at("domain"), unknown_domain(topology, text));
      const bool device = topology.is_device(*domain);
      ResourceVector amount;
      if (const json* given = entry.optional("amount")) {
        amount = read_resources(*given, entry.at("amount"), schema);
      } else if (device) {
        amount = topology.local_capacity(*domain);  // the whole device
      } else {
        fail(entry.path(), "an entry on " + topology.describe(*domain) + " needs an 'amount'");
      }
      if (!amount.any()) fail(entry.at("amount"), "an entry must take something");
      for (std::size_t i = 0; i < schema.size(); ++i) {
        if (amount(static_cast<Eigen::Index>(i)) > 0 && schema.is_device(i) != device) {
          fail(key_path(entry.at("amount"), schema[i].name),
               "'" + schema[i].name + "' cannot be taken from " + topology.describe(*domain) +
                   " (a " +
                   (schema.is_device(i) ? "device dimension comes from a device"
                                        : "pooled dimension comes from a non-device domain") +
                   ")");
        }
      }
      auto it = std::find_if(claimed.begin(), claimed.end(),
                             [&](const auto& c) { return c.first == *domain; });
      if (it == claimed.end()) {
        claimed.emplace_back(*domain, schema.zeros());
        it = claimed.end() - 1;
      }
      const ResourceVector room = local_free(state, *domain) - it->second;
      if (!all_less_equal(amount, room)) {
        fail(entry.has("amount") ? entry.at("amount") : entry.at("domain"),
             "over capacity on " + topology.describe(*domain) + ": asks " + schema.format(amount) +
                 ", free " + schema.format(room.cwiseMax(0)) + holders(state, *domain));
      }
      it->second += amount;
      replica.entries.push_back({*domain, std::move(amount)});
    }
    placement.replicas.push_back(std::move(replica));
  }
  return placement;
}

/// `"cost_model"`: a name or `{"name": ..., parameters}`.
[[nodiscard]] inline CostModelSpec read_cost_model(const json& value, const std::string& path) {
  const bool is_name = value.is_string();
  const std::string name_path = is_name ? path : key_path(path, "name");
  std::string name;
  if (is_name) {
    name = value.get<std::string>();
  } else {
    if (!value.is_object()) fail(path, "must be a cost model name or an object with a 'name'");
    if (!value.contains("name")) fail(path, "missing required key 'name'");
    name = read_string(value["name"], name_path);
  }
  std::optional<CostModelSpec> spec = make_cost_model(name);
  if (!spec) {
    fail(name_path, "unknown cost model '" + name + "' (models: " + join(cost_model_names) + ")" +
                        suggestion(name, cost_model_names));
  }
  if (is_name) return *spec;
  if (auto* model = std::get_if<cost::priority_weighted>(&*spec)) {
    const ObjectReader object(value, path, {"name", "offset"});
    if (const json* v = object.optional("offset"))
      model->offset = read_number(*v, object.at("offset"));
  } else if (auto* model = std::get_if<cost::lost_work>(&*spec)) {
    const ObjectReader object(value, path, {"name", "floor"});
    if (const json* v = object.optional("floor"))
      model->floor = read_number(*v, object.at("floor"), 0.0);
  } else if (auto* model = std::get_if<cost::reload_time>(&*spec)) {
    const ObjectReader object(value, path, {"name", "bandwidth_gib_per_s", "floor"});
    if (const json* v = object.optional("bandwidth_gib_per_s")) {
      model->bandwidth_gib_per_s = read_number(*v, object.at("bandwidth_gib_per_s"), 0.0);
      if (model->bandwidth_gib_per_s == 0.0) fail(object.at("bandwidth_gib_per_s"), "must be > 0");
    }
    if (const json* v = object.optional("floor"))
      model->floor = read_number(*v, object.at("floor"), 0.0);
  } else if (auto* model = std::get_if<KubernetesOrderSpec>(&*spec)) {
    const ObjectReader object(value, path, {"name", "base"});
    if (const json* v = object.optional("base"))
      model->base = read_number(*v, object.at("base"), 2.0);
  } else {
    const ObjectReader object(value, path, {"name"});
  }
  return *spec;
}

/// `"solver"`: a name or `{"name": ..., "time_limit_ms": N, "node_limit": N}`.
[[nodiscard]] inline SolverSpec read_solver(const json& value, const std::string& path) {
  SolverSpec spec;
  std::string name_path = path;
  if (value.is_string()) {
    spec.name = value.get<std::string>();
  } else {
    const ObjectReader object(value, path, {"name", "time_limit_ms", "node_limit"});
    name_path = object.at("name");
    spec.name = read_string(object.required("name"), name_path);
    if (const json* v = object.optional("time_limit_ms")) {
      spec.time_limit_ms = read_integer(*v, object.at("time_limit_ms"), 0, max_time_limit_ms);
    }
    if (const json* v = object.optional("node_limit")) {
      spec.node_limit = read_unsigned(*v, object.at("node_limit"));
      if (*spec.node_limit == 0) fail(object.at("node_limit"), "must be >= 1");
    }
  }
  if (std::find(solver_names.begin(), solver_names.end(), spec.name) == solver_names.end()) {
    fail(name_path, "unknown solver '" + spec.name + "' (solvers: " + join(solver_names) + ")" +
                        suggestion(spec.name, solver_names));
  }
  return spec;
}

inline constexpr std::array<std::string_view, 11> workload_keys{
    "id",     "name",          "priority",   "preemptible", "replicas", "min_replicas",
    "demand", "replica_scope", "gang_scope", "cost",        "placement"};
inline constexpr std::array<std::string_view, 10> preemptor_keys{
    "id",           "name",   "priority",      "preemptible", "replicas",
    "min_replicas", "demand", "replica_scope", "gang_scope",  "cost"};

}  // namespace detail

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
  std::vector<std::pair<std::uint64_t, std::string>> ids;  // id -> path of its "id"
  const auto claim_id = [&](WorkloadId id, const std::string& at) {
    const auto it = std::find_if(ids.begin(), ids.end(),
                                 [&](const auto& known) { return known.first == id.value; });
    if (it != ids.end())
      fail(at, "id " + std::to_string(id.value) + " is already used at " + it->second);
    ids.emplace_back(id.value, at);
  };
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
        detail::read_placement(placement_value, entry.at("placement"), workload, state);
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

// ------------------------------------------------------------------------------------------------
// Writing

/// `{"gpu_milli": 1000, ...}` with the non-zero amounts only, by dimension name.
[[nodiscard]] inline nlohmann::json to_json(const ResourceVector& amounts,
                                            const ResourceSchema& schema) {
  nlohmann::json result = nlohmann::json::object();
  for (std::size_t i = 0; i < schema.size() && i < static_cast<std::size_t>(amounts.size()); ++i) {
    const Amount value = amounts(static_cast<Eigen::Index>(i));
    if (value != 0) result[schema[i].name] = value;
  }
  return result;
}

/// Whether `to_json(const Placement&, ...)` writes the amount of whole-device entries.
enum class DeviceAmounts : std::uint8_t {
  write,       ///< every entry carries its amount (plans: self-explanatory)
  omit_whole,  ///< whole devices are bare paths (snapshots: the reader fills them in)
};

/// A placement as replicas of `{"domain": path, "amount": {...}}`.
[[nodiscard]] inline nlohmann::json to_json(const Placement& placement, const Topology& topology,
                                            DeviceAmounts amounts = DeviceAmounts::write) {
  const bool omit_whole_devices = amounts == DeviceAmounts::omit_whole;
  nlohmann::json replicas = nlohmann::json::array();
  for (const auto& replica : placement.replicas) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& entry : replica.entries) {
      nlohmann::json item{{"domain", topology.path(entry.domain)}};
      const bool whole =
          topology.is_device(entry.domain) && entry.amount == topology.local_capacity(entry.domain);
      if (!(omit_whole_devices && whole)) item["amount"] = to_json(entry.amount, topology.schema());
      entries.push_back(std::move(item));
    }
    replicas.push_back(std::move(entries));
  }
  return replicas;
}

/// The nested form of a topology (schema, levels, device/host level, root with capacities,
/// children and affinity matrices); `load_snapshot` reads it back to an identical topology.
[[nodiscard]] inline nlohmann::json to_json(const Topology& topology) {
  nlohmann::json schema = nlohmann::json::array();
  for (const auto& dimension : topology.schema().dimensions()) {
    schema.push_back({{"name", dimension.name},
                      {"kind", dimension.kind == ResourceKind::device ? "device" : "pooled"}});
  }
  const auto domain_json = [&](const auto& self, DomainId domain) -> nlohmann::json {
    nlohmann::json result{{"level", topology.levels()[topology.level(domain)]},
                          {"name", std::string(topology.local_name(domain))}};
    if (topology.local_capacity(domain).any()) {
      result["capacity"] =
          to_json(ResourceVector(topology.local_capacity(domain)), topology.schema());
    }
    const auto children = topology.children(domain);
    if (!children.empty()) {
      nlohmann::json list = nlohmann::json::array();
      for (DomainId child : children) list.push_back(self(self, child));
      result["children"] = std::move(list);
    }
    if (topology.level(domain) == topology.host_level() && topology.has_affinity(domain)) {
      const auto devices = topology.domains_at(topology.device_level(), domain);
      nlohmann::json matrix = nlohmann::json::array();
      for (DomainId a : devices) {
        nlohmann::json row = nlohmann::json::array();
        for (DomainId b : devices) row.push_back(*topology.device_affinity(a, b));
        matrix.push_back(std::move(row));
      }
      result["affinity"] = std::move(matrix);
    }
    return result;
  };
  return {{"schema", std::move(schema)},
          {"levels", topology.levels()},
          {"device_level", topology.levels()[topology.device_level()]},
          {"host_level", topology.levels()[topology.host_level()]},
          {"root", domain_json(domain_json, Topology::root())}};
}

/// A workload's fields (no placement); defaults (no scope, no cost inputs) are left out.
[[nodiscard]] inline nlohmann::json to_json(const Workload& workload, const Topology& topology) {
  nlohmann::json result{{"id", workload.id.value},
                        {"priority", workload.priority},
                        {"preemptible", workload.preemptible},
                        {"replicas", workload.replicas}};
  if (!workload.name.empty()) result["name"] = workload.name;
  if (workload.min_replicas) result["min_replicas"] = *workload.min_replicas;
  nlohmann::json demand{{"whole_devices", workload.demand.whole_devices}};
  if (workload.demand.resources.size() != 0 && workload.demand.resources.any()) {
    demand["resources"] = to_json(workload.demand.resources, topology.schema());
  }
  result["demand"] = std::move(demand);
  const auto scope = [](const TopologyRequirement& requirement) -> nlohmann::json {
    return {
        {"mode", requirement.mode == RequirementMode::guaranteed ? "guaranteed" : "best_effort"},
        {"level", requirement.level}};
  };
  if (workload.replica_scope.mode != RequirementMode::none)
    result["replica_scope"] = scope(workload.replica_scope);
  if (workload.gang_scope.mode != RequirementMode::none)
    result["gang_scope"] = scope(workload.gang_scope);
  const CostInputs& cost = workload.cost;
  nlohmann::json inputs = nlohmann::json::object();
  if (cost.start_time_s != 0.0) inputs["start_time_s"] = cost.start_time_s;
  if (cost.seconds_since_checkpoint != 0.0)
    inputs["seconds_since_checkpoint"] = cost.seconds_since_checkpoint;
  if (!cost.model_id.empty()) inputs["model_id"] = cost.model_id;
  if (cost.model_size_gib != 0.0) inputs["model_size_gib"] = cost.model_size_gib;
  if (cost.extra_cost != 0.0) inputs["extra_cost"] = cost.extra_cost;
  if (!inputs.empty()) result["cost"] = std::move(inputs);
  return result;
}

/// A cost model spec: its name alone when its parameters are the defaults, else an object.
[[nodiscard]] inline nlohmann::json to_json(const CostModelSpec& spec) {
  nlohmann::json result{{"name", std::string(cost_model_name(spec))}};
  std::visit(
      [&](const auto& model) {
        using Model = std::decay_t<decltype(model)>;
        const Model defaults{};
        if constexpr (std::is_same_v<Model, cost::priority_weighted>) {
          if (model.offset != defaults.offset) result["offset"] = model.offset;
        } else if constexpr (std::is_same_v<Model, cost::lost_work>) {
          if (model.floor != defaults.floor) result["floor"] = model.floor;
        } else if constexpr (std::is_same_v<Model, cost::reload_time>) {
          if (model.bandwidth_gib_per_s != defaults.bandwidth_gib_per_s) {
            result["bandwidth_gib_per_s"] = model.bandwidth_gib_per_s;
          }
          if (model.floor != defaults.floor) result["floor"] = model.floor;
        } else if constexpr (std::is_same_v<Model, KubernetesOrderSpec>) {
          if (model.base != defaults.base) result["base"] = model.base;
        }
      },
      spec);
  return result.size() == 1 ? result["name"] : result;
}

/// A snapshot document (format "topopreempt-snapshot/1") that `load_snapshot` reads back to the
/// same topology, state (workloads in ascending id order, explicit placements) and preemptor.
/// The topology is always written in the nested form.
[[nodiscard]] inline nlohmann::json save_snapshot(const Snapshot& snapshot) {
  const Topology& topology = snapshot.state.topology();
  nlohmann::json workloads = nlohmann::json::array();
  for (WorkloadId id : snapshot.state.workload_ids()) {
    const Workload& workload = snapshot.state.workload(id);
    nlohmann::json item = to_json(workload, topology);
    item["placement"] = to_json(
        snapshot.state.placement(id), topology,
        workload.demand.whole_devices > 0 ? DeviceAmounts::omit_whole : DeviceAmounts::write);
    workloads.push_back(std::move(item));
  }
  nlohmann::json document{{"format", std::string(snapshot_format)},
                          {"topology", to_json(topology)},
                          {"workloads", std::move(workloads)},
                          {"preemptor", to_json(snapshot.preemptor, topology)}};
  if (!snapshot.description.empty()) document["description"] = snapshot.description;
  if (snapshot.cost_model) document["cost_model"] = to_json(*snapshot.cost_model);
  if (snapshot.solver) {
    nlohmann::json solver{{"name", snapshot.solver->name}};
    if (snapshot.solver->time_limit_ms) solver["time_limit_ms"] = *snapshot.solver->time_limit_ms;
    if (snapshot.solver->node_limit) solver["node_limit"] = *snapshot.solver->node_limit;
    document["solver"] = solver.size() == 1 ? solver["name"] : solver;
  }
  return document;
}

/// Writes `save_snapshot(snapshot)` to `path` (indented by `indent` spaces, trailing newline).
/// Throws `std::runtime_error` naming the file when it cannot be written.
inline void save_snapshot_file(const Snapshot& snapshot, const std::string& path, int indent = 2) {
  const std::string text = save_snapshot(snapshot).dump(indent) + "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for writing");
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

namespace detail {

/// A finite number, or null (JSON has no infinities).
[[nodiscard]] inline nlohmann::json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

[[nodiscard]] inline nlohmann::json plan_json(const PreemptionPlan& plan, const Topology& topology,
                                              const Allocation* state) {
  const auto level_name = [&](LevelIndex level) -> nlohmann::json {
    return level < topology.levels().size() ? nlohmann::json(topology.levels()[level])
                                            : nlohmann::json(nullptr);
  };
  const bool placed = plan.has_victims_plan() || plan.status == PlanStatus::no_preemption_needed;
  nlohmann::json victims = nlohmann::json::array();
  for (const Victim& victim : plan.victims) {
    nlohmann::json item{{"id", victim.id.value},
                        {"action", victim.action == VictimAction::evict ? "evict" : "shrink"},
                        {"cost", finite_or_null(victim.cost)},
                        {"reason", victim.reason}};
    if (victim.action == VictimAction::shrink) item["dropped_replicas"] = victim.dropped_replicas;
    if (state != nullptr && state->contains(victim.id)) {
      const Workload& workload = state->workload(victim.id);
      item["name"] = workload.name;
      item["priority"] = workload.priority;
      item["replicas"] = workload.replicas;
    }
    victims.push_back(std::move(item));
  }
  nlohmann::json rejected = nlohmann::json::array();
  for (const DomainVerdict& verdict : plan.rejected) {
    rejected.push_back({{"domain", verdict.domain.valid() && verdict.domain.value < topology.size()
                                       ? nlohmann::json(topology.path(verdict.domain))
                                       : nlohmann::json(nullptr)},
                        {"reason", verdict.reason}});
  }
  nlohmann::json downgrades = nlohmann::json::array();
  for (const Downgrade& downgrade : plan.downgrades) {
    downgrades.push_back(
        {{"domain", downgrade.domain.valid() && downgrade.domain.value < topology.size()
                        ? nlohmann::json(topology.path(downgrade.domain))
                        : nlohmann::json(nullptr)},
         {"reason", std::string(to_string(downgrade.reason))},
         {"detail", downgrade.detail}});
  }
  nlohmann::json dependencies = nlohmann::json::array();
  for (const DomainVersion& dependency : plan.dependencies) {
    // Hex text: a 64-bit digest does not survive readers that parse numbers as doubles.
    char version[17];
    std::snprintf(version, sizeof version, "%016llx",
                  static_cast<unsigned long long>(dependency.version));
    dependencies.push_back(
        {{"domain", dependency.domain.valid() && dependency.domain.value < topology.size()
                        ? nlohmann::json(topology.path(dependency.domain))
                        : nlohmann::json(nullptr)},
         {"version", std::string(version)}});
  }
  const SolverStatistics& s = plan.statistics;
  const bool target = plan.target_domain.valid() && plan.target_domain.value < topology.size();
  return {{"format", std::string(plan_format)},
          {"solver", plan.solver},
          {"status", std::string(to_string(plan.status))},
          {"victims", std::move(victims)},
          {"target_domain",
           target ? nlohmann::json(topology.path(plan.target_domain)) : nlohmann::json(nullptr)},
          {"target_level",
           target ? level_name(topology.level(plan.target_domain)) : nlohmann::json(nullptr)},
          {"placement", to_json(plan.placement, topology)},
          {"gang_level", placed ? level_name(plan.gang_level) : nlohmann::json(nullptr)},
          {"replica_level", placed ? level_name(plan.replica_level) : nlohmann::json(nullptr)},
          {"topology_satisfied", plan.topology_satisfied},
          {"cost", finite_or_null(plan.cost)},
          {"lower_bound", finite_or_null(plan.lower_bound)},
          {"gap", finite_or_null(plan.gap())},
          {"rejected", std::move(rejected)},
          {"rejected_total", plan.rejected_total},
          {"downgrades", std::move(downgrades)},
          {"explanation", plan.explanation},
          {"preemptor", plan.preemptor.value},
          {"dependencies", std::move(dependencies)},
          {"statistics",
           {{"domains_considered", s.domains_considered},
            {"domains_pruned", s.domains_pruned},
            {"domains_solved", s.domains_solved},
            {"nodes_explored", s.nodes_explored},
            {"dp_cells", s.dp_cells},
            {"victims_considered", s.victims_considered},
            {"seconds", finite_or_null(s.seconds)},
            {"limit_reached", s.limit_reached}}}};
}

}  // namespace detail

/// A plan as JSON (format "topopreempt-plan/1"): status, victims (id, action, dropped
/// replicas, cost, reason), target domain and placement by path, cost, lower bound, gap,
/// rejected domains, statistics and explanation. Domain paths come from `topology`.
[[nodiscard]] inline nlohmann::json to_json(const PreemptionPlan& plan, const Topology& topology) {
  return detail::plan_json(plan, topology, nullptr);
}

/// As above, and each victim also carries its name, priority and replica count from `state`
/// (the state the plan was computed on, before any victim was removed).
[[nodiscard]] inline nlohmann::json to_json(const PreemptionPlan& plan, const Allocation& state) {
  return detail::plan_json(plan, state.topology(), &state);
}

}  // namespace topopreempt::io
