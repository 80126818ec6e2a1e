// SPDX-License-Identifier: MIT
// The editable topology behind tp_cluster_define / add_domain / remove_domain / seal.
#include <algorithm>
#include <utility>

#include "c_api_internal.hpp"

namespace topopreempt_c {

TopologySpec TopologySpec::from(const tp::Topology& topology) {
  TopologySpec spec;
  spec.levels = topology.levels();
  spec.schema = topology.schema();
  spec.device_level = topology.device_level();
  spec.host_level = topology.host_level();
  spec.by_parent_and_name.reserve(topology.size());
  // Pre-order ids: a parent always comes before its children, so index i is DomainId i.
  for (std::uint32_t id = 0; id < topology.size(); ++id) {
    const tp::DomainId d{id};
    SpecDomain domain;
    domain.name = std::string(topology.local_name(d));
    domain.level = topology.level(d);
    domain.capacity = topology.local_capacity(d);
    if (id != 0) {
      domain.parent = topology.parent(d).value;
      spec.domains[domain.parent].children.push_back(id);
      spec.by_parent_and_name.emplace(key(domain.parent, domain.name), id);
    }
    if (domain.level == spec.host_level && topology.has_affinity(d)) {
      const auto devices = topology.domains_at(spec.device_level, d);
      Eigen::MatrixXd matrix(static_cast<Eigen::Index>(devices.size()),
                             static_cast<Eigen::Index>(devices.size()));
      for (std::size_t a = 0; a < devices.size(); ++a) {
        for (std::size_t b = 0; b < devices.size(); ++b) {
          matrix(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) =
              topology.device_affinity(devices[a], devices[b]).value_or(0.0);
        }
      }
      domain.affinity = std::move(matrix);
    }
    spec.domains.push_back(std::move(domain));
  }
  spec.sealed_size = topology.size();
  return spec;
}

std::string TopologySpec::key(std::uint32_t parent, std::string_view name) {
  // Short keys stay in the string's inline buffer: no allocation for most domains.
  std::string text = std::to_string(parent);
  text += '/';
  text += name;
  return text;
}

bool TopologySpec::valid_path(std::string_view path) {
  if (path.empty()) return false;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t slash = path.find('/', begin);
    if (!tp::is_valid_domain_name(path.substr(begin, slash - begin))) return false;
    if (slash == std::string_view::npos) return true;
    begin = slash + 1;
  }
}

std::optional<std::uint32_t> TopologySpec::find(std::string_view path, std::uint32_t from) const {
  if (path.empty()) return from;
  if (!valid_path(path)) return std::nullopt;
  std::uint32_t at = from;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t slash = path.find('/', begin);
    const auto it = by_parent_and_name.find(key(at, path.substr(begin, slash - begin)));
    if (it == by_parent_and_name.end()) return std::nullopt;
    at = it->second;
    if (slash == std::string_view::npos) return at;
    begin = slash + 1;
  }
}

std::string TopologySpec::path_of(std::uint32_t index) const {
  std::vector<const std::string*> parts;
  for (std::uint32_t at = index; at != 0; at = domains[at].parent)
    parts.push_back(&domains[at].name);
  std::string text;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!text.empty()) text += '/';
    text += **it;
  }
  return text;
}

