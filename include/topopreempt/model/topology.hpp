// SPDX-License-Identifier: MIT
#pragma once
/// @file topology.hpp
/// The cluster as a rooted tree of domains (cluster > rack > node > socket > numa > ... > gpu).

#include <Eigen/Core>
#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topopreempt/model/resources.hpp"

namespace topopreempt {

/// Identifies a domain of one `Topology`: its position in depth-first pre-order, so the subtree
/// of a domain is the contiguous id range [id, subtree_end(id)).
struct DomainId {
  /// The domain's index in the topology (pre-order); the maximum means "no domain".
  std::uint32_t value = std::numeric_limits<std::uint32_t>::max();
  /// Ordered by index: pre-order, so a subtree is a contiguous range.
  friend constexpr auto operator<=>(DomainId, DomainId) = default;
  /// False for the default-constructed "no domain".
  [[nodiscard]] constexpr bool valid() const noexcept {
    return value != std::numeric_limits<std::uint32_t>::max();
  }
};

/// Index of a level; 0 is the root level, larger is deeper.
using LevelIndex = std::uint8_t;

/// Immutable tree of domains with named, ordered levels, per-domain capacities over a
/// `ResourceSchema`, and device leaves. Built by `TopologyBuilder` or the shapes in
/// `machine_shapes.hpp`.
///
/// Capacities: every domain has a *local* capacity (devices hold device dimensions, inner
/// domains hold pooled dimensions) and an *aggregated* capacity (local plus all descendants).
///
/// Thread-safety: immutable after construction; any number of threads may read one instance.
class Topology {
 public:
  /// Number of domains.
  [[nodiscard]] std::size_t size() const noexcept { return level_.size(); }
  /// The root domain (id 0).
  [[nodiscard]] static constexpr DomainId root() noexcept { return DomainId{0}; }
  /// Level names, root first.
  [[nodiscard]] const std::vector<std::string>& levels() const noexcept { return levels_; }
  /// The resource schema.
  [[nodiscard]] const ResourceSchema& schema() const noexcept { return schema_; }
  /// Level index of a level name, or nullopt.
  [[nodiscard]] std::optional<LevelIndex> find_level(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      if (levels_[i] == name) return static_cast<LevelIndex>(i);
    }
    return std::nullopt;
  }
  /// Level index of a level name; throws `std::invalid_argument` naming it (and the known
  /// levels) when it does not exist.
  [[nodiscard]] LevelIndex level_index(std::string_view name) const {
    if (auto level = find_level(name)) return *level;
    std::string known;
    for (const auto& level : levels_) known += (known.empty() ? "" : ", ") + level;
    throw std::invalid_argument("unknown topology level '" + std::string(name) +
                                "' (levels: " + known + ")");
  }
  /// The level of device leaves (e.g. "gpu").
  [[nodiscard]] LevelIndex device_level() const noexcept { return device_level_; }
  /// The level a single replica never leaves (e.g. "node": a pod runs on one machine).
  [[nodiscard]] LevelIndex host_level() const noexcept { return host_level_; }

  // The structural accessors below sit on every solver's hot path, so they do not check
  // their argument: d must be a domain of this topology (`valid_domain(d)`). Everything that
  // takes ids from users (Allocation::add, builders, snapshot loading) checks them first.

