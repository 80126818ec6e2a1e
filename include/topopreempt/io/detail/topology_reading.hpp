// SPDX-License-Identifier: MIT
#pragma once
/// @file topology_reading.hpp
/// The topology part of a snapshot: nested domain trees (with `count`), machine shapes (built-in
/// and custom), `cluster_of` and the openb node list form, with every count checked before a
/// domain is built.

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

#include "topopreempt/io/detail/json_reading.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt::io::detail {

using nlohmann::json;

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

}  // namespace topopreempt::io::detail