std::uint32_t TopologySpec::add(std::string_view path, std::string_view level,
                                tp::ResourceVector capacity) {
  const std::string quoted = "'" + std::string(path) + "'";
  const std::size_t slash = path.rfind('/');
  const std::string_view parent_path =
      slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (!valid_path(path)) {
    fail(TP_E_INVALID, "domain " + quoted + ": a path is names joined by '/', none empty");
  }
  const auto parent = find(parent_path);
  if (!parent) {
    fail(TP_E_NOT_FOUND,
         "domain " + quoted + ": no parent domain '" + std::string(parent_path) + "'");
  }
  const auto level_it = std::find(levels.begin(), levels.end(), level);
  if (level_it == levels.end()) {
    std::string known;
    for (const auto& name_of_level : levels) known += (known.empty() ? "" : ", ") + name_of_level;
    fail(TP_E_INVALID, "domain " + quoted + ": unknown level '" + std::string(level) +
                           "' (levels: " + known + ")");
  }
  const auto level_index = static_cast<tp::LevelIndex>(level_it - levels.begin());
  const SpecDomain& parent_domain = domains[*parent];
  if (parent_domain.level == device_level) {
    fail(TP_E_INVALID, "domain " + quoted + ": its parent is a device (" + levels[device_level] +
                           "), and devices are leaves");
  }
  if (level_index <= parent_domain.level) {
    fail(TP_E_INVALID, "domain " + quoted + " at level '" + std::string(level) +
                           "' must be deeper than its parent's level '" +
                           levels[parent_domain.level] + "'");
  }
  const std::string sibling_key = key(*parent, name);
  if (by_parent_and_name.contains(sibling_key)) {
    fail(TP_E_CONFLICT, "domain " + quoted + " already exists");
  }
  for (std::size_t dim = 0; dim < schema.size(); ++dim) {
    if (capacity(static_cast<Eigen::Index>(dim)) > 0 &&
        schema.is_device(dim) != (level_index == device_level)) {
      fail(TP_E_INVALID,
           "domain " + quoted + ": '" + schema[dim].name + "' is a " +
               (schema.is_device(dim) ? "device" : "pooled") + " dimension, which only " +
               (schema.is_device(dim) ? "devices" : "domains that are not devices") + " may hold");
    }
  }
  if (domains.size() >= no_index - 1) fail(TP_E_INVALID, "too many domains");

  const auto index = static_cast<std::uint32_t>(domains.size());
  SpecDomain domain;
  domain.name = std::string(name);
  domain.level = level_index;
  domain.parent = *parent;
  domain.capacity = std::move(capacity);
  domains.push_back(std::move(domain));
  try {  // strong guarantee: undo what was done if a later step runs out of memory
    domains[*parent].children.push_back(index);
    try {
      by_parent_and_name.emplace(sibling_key, index);
    } catch (...) {
      domains[*parent].children.pop_back();
      throw;
    }
  } catch (...) {
    domains.pop_back();
    throw;
  }
  return index;
}

void TopologySpec::remove(std::uint32_t index) {
  std::vector<std::uint32_t> subtree{index};
  for (std::size_t i = 0; i < subtree.size(); ++i) {
    for (const std::uint32_t child : domains[subtree[i]].children) {
      if (domains[child].alive) subtree.push_back(child);
    }
  }
  // Nothing below throws: erase by key and flags only.
  for (const std::uint32_t d : subtree) {
    const auto it = by_parent_and_name.find(key(domains[d].parent, domains[d].name));
    if (it != by_parent_and_name.end() && it->second == d) by_parent_and_name.erase(it);
    domains[d].alive = false;
  }
}

tp::Topology TopologySpec::build(std::vector<std::uint32_t>& spec_to_id) const {
  tp::TopologyBuilder builder(levels, schema, levels[device_level], levels[host_level],
                              domains[0].name);
  spec_to_id.assign(domains.size(), no_index);
  spec_to_id[0] = 0;
  if (domains[0].capacity.size() != 0 && domains[0].capacity.any()) {
    builder.set_root_capacity(domains[0].capacity);
  }
  // Adding in pre-order (children in insertion order) makes each builder handle the final
  // pre-order DomainId: build() numbers the same tree in the same order.
  std::vector<std::pair<std::uint32_t, std::size_t>> stack{{0U, 0U}};
  while (!stack.empty()) {
    auto& [at, next_child] = stack.back();
    const SpecDomain& domain = domains[at];
    if (next_child == domain.children.size()) {
      stack.pop_back();
      continue;
    }
    const std::uint32_t child = domain.children[next_child++];
    const SpecDomain& child_domain = domains[child];
    if (!child_domain.alive) continue;
    const auto handle =
        builder.add(tp::TopologyBuilder::Handle{spec_to_id[at]}, levels[child_domain.level],
                    child_domain.name, child_domain.capacity);
    spec_to_id[child] = handle.index;
    if (child_domain.affinity) builder.set_affinity(handle, *child_domain.affinity);
    stack.emplace_back(child, 0U);
  }
  return builder.build();
}

}  // namespace topopreempt_c