  /// Whether d names a domain of this topology.
  [[nodiscard]] bool valid_domain(DomainId d) const noexcept { return d.value < level_.size(); }
  /// Level of a domain.
  [[nodiscard]] LevelIndex level(DomainId d) const noexcept { return level_[d.value]; }
  /// Parent of a domain (invalid for the root).
  [[nodiscard]] DomainId parent(DomainId d) const noexcept { return DomainId{parent_[d.value]}; }
  /// One past the last domain of d's subtree, in pre-order.
  [[nodiscard]] DomainId subtree_end(DomainId d) const noexcept {
    return DomainId{subtree_end_[d.value]};
  }
  /// Whether `inner` lies in the subtree of `outer` (a domain contains itself).
  [[nodiscard]] bool contains(DomainId outer, DomainId inner) const noexcept {
    return outer.value <= inner.value && inner.value < subtree_end_[outer.value];
  }
  /// Whether d is a device leaf.
  [[nodiscard]] bool is_device(DomainId d) const noexcept { return level_[d.value] == device_level_; }
  /// Number of device leaves in d's subtree.
  [[nodiscard]] std::uint32_t device_count(DomainId d) const {
    return device_count_[checked(d)];
  }
  /// The domain's own name among its siblings, e.g. "gpu3" or "node-0042".
  [[nodiscard]] std::string_view local_name(DomainId d) const {
    const std::size_t i = checked(d);
    return std::string_view(names_).substr(name_begin_[i], name_begin_[i + 1] - name_begin_[i]);
  }
  /// Full path below the root, e.g. "rack0/node3/socket1/numa2/gpu5"; the root is "".
  [[nodiscard]] std::string path(DomainId d) const {
    std::vector<std::string_view> parts;
    for (DomainId at = d; at != root(); at = parent(at)) parts.push_back(local_name(at));
    std::string text;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      if (!text.empty()) text += '/';
      text += *it;
    }
    return text;
  }
  /// A readable label "level path" used in errors and explanations, e.g. "numa rack0/node3/numa2".
  [[nodiscard]] std::string describe(DomainId d) const {
    return levels_[level(d)] + " " + (d == root() ? std::string(local_name(d)) : path(d));
  }
  /// Looks a domain up by the path `path()` prints; nullopt when there is none (including a
  /// path with an empty part: a leading, trailing or doubled '/').
  [[nodiscard]] std::optional<DomainId> find(std::string_view path_text) const {
    if (!path_text.empty() && (path_text.front() == '/' || path_text.back() == '/')) return std::nullopt;
    DomainId at = root();
    while (!path_text.empty()) {
      const std::size_t slash = path_text.find('/');
      const std::string_view part = path_text.substr(0, slash);
      std::optional<DomainId> next;
      for (DomainId child : children(at)) {
        if (local_name(child) == part) {
          next = child;
          break;
        }
      }
      if (!next) return std::nullopt;
      at = *next;
      path_text = slash == std::string_view::npos ? std::string_view() : path_text.substr(slash + 1);
    }
    return at;
  }
  /// Children of d in order.
  [[nodiscard]] std::vector<DomainId> children(DomainId d) const {
    std::vector<DomainId> result;
    const std::uint32_t end = subtree_end_[checked(d)];
    for (std::uint32_t c = d.value + 1; c < end; c = subtree_end_[c]) result.push_back({c});
    return result;
  }
  /// Ancestor of d at `level_index`, or d itself if it is at that level; invalid if d lies above
  /// that level or the branch skips it.
  [[nodiscard]] DomainId ancestor_at(DomainId d, LevelIndex level_index) const {
    DomainId at = d;
    while (at.valid() && level(at) > level_index) at = parent(at);
    return (at.valid() && level(at) == level_index) ? at : DomainId{};
  }
  /// Whether d lies inside one domain of `level_index` (is one, or descends from one). The rule
  /// of every guaranteed scope: a footprint at a deeper level whose branch skips `level_index`
  /// (an RTX 4090 server's GPU, beside its core groups) lies in no domain of that level.
  [[nodiscard]] bool lies_within_level(DomainId d, LevelIndex level_index) const {
    return level(d) == level_index || ancestor_at(d, level_index).valid();
  }
  /// All domains of a level, ascending (so those inside any subtree form a contiguous run).
  [[nodiscard]] std::span<const DomainId> domains_at(LevelIndex level_index) const {
    return by_level_.at(level_index);
  }
  /// The domains of `level_index` inside d's subtree (a sub-span of `domains_at`). O(1) when
  /// every domain of d's level holds the same number of domains of `level_index` (a regular
  /// tree: the span is found from `ordinal(d)` by arithmetic), else O(log n) (binary search).
  [[nodiscard]] std::span<const DomainId> domains_at(LevelIndex level_index, DomainId d) const {
    const auto& all = by_level_.at(level_index);
    const LevelIndex at = level_[checked(d)];
    if (level_index > at) {
      const std::uint32_t per_domain = per_domain_[std::size_t{at} * levels_.size() + level_index];
      if (per_domain != irregular) {
        return {all.data() + std::size_t{ordinal_[d.value]} * per_domain, per_domain};
      }
    } else if (level_index == at) {
      return {all.data() + ordinal_[d.value], 1};
    }
    return domains_at_by_search(all, d);
  }
  /// `domains_at(level_index, d)` by binary search, whatever the tree's shape (the reference
  /// the O(1) path is tested against).
  [[nodiscard]] std::span<const DomainId> domains_at_by_search(LevelIndex level_index,
                                                               DomainId d) const {
    (void)checked(d);
    return domains_at_by_search(by_level_.at(level_index), d);
  }
  /// Whether every domain of level `upper` holds the same number of domains of the deeper level
  /// `lower` and every domain of `lower` lies under one of `upper` (so `domains_at(lower, d)` is
  /// O(1) for d at `upper`).
  [[nodiscard]] bool is_regular(LevelIndex upper, LevelIndex lower) const {
    if (upper >= levels_.size() || lower >= levels_.size()) {
      throw std::out_of_range("level index out of range");
    }
    return upper < lower && per_domain_[std::size_t{upper} * levels_.size() + lower] != irregular;
  }
  /// Position of d among the domains of its level (`domains_at(level(d))[ordinal(d)] == d`).
  [[nodiscard]] std::uint32_t ordinal(DomainId d) const noexcept { return ordinal_[d.value]; }
  /// Lowest common ancestor of two domains.
  [[nodiscard]] DomainId lowest_common_ancestor(DomainId a, DomainId b) const {
    DomainId at = a;
    while (!contains(at, b)) at = parent(at);
    return at;
  }
  /// Level of the lowest common ancestor (e.g. "numa" for two GPUs of one NUMA node).
  [[nodiscard]] LevelIndex lca_level(DomainId a, DomainId b) const {
    return level(lowest_common_ancestor(a, b));
  }

  /// Local capacity (what the domain itself holds, not its descendants). Derived from the
  /// aggregated capacities (one matrix fewer: a 10,000-node cluster saves ~7 MiB); costs
  /// O(children).
  [[nodiscard]] ResourceVector local_capacity(DomainId d) const {
    ResourceVector local = capacity_.col(checked_index(d));
    if (level_[d.value] == device_level_) return local;
    for (std::uint32_t c = d.value + 1; c < subtree_end_[d.value]; c = subtree_end_[c]) {
      local -= capacity_.col(static_cast<Eigen::Index>(c));
    }
    return local;
  }
  /// Local capacity of one dimension.
  [[nodiscard]] Amount local_capacity(DomainId d, std::size_t dim) const {
    const auto row = static_cast<Eigen::Index>(dim);
    Amount local = capacity_(row, checked_index(d));
    if (level_[d.value] == device_level_) return local;
    for (std::uint32_t c = d.value + 1; c < subtree_end_[d.value]; c = subtree_end_[c]) {
      local -= capacity_(row, static_cast<Eigen::Index>(c));
    }
    return local;
  }
  /// Aggregated capacity (local plus all descendants).
  [[nodiscard]] auto capacity(DomainId d) const { return capacity_.col(checked_index(d)); }
  /// Aggregated capacities, one column per domain (dimensions x domains).
  [[nodiscard]] const Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic>& capacities()
      const noexcept {
    return capacity_;
  }

  /// Affinity between two devices of the same host (e.g. NVLink GB/s), or nullopt when no
  /// matrix was given for that host. Higher is better; used to rank best-effort placements.
  [[nodiscard]] std::optional<double> device_affinity(DomainId a, DomainId b) const {
    const DomainId host_a = ancestor_at(a, host_level_);
    if (!host_a.valid() || host_a != ancestor_at(b, host_level_)) return std::nullopt;
    const std::uint32_t matrix =
        host_affinity_.empty() ? no_matrix : host_affinity_[ordinal_[host_a.value]];
    if (matrix == no_matrix) return std::nullopt;
    return affinity_matrices_[matrix](device_ordinal_[a.value], device_ordinal_[b.value]);
  }
  /// Whether the host containing d has an affinity matrix.
  [[nodiscard]] bool has_affinity(DomainId host) const {
    return !host_affinity_.empty() && host.valid() && host.value < level_.size() &&
           level_[host.value] == host_level_ && host_affinity_[ordinal_[host.value]] != no_matrix;
  }
  /// Ordinal of a device among the devices of its host (pre-order), as the affinity matrix uses.
  [[nodiscard]] std::uint32_t device_ordinal(DomainId device) const {
    return device_ordinal_[checked(device)];
  }

  /// Bytes held by this object (for memory reports).
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    std::size_t bytes = sizeof(*this) + names_.capacity() +
                        name_begin_.capacity() * sizeof(std::uint32_t) +
                        level_.capacity() + parent_.capacity() * 4 + subtree_end_.capacity() * 4 +
                        device_count_.capacity() * 4 + device_ordinal_.capacity() * 4 + ordinal_.capacity() * 4 +
                        host_affinity_.capacity() * 4 + per_domain_.capacity() * 4 +
                        static_cast<std::size_t>(capacity_.size()) * sizeof(Amount);
    for (const auto& level : by_level_) bytes += level.capacity() * sizeof(DomainId);
    for (const auto& matrix : affinity_matrices_) {
      bytes += static_cast<std::size_t>(matrix.size()) * sizeof(double);
    }
    return bytes;
  }

 private:
  friend class TopologyBuilder;
  static constexpr std::uint32_t no_matrix = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t irregular = std::numeric_limits<std::uint32_t>::max();

  Topology(std::vector<std::string> levels, ResourceSchema schema)
      : levels_(std::move(levels)), schema_(std::move(schema)) {}

  [[nodiscard]] std::size_t checked(DomainId d) const {
    if (d.value >= level_.size()) {
      throw std::out_of_range("domain id " + std::to_string(d.value) + " is not in the topology (" +
                              std::to_string(level_.size()) + " domains)");
    }
    return d.value;
  }
  [[nodiscard]] Eigen::Index checked_index(DomainId d) const {
    return static_cast<Eigen::Index>(checked(d));
  }
  [[nodiscard]] std::span<const DomainId> domains_at_by_search(const std::vector<DomainId>& all,
                                                               DomainId d) const {
    const auto first = std::lower_bound(all.begin(), all.end(), d);
    const auto last = std::lower_bound(first, all.end(), DomainId{subtree_end_[d.value]});
    return {first, last};
  }
  /// Fills `per_domain_`: for levels upper < lower, the number of `lower` domains under each
  /// `upper` domain when that number is the same for all of them and every `lower` domain lies
  /// under one (checked at the run boundaries: O(levels^2 x domains of the upper levels)).
  void compute_regularity() {
    const std::size_t levels = levels_.size();
    per_domain_.assign(levels * levels, irregular);
    for (std::size_t upper = 0; upper < levels; ++upper) {
      const auto& tops = by_level_[upper];
      for (std::size_t lower = upper + 1; lower < levels; ++lower) {
        const auto& bottoms = by_level_[lower];
        if (tops.empty() || bottoms.size() % tops.size() != 0) continue;
        const std::size_t k = bottoms.size() / tops.size();
        bool regular = true;
        for (std::size_t i = 0; regular && i < tops.size() && k > 0; ++i) {
          const DomainId top = tops[i];
          regular = bottoms[i * k] > top && bottoms[i * k + k - 1].value < subtree_end_[top.value];
        }
        if (regular) per_domain_[upper * levels + lower] = static_cast<std::uint32_t>(k);
      }
    }
  }

  std::vector<std::string> levels_;
  ResourceSchema schema_;
  LevelIndex device_level_ = 0;
  LevelIndex host_level_ = 0;
  std::vector<LevelIndex> level_;
  std::vector<std::uint32_t> parent_;
  std::vector<std::uint32_t> subtree_end_;
  std::vector<std::uint32_t> device_count_;
  std::vector<std::uint32_t> device_ordinal_;
  std::vector<std::uint32_t> ordinal_;
  std::string names_;
  std::vector<std::uint32_t> name_begin_;
  std::vector<std::vector<DomainId>> by_level_;
  std::vector<std::uint32_t> per_domain_;  // [upper * levels + lower]: lower per upper, or irregular
  Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic> capacity_;
  std::vector<Eigen::MatrixXd> affinity_matrices_;
  std::vector<std::uint32_t> host_affinity_;  // per host ordinal (empty: no matrix at all)
};

