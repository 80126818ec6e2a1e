// SPDX-License-Identifier: MIT
#pragma once
/// @file admission_checks.hpp
/// `Allocation::check_addable`: every check `Allocation::add` and `preempt_and_start` make
/// before a workload may start at a placement (the workload itself, replica count, entries,
/// amounts adding up to the demand, guaranteed scopes, anti-affinity, capacity), with errors
/// naming the workload, replica and domain at fault. Included by `allocation.hpp`; not a
/// header to include on its own.

#include <string>
#include <unordered_map>

#include "topopreempt/model/allocation.hpp"

namespace topopreempt {

namespace detail {

/// Why a footprint at `domain` breaks a guaranteed scope at `level`: it spans a wider domain,
/// or it lies deeper on a branch that has no domain of that level.
[[nodiscard]] inline std::string scope_breach(const Topology& topology, DomainId domain,
                                              LevelIndex level) {
  if (topology.level(domain) < level) return "it spans " + topology.describe(domain);
  return "it occupies " + topology.describe(domain) + ", which lies in no " +
         topology.levels()[level];
}

}  // namespace detail

/// Throws unless `workload` could start at `placement` once the local amounts in `released`
/// (domain, amount) are freed: the checks and messages of `add` on the state after the release.
inline void Allocation::check_addable(const Workload& workload, const Placement& placement,
                                      const Released& released) const {
  const Topology& topology = *topology_;
  const ResourceSchema& schema = topology.schema();
  validate(workload, topology);
  if (contains(workload.id)) throw std::invalid_argument(workload.label() + " is already running");
  if (placement.replicas.size() != static_cast<std::size_t>(workload.replicas)) {
    throw std::invalid_argument(workload.label() + " has " + std::to_string(workload.replicas) +
                                " replicas but the placement has " +
                                std::to_string(placement.replicas.size()));
  }
  const ResourceVector demand =
      workload.demand.resources.size() == 0 ? schema.zeros() : workload.demand.resources;
  const auto dims = static_cast<Eigen::Index>(schema.size());
  bool share = false;
  for (Eigen::Index i = 0; i < dims; ++i) {
    share = share || (schema.is_device(static_cast<std::size_t>(i)) && demand(i) > 0);
  }
  // Amounts the placement adds per domain, so two entries on one domain are checked together.
  std::vector<std::pair<DomainId, ResourceVector>> added;
  std::unordered_map<std::uint32_t, std::size_t> added_index;  // built once `added` is large
  const auto level_of_scope = [&](const TopologyRequirement& scope) -> std::optional<LevelIndex> {
    if (scope.mode != RequirementMode::guaranteed) return std::nullopt;
    return topology.level_index(scope.level);
  };
  const std::optional<LevelIndex> replica_level = level_of_scope(workload.replica_scope);
  const std::optional<LevelIndex> gang_level = level_of_scope(workload.gang_scope);
  DomainId gang_domain;
  // (host, replica) of every placed replica when anti-affinity is asked, checked after the loop.
  std::vector<std::pair<DomainId, std::size_t>> hosts_used;
  for (std::size_t r = 0; r < placement.replicas.size(); ++r) {
    // Messages are built only on failure: add() is on every scheduler's hot path.
    const auto where = [&] { return workload.label() + " replica " + std::to_string(r); };
    const auto& entries = placement.replicas[r].entries;
    if (entries.empty() && (demand.any() || workload.demand.whole_devices > 0)) {
      throw std::invalid_argument(where() + " has no placement entries");
    }
    ResourceVector pooled_sum = schema.zeros();
    std::int32_t whole = 0;
    std::int32_t shares = 0;
    DomainId replica_domain;
    for (const auto& entry : entries) {
      if (!entry.domain.valid() || entry.domain.value >= topology.size()) {
        throw std::invalid_argument(where() + " names unknown domain id " +
                                    std::to_string(entry.domain.value));
      }
      const auto at = [&] { return where() + " on " + topology.describe(entry.domain); };
      if (static_cast<std::size_t>(entry.amount.size()) != schema.size()) {
        throw std::invalid_argument(at() + ": amount has " + std::to_string(entry.amount.size()) +
                                    " entries, the schema " + std::to_string(schema.size()));
      }
      if ((entry.amount.array() < 0).any()) throw std::invalid_argument(at() + ": negative amount");
      if (!entry.amount.any()) throw std::invalid_argument(at() + ": empty entry");
      const bool device = topology.is_device(entry.domain);
      for (Eigen::Index i = 0; i < dims; ++i) {
        if (entry.amount(i) > 0 && schema.is_device(static_cast<std::size_t>(i)) != device) {
          throw std::invalid_argument(at() + ": '" + schema[static_cast<std::size_t>(i)].name +
                                      "' cannot be taken from this domain");
        }
      }
      if (device) {
        if (entry.amount == topology.local_capacity(entry.domain) && !share) {
          ++whole;
        } else if (share && entry.amount == demand.cwiseProduct(device_mask(schema))) {
          ++shares;
        } else {
          throw std::invalid_argument(at() +
                                      ": a device entry must be the whole device or exactly "
                                      "the replica's share");
        }
      } else if (!checked_accumulate(pooled_sum, entry.amount)) {
        throw std::invalid_argument(at() + ": the replica's pooled amounts overflow 64 bits");
      }
      // Small placements scan (the hot path); large ones (a gang of 400,000 replicas) look the
      // domain up in a hash index, so validation stays linear in the placement.
      auto it = added.end();
      if (added_index.empty() && added.size() < 32) {
        it = std::find_if(added.begin(), added.end(),
                          [&](const auto& item) { return item.first == entry.domain; });
      } else {
        if (added_index.empty()) {
          for (std::size_t k = 0; k < added.size(); ++k)
            added_index.emplace(added[k].first.value, k);
        }
        const auto known = added_index.find(entry.domain.value);
        if (known != added_index.end())
          it = added.begin() + static_cast<std::ptrdiff_t>(known->second);
      }
      if (it == added.end()) {
        if (!added_index.empty()) added_index.emplace(entry.domain.value, added.size());
        added.emplace_back(entry.domain, entry.amount);
      } else if (!checked_accumulate(it->second, entry.amount)) {
        throw std::invalid_argument(at() + ": the amounts placed on this domain overflow 64 bits");
      }
    }
    if (whole != workload.demand.whole_devices || shares != (share ? 1 : 0)) {
      throw std::invalid_argument(
          where() + " holds " + std::to_string(whole) + " whole devices and " +
          std::to_string(shares) + " shares, it needs " +
          std::to_string(workload.demand.whole_devices) + " and " + (share ? "1" : "0"));
    }
    if (pooled_sum != demand.cwiseProduct(ResourceVector::Ones(dims) - device_mask(schema))) {
      throw std::invalid_argument(
          where() + " holds pooled " + schema.format(pooled_sum) + " but needs " +
          schema.format(demand.cwiseProduct(ResourceVector::Ones(dims) - device_mask(schema))));
    }
    if (entries.empty()) continue;
    // Pools that enclose the replica's devices serve it without widening its scope.
    replica_domain = Placement::footprint_domain(topology, entries);
    if (topology.level(replica_domain) < topology.host_level()) {
      throw std::invalid_argument(where() + " spans more than one " +
                                  topology.levels()[topology.host_level()]);
    }
    // A scope holds only where the footprint lies inside one domain of its level: a deeper
    // domain on a branch that skips the level (a GPU beside the core groups) does not.
    if (replica_level && !topology.lies_within_level(replica_domain, *replica_level)) {
      throw std::invalid_argument(
          where() + " breaks its guaranteed replica scope '" + workload.replica_scope.level +
          "' (" + detail::scope_breach(topology, replica_domain, *replica_level) + ")");
    }
    gang_domain = gang_domain.valid() ? topology.lowest_common_ancestor(gang_domain, replica_domain)
                                      : replica_domain;
    if (workload.distinct_hosts) {
      hosts_used.emplace_back(topology.ancestor_at(replica_domain, topology.host_level()), r);
    }
  }
  if (hosts_used.size() > 1) {
    // Sorting keeps a 400,000-replica gang linearithmic; equal hosts end up side by side.
    std::sort(hosts_used.begin(), hosts_used.end());
    for (std::size_t i = 1; i < hosts_used.size(); ++i) {
      if (hosts_used[i].first != hosts_used[i - 1].first) continue;
      throw std::invalid_argument(workload.label() + " replicas " +
                                  std::to_string(hosts_used[i - 1].second) + " and " +
                                  std::to_string(hosts_used[i].second) + " share " +
                                  topology.describe(hosts_used[i].first) +
                                  ", but distinct_hosts puts each replica on its own " +
                                  topology.levels()[topology.host_level()]);
    }
  }
  if (gang_level && gang_domain.valid() && !topology.lies_within_level(gang_domain, *gang_level)) {
    throw std::invalid_argument(workload.label() + " breaks its guaranteed gang scope '" +
                                workload.gang_scope.level + "' (" +
                                detail::scope_breach(topology, gang_domain, *gang_level) + ")");
  }
  for (const auto& [domain, amount] : added) {
    ResourceVector room = topology.local_capacity(domain) - local_used(domain);
    for (const auto& [freed_domain, freed] : released) {
      if (freed_domain == domain) room += freed;
    }
    if (!all_less_equal(amount, room)) {
      throw std::invalid_argument(workload.label() + " over-commits " + topology.describe(domain) +
                                  ": asks " + schema.format(amount) + ", free " +
                                  schema.format(room));
    }
  }
}

}  // namespace topopreempt