/// Whether `name` can name a domain: non-empty and without '/' (the separator of domain paths,
/// so that every path names at most one domain).
[[nodiscard]] inline bool is_valid_domain_name(std::string_view name) noexcept {
  return !name.empty() && name.find('/') == std::string_view::npos;
}

/// Builds a `Topology` domain by domain. Domains may be added in any order under any existing
/// parent; `build()` renumbers them in depth-first pre-order (children keep insertion order).
///
/// Rules checked (each error names the domain): the root is at level 0; a child's level is
/// deeper than its parent's (levels may be skipped, e.g. GPUs directly under a NUMA node);
/// devices are leaves and hold only device dimensions; other domains hold only pooled
/// dimensions; sibling names are unique and contain no '/'; amounts are non-negative.
class TopologyBuilder {
 public:
  /// A domain being built (index in insertion order).
  struct Handle {
    /// Insertion index.
    std::uint32_t index = 0;
  };

  /// Starts a topology with `levels` (root first), `schema`, the name of the device level
  /// (leaves) and of the host level (a replica never spans two hosts). The root domain is
  /// created with `root_name` (non-empty, no '/', like every domain name; else
  /// `std::invalid_argument`).
  TopologyBuilder(std::vector<std::string> levels, ResourceSchema schema,
                  std::string_view device_level, std::string_view host_level,
                  std::string root_name = "root")
      : levels_(std::move(levels)), schema_(std::move(schema)) {
    if (levels_.empty() || levels_.size() > 64) {
      throw std::invalid_argument("a topology needs between 1 and 64 levels");
    }
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (levels_[i] == levels_[j]) {
          throw std::invalid_argument("topology level '" + levels_[i] + "' is declared twice");
        }
      }
    }
    device_level_ = level_of(device_level);
    host_level_ = level_of(host_level);
    if (host_level_ >= device_level_) {
      throw std::invalid_argument("host level '" + std::string(host_level) +
                                  "' must lie above device level '" + std::string(device_level) + "'");
    }
    if (!is_valid_domain_name(root_name)) {
      throw std::invalid_argument("root domain name '" + root_name +
                                  "' must be non-empty and contain no '/'");
    }
    names_ = std::move(root_name);
    capacities_.setZero(static_cast<Eigen::Index>(schema_.size()), 1);
    capacity_columns_ = 1;
    nodes_.push_back(PendingDomain{0, static_cast<std::uint32_t>(names_.size()), 0, none});
  }

  /// Makes room for `domains` domains in all (the root included) with names of about
  /// `name_bytes` bytes in all (0: 8 per domain), so that adding that many allocates nothing
  /// more: domains are stored flat (names in one buffer, capacities in one array), not one
  /// heap block each. Optional; changes nothing observable. Like every member, not
  /// thread-safe (a builder belongs to one thread).
  void reserve(std::size_t domains, std::size_t name_bytes = 0) {
    nodes_.reserve(domains);
    reserve_capacity_columns(domains);
    names_.reserve(name_bytes == 0 ? 8 * domains : name_bytes);
  }

  /// The root domain.
  [[nodiscard]] static constexpr Handle root() noexcept { return Handle{0}; }
  /// Level names.
  [[nodiscard]] const std::vector<std::string>& levels() const noexcept { return levels_; }
  /// The schema.
  [[nodiscard]] const ResourceSchema& schema() const noexcept { return schema_; }

  /// Adds a domain at `level` under `parent` with its own (local) capacity; an empty
  /// `local_capacity` means zero. Returns its handle.
  Handle add(Handle parent, std::string_view level, std::string name,
             const ResourceVector& local_capacity = ResourceVector()) {
    if (parent.index >= nodes_.size()) {
      throw std::invalid_argument("parent handle " + std::to_string(parent.index) +
                                  " does not exist (adding '" + name + "')");
    }
    const LevelIndex level_index = level_of(level);
    const PendingDomain& parent_domain = nodes_[parent.index];
    // Built only for an error: one string per domain was most of the cost of adding one.
    const auto label = [&name, level] { return "'" + name + "' (" + std::string(level) + ")"; };
    const std::string_view parent_name = name_of(parent.index);
    if (parent_domain.level == device_level_) {
      throw std::invalid_argument("domain " + label() + " cannot be placed under device '" +
                                  std::string(parent_name) + "': devices are leaves");
    }
    if (level_index <= parent_domain.level) {
      throw std::invalid_argument("domain " + label() + " must be deeper than its parent '" +
                                  std::string(parent_name) + "' (" +
                                  levels_[parent_domain.level] + ")");
    }
    if (!is_valid_domain_name(name)) {
      throw std::invalid_argument("domain name " + label() +
                                  " must be non-empty and contain no '/'");
    }
    // Few siblings are compared by name; a parent with many is hashed by (parent, name), so n
    // siblings cost O(n), not O(n^2). Hashing only those keeps the table small: 10 M domains
    // of 588,235 machines index only the machines, not every socket, NUMA node and GPU.
    const std::size_t key = sibling_key(parent.index, name);
    const auto exists = [&] {
      return std::invalid_argument("domain " + label() + " already exists under '" +
                                   std::string(parent_name) + "'");
    };
    if (parent_domain.child_count < indexed_siblings) {
      for (std::uint32_t sibling = parent_domain.first_child; sibling != none;
           sibling = nodes_[sibling].next_sibling) {
        if (name_of(sibling) == name) throw exists();
      }
    } else {
      for (auto [it, last] = siblings_.equal_range(key); it != last; ++it) {
        if (nodes_[it->second].parent == parent.index && name_of(it->second) == name) {
          throw exists();
        }
      }
    }
    if (local_capacity.size() != 0) check_capacity(label, level_index, local_capacity);
    if (nodes_.size() >= std::numeric_limits<std::uint32_t>::max() - 1 ||
        names_.size() + name.size() >= std::numeric_limits<std::uint32_t>::max()) {
      throw std::length_error("too many domains");
    }
    const auto index = static_cast<std::uint32_t>(nodes_.size());
    const std::size_t names_before = names_.size();
    try {  // strong guarantee: a failed insertion leaves no trace
      if (capacity_columns_ == static_cast<std::size_t>(capacities_.cols())) {
        reserve_capacity_columns(2 * capacity_columns_ + 16);
      }
      names_ += name;
      nodes_.push_back(PendingDomain{static_cast<std::uint32_t>(names_before),
                                     static_cast<std::uint32_t>(names_.size()), level_index,
                                     parent.index});
      try {
        index_siblings(parent.index, key, index);
      } catch (...) {
        nodes_.pop_back();
        throw;
      }
    } catch (...) {
      names_.resize(names_before);
      throw;
    }
    // No-throw: the column was made room for above.
    if (local_capacity.size() == 0) {
      capacities_.col(static_cast<Eigen::Index>(index)).setZero();
    } else {
      capacities_.col(static_cast<Eigen::Index>(index)) = local_capacity;
    }
    ++capacity_columns_;
    // No-throw: link the child last among its siblings.
    PendingDomain& parent_node = nodes_[parent.index];
    if (parent_node.last_child == none) {
      parent_node.first_child = index;
    } else {
      nodes_[parent_node.last_child].next_sibling = index;
    }
    parent_node.last_child = index;
    ++parent_node.child_count;
    return Handle{index};
  }

  /// Gives the root domain a pooled local capacity (rarely needed).
  void set_root_capacity(const ResourceVector& local_capacity) {
    check_capacity([] { return std::string("root"); }, 0, local_capacity);
    capacities_.col(0) = local_capacity;
  }

  /// Index of an affinity matrix registered with `intern_affinity`, for `set_affinity`.
  struct AffinityHandle {
    /// Index among the interned matrices.
    std::uint32_t index = 0;
  };

  /// Registers a device-affinity matrix once, for many hosts (e.g. every machine of one shape):
  /// identical matrices are shared, so 10,000 identical nodes store one 8x8 matrix. Found by a
  /// hash of the entries, so many distinct matrices cost O(n) comparisons, not O(n^2).
  /// Validated against each host it is attached to at `build()`.
  AffinityHandle intern_affinity(Eigen::MatrixXd matrix) {
    const std::size_t key = matrix_key(matrix);
    for (auto [it, last] = matrix_by_key_.equal_range(key); it != last; ++it) {
      const Eigen::MatrixXd& known = matrices_[it->second];
      if (known.rows() == matrix.rows() && known.cols() == matrix.cols() && known == matrix) {
        return AffinityHandle{it->second};
      }
    }
    const auto index = static_cast<std::uint32_t>(matrices_.size());
    matrices_.push_back(std::move(matrix));
    try {
      matrix_by_key_.emplace(key, index);
    } catch (...) {
      matrices_.pop_back();
      throw;
    }
    return AffinityHandle{index};
  }

  /// Attaches the registered matrix `matrix` to the host domain `host`: O(1) amortised, no
  /// copy of the matrix (one rack of 588,235 hosts used to take minutes).
  void set_affinity(Handle host, AffinityHandle matrix) {
    if (host.index >= nodes_.size() || nodes_[host.index].level != host_level_) {
      throw std::invalid_argument("affinity matrix must be attached to a domain of host level '" +
                                  levels_[host_level_] + "'");
    }
    if (matrix.index >= matrices_.size()) {
      throw std::invalid_argument("affinity handle " + std::to_string(matrix.index) +
                                  " was not registered with this builder");
    }
    affinity_.emplace_back(host.index, matrix.index);
  }

  /// Attaches a device-affinity matrix to the host domain `host` (square, one row per device of
  /// that host in insertion order, symmetric, finite). Validated at `build()`. For many hosts
  /// sharing one matrix, `intern_affinity` once and `set_affinity(host, handle)` per host.
  void set_affinity(Handle host, Eigen::MatrixXd matrix) {
    if (host.index >= nodes_.size() || nodes_[host.index].level != host_level_) {
      throw std::invalid_argument("affinity matrix must be attached to a domain of host level '" +
                                  levels_[host_level_] + "'");
    }
    // Room first (geometric growth, so n hosts cost O(n)): after interning, nothing can throw.
    if (affinity_.size() == affinity_.capacity()) affinity_.reserve(2 * affinity_.size() + 8);
    set_affinity(host, intern_affinity(std::move(matrix)));
  }

  /// Number of domains added so far (including the root).
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }

  /// Produces the immutable topology (pre-order ids). The builder is left empty. Strong
  /// guarantee: when this throws (a capacity overflow or a bad affinity matrix, naming the
  /// domain; `std::bad_alloc`) the builder is as it was, and may be corrected and built again.
  [[nodiscard]] Topology build() {
    Topology topology = build_topology();
    clear();
    return topology;
  }

 private:
  /// `build()` but for leaving the builder empty.
  [[nodiscard]] Topology build_topology() {
    Topology topology(levels_, schema_);
    const std::size_t n = nodes_.size();
    const auto dims = static_cast<Eigen::Index>(schema_.size());
    topology.device_level_ = device_level_;
    topology.host_level_ = host_level_;
    topology.level_.resize(n);
    topology.parent_.resize(n);
    topology.subtree_end_.resize(n);
    topology.device_count_.assign(n, 0);
    topology.device_ordinal_.assign(n, 0);
    topology.ordinal_.resize(n);
    topology.name_begin_.resize(n + 1);
    // Each level's list sized exactly: grown by doubling, the device list alone kept up to
    // half of itself as slack (tens of MiB at 1,000,000 nodes).
    std::vector<std::size_t> per_level(levels_.size(), 0);
    for (const PendingDomain& domain : nodes_) ++per_level[domain.level];
    topology.by_level_.resize(levels_.size());
    for (std::size_t level = 0; level < levels_.size(); ++level) {
      topology.by_level_[level].reserve(per_level[level]);
    }

    // Iterative pre-order walk: deep trees must not overflow the stack. Builders usually add
    // domains depth first (every shape and cluster does), so insertion order is already
    // pre-order: then ids are kept and the renumbering arrays (`new_id`, `order`) are never
    // made; they are filled only from the first domain found out of order.
    std::vector<std::uint32_t> new_id;
    std::vector<std::uint32_t> order;
    bool in_preorder = true;
    const auto renumbered = [&](std::uint32_t node) { return in_preorder ? node : new_id[node]; };
    const auto node_at = [&](std::uint32_t id) { return in_preorder ? id : order[id]; };
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack{{0U, nodes_[0].first_child}};
    std::uint32_t next = 1;  // the root keeps id 0
    while (!stack.empty()) {
      auto& [node, child] = stack.back();
      if (child != none) {
        const std::uint32_t c = child;
        child = nodes_[c].next_sibling;
        if (in_preorder && c != next) {  // first domain out of order: ids so far are kept
          new_id.resize(n);
          order.resize(n);
          std::iota(new_id.begin(), new_id.begin() + next, 0U);
          std::iota(order.begin(), order.begin() + next, 0U);
          in_preorder = false;
        }
        if (!in_preorder) {
          new_id[c] = next;
          order[next] = c;
        }
        ++next;
        stack.emplace_back(c, nodes_[c].first_child);
      } else {
        topology.subtree_end_[renumbered(node)] = next;
        stack.pop_back();
      }
    }
    if (in_preorder) {
      // Names back to back in insertion order are already the topology's; the capacity
      // matrix is handed over (shrunk in place to its used columns), not copied.
      topology.names_ = names_;
      capacities_.conservativeResize(dims, static_cast<Eigen::Index>(n));
      topology.capacity_ = std::move(capacities_);
      capacities_.resize(dims, 0);  // columns != capacity_columns_: handed over
    } else {
      topology.names_.reserve(names_.size());
      topology.capacity_.resize(dims, static_cast<Eigen::Index>(n));
    }
    for (std::uint32_t id = 0; id < n; ++id) {
      const PendingDomain& domain = nodes_[node_at(id)];
      topology.level_[id] = domain.level;
      topology.parent_[id] = domain.parent == none ? none : renumbered(domain.parent);
      if (in_preorder) {
        topology.name_begin_[id] = domain.name_begin;
      } else {
        topology.name_begin_[id] = static_cast<std::uint32_t>(topology.names_.size());
        topology.names_ += name_of(order[id]);
        topology.capacity_.col(id) = capacities_.col(static_cast<Eigen::Index>(order[id]));
      }
      auto& same_level = topology.by_level_[domain.level];
      topology.ordinal_[id] = static_cast<std::uint32_t>(same_level.size());
      same_level.push_back(DomainId{id});
      if (domain.level == device_level_) topology.device_count_[id] = 1;
    }
    topology.name_begin_[n] = static_cast<std::uint32_t>(topology.names_.size());
    // The capacities handed over are summed up the tree in place: domains [summed, n) have
    // been added into their parents. On a throw from here on, that is undone and the matrix
    // goes back to the builder, exactly as it was (strong guarantee).
    auto summed = static_cast<std::uint32_t>(n);
    try {
      topology.compute_regularity();
      aggregate_and_check(topology, summed, node_at, renumbered);
    } catch (...) {
      if (in_preorder) {
        // Undone in the reverse of the order summed (ascending ids): a domain's own column
        // never changes after it was added into its parent, so each subtraction is exact.
        for (std::uint32_t id = summed; id < n; ++id) {
          topology.capacity_.col(topology.parent_[id]) -= topology.capacity_.col(id);
        }
        capacities_ = std::move(topology.capacity_);
      }
      throw;
    }
    return topology;
  }

  /// Sums capacities and device counts bottom-up (lowering `summed` to the last domain added
  /// into its parent), numbers each host's devices and checks the affinity matrices. Throws,
  /// naming the domain, on a capacity overflow (before that domain is added: nothing partly
  /// summed) or a bad affinity matrix.
  template <class NodeAt, class Renumbered>
  void aggregate_and_check(Topology& topology, std::uint32_t& summed, const NodeAt& node_at,
                           const Renumbered& renumbered) const {
    const auto dims = static_cast<Eigen::Index>(schema_.size());
    // Children have larger pre-order ids than parents: one reverse sweep aggregates bottom-up.
    for (std::uint32_t id = summed; id-- > 1;) {
      const std::uint32_t parent = topology.parent_[id];
      for (Eigen::Index dim = 0; dim < dims; ++dim) {
        Amount total = 0;
        if (__builtin_add_overflow(topology.capacity_(dim, parent), topology.capacity_(dim, id),
                                   &total)) {
          throw std::overflow_error("capacity of '" + std::string(name_of(node_at(parent))) +
                                    "' overflows in '" +
                                    schema_[static_cast<std::size_t>(dim)].name + "'");
        }
      }
      topology.capacity_.col(parent) += topology.capacity_.col(id);
      topology.device_count_[parent] += topology.device_count_[id];
      summed = id;
    }
    for (DomainId host : topology.by_level_[host_level_]) {
      std::uint32_t ordinal = 0;
      for (std::uint32_t d = host.value; d < topology.subtree_end_[host.value]; ++d) {
        if (topology.level_[d] == device_level_) topology.device_ordinal_[d] = ordinal++;
      }
    }
    if (!affinity_.empty()) {
      topology.host_affinity_.assign(topology.by_level_[host_level_].size(), Topology::no_matrix);
      for (const auto& [host, matrix] : affinity_) {
        const std::uint32_t id = renumbered(host);
        const Eigen::MatrixXd& m = matrices_[matrix];
        const auto devices = static_cast<Eigen::Index>(topology.device_count_[id]);
        if (m.rows() != devices || m.cols() != devices || !m.allFinite() ||
            !m.isApprox(m.transpose(), 0.0)) {
          throw std::invalid_argument("affinity matrix of host '" + std::string(name_of(host)) +
                                      "' must be " +
                                      std::to_string(devices) + "x" + std::to_string(devices) +
                                      ", finite and symmetric");
        }
        topology.host_affinity_[topology.ordinal_[id]] = matrix;
      }
      topology.affinity_matrices_ = matrices_;
    }
  }

  /// Empties the builder (what `build()` leaves).
  void clear() noexcept {
    nodes_.clear();
    names_.clear();
    capacities_.resize(capacities_.rows(), 0);
    capacity_columns_ = 0;
    siblings_.clear();
    matrix_by_key_.clear();
  }

  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  /// A domain as added: flat (its name in `names_`, its capacity in `capacities_`, its
  /// children as a linked list), so adding one allocates nothing of its own.
  struct PendingDomain {
    std::uint32_t name_begin = 0;  // [name_begin, name_end) in names_
    std::uint32_t name_end = 0;
    LevelIndex level = 0;
    std::uint32_t parent = none;
    std::uint32_t first_child = none;
    std::uint32_t last_child = none;
    std::uint32_t next_sibling = none;
    std::uint32_t child_count = 0;
  };

  /// Room for `columns` capacity columns in all, growing to exactly that (reserve) or
  /// geometrically (add). Strong guarantee: on `std::bad_alloc` nothing changed.
  void reserve_capacity_columns(std::size_t columns) {
    if (columns <= static_cast<std::size_t>(capacities_.cols())) return;
    Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic> grown(capacities_.rows(),
                                                                static_cast<Eigen::Index>(columns));
    grown.leftCols(static_cast<Eigen::Index>(capacity_columns_)) =
        capacities_.leftCols(static_cast<Eigen::Index>(capacity_columns_));
    capacities_.swap(grown);
  }

  [[nodiscard]] std::string_view name_of(std::uint32_t node) const noexcept {
    return std::string_view(names_).substr(nodes_[node].name_begin,
                                           nodes_[node].name_end - nodes_[node].name_begin);
  }

  /// Parents with at least this many children have them hashed in `siblings_`.
  static constexpr std::size_t indexed_siblings = 16;

  /// Hashes the new child `index` (key `key`) of `parent` once the parent has many children,
  /// all of them the first time. All or nothing: a failed insertion removes those it made.
  /// Called before `index` is linked under `parent` (so the parent's list lacks it).
  void index_siblings(std::uint32_t parent, std::size_t key, std::uint32_t index) {
    const std::size_t children = std::size_t{nodes_[parent].child_count} + 1;
    if (children < indexed_siblings) return;
    if (children > indexed_siblings) {
      siblings_.emplace(key, index);
      return;
    }
    std::vector<decltype(siblings_)::iterator> made;
    made.reserve(children);
    try {
      for (std::uint32_t child = nodes_[parent].first_child; child != none;
           child = nodes_[child].next_sibling) {
        made.push_back(siblings_.emplace(sibling_key(parent, name_of(child)), child));
      }
      made.push_back(siblings_.emplace(key, index));
    } catch (...) {
      for (const auto& it : made) siblings_.erase(it);
      throw;
    }
  }

  [[nodiscard]] static std::size_t sibling_key(std::uint32_t parent, std::string_view name) noexcept {
    return std::hash<std::string_view>{}(name) ^ (std::size_t{parent} * 0x9e3779b97f4a7c15ULL);
  }
  [[nodiscard]] static std::size_t matrix_key(const Eigen::MatrixXd& matrix) noexcept {
    std::size_t key = static_cast<std::size_t>(matrix.rows()) * 0x9e3779b97f4a7c15ULL;
    for (Eigen::Index i = 0; i < matrix.size(); ++i) {
      const double value = matrix.data()[i] == 0.0 ? 0.0 : matrix.data()[i];  // -0.0 == 0.0
      key = (key ^ std::hash<double>{}(value)) * 0x100000001b3ULL;
    }
    return key;
  }

  [[nodiscard]] LevelIndex level_of(std::string_view name) const {
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      if (levels_[i] == name) return static_cast<LevelIndex>(i);
    }
    throw std::invalid_argument("unknown topology level '" + std::string(name) + "'");
  }

  template <class Label>
  void check_capacity(const Label& label, LevelIndex level_index,
                      const ResourceVector& capacity) const {
    if (static_cast<std::size_t>(capacity.size()) != schema_.size()) {
      throw std::invalid_argument("capacity of domain " + label() + " has " +
                                  std::to_string(capacity.size()) + " entries, the schema has " +
                                  std::to_string(schema_.size()));
    }
    const bool device = level_index == device_level_;
    for (std::size_t i = 0; i < schema_.size(); ++i) {
      const Amount value = capacity(static_cast<Eigen::Index>(i));
      if (value < 0) {
        throw std::invalid_argument("capacity of domain " + label() + " is negative in '" +
                                    schema_[i].name + "'");
      }
      if (value > 0 && schema_.is_device(i) != device) {
        throw std::invalid_argument(
            "domain " + label() + " holds '" + schema_[i].name + "', a " +
            (schema_.is_device(i) ? "device" : "pooled") + " dimension that only " +
            (schema_.is_device(i) ? "device leaves" : "non-device domains") + " may hold");
      }
    }
  }

  std::vector<std::string> levels_;
  ResourceSchema schema_;
  LevelIndex device_level_ = 0;
  LevelIndex host_level_ = 0;
  std::vector<PendingDomain> nodes_;
  std::string names_;              // every domain's name, back to back (insertion order)
  // One local capacity column per domain (insertion order); the first `capacity_columns_`
  // are used, the rest is room (untouched, so its pages are never faulted in).
  Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic> capacities_;
  std::size_t capacity_columns_ = 0;
  std::vector<Eigen::MatrixXd> matrices_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> affinity_;
  std::unordered_multimap<std::size_t, std::uint32_t> siblings_;       // (parent, name) -> node
  std::unordered_multimap<std::size_t, std::uint32_t> matrix_by_key_;  // entries -> matrix
};

}  // namespace topopreempt
