// SPDX-License-Identifier: MIT
#pragma once
/// @file resources.hpp
/// Named resource dimensions and the integer amount vectors the whole library computes with.

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace topopreempt {

/// One amount of one resource dimension (milli-GPUs, MiB, milli-cores, ...). Integers so that
/// sums are exact and plans are byte-for-byte reproducible.
using Amount = std::int64_t;

/// A column of amounts, one per dimension of a `ResourceSchema`. Always a materialised Eigen
/// vector (never an expression template) in public signatures.
using ResourceVector = Eigen::Matrix<Amount, Eigen::Dynamic, 1>;

/// Where a dimension's capacity lives.
enum class ResourceKind : std::uint8_t {
  /// On device leaves (a GPU's milli-share or memory). A replica asking for whole devices takes
  /// every device dimension of each device it gets; a replica asking for a share takes it from
  /// one single device.
  device,
  /// On inner domains (CPU and memory of a NUMA node). A replica may draw a pooled amount from
  /// several pools inside the domain its topology requirement confines it to.
  pooled,
};

/// One named dimension.
struct ResourceDimension {
  /// Its name, e.g. "gpu_milli".
  std::string name;
  /// Where its capacity lives: on devices or pooled on inner domains.
  ResourceKind kind = ResourceKind::pooled;
  /// Member-wise equality.
  friend bool operator==(const ResourceDimension&, const ResourceDimension&) = default;
};

/// The ordered set of resource dimensions of a topology. Immutable after construction.
/// Thread-safety: all members are const; share freely.
class ResourceSchema {
 public:
  /// Builds a schema; throws `std::invalid_argument` on an empty or duplicate name.
  explicit ResourceSchema(std::vector<ResourceDimension> dimensions)
      : dimensions_(std::move(dimensions)) {
    for (std::size_t i = 0; i < dimensions_.size(); ++i) {
      if (dimensions_[i].name.empty()) {
        throw std::invalid_argument("resource dimension #" + std::to_string(i) +
                                    " has an empty name");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (dimensions_[j].name == dimensions_[i].name) {
          throw std::invalid_argument("resource dimension '" + dimensions_[i].name +
                                      "' is declared twice");
        }
      }
    }
  }

  /// The schema used by every built-in machine shape: GPU share (1000 = one whole GPU) and GPU
  /// memory on devices; CPU (1000 = one core) and host memory pooled on NUMA nodes.
  [[nodiscard]] static ResourceSchema standard() {
    return ResourceSchema({{"gpu_milli", ResourceKind::device},
                           {"gpu_memory_mib", ResourceKind::device},
                           {"cpu_milli", ResourceKind::pooled},
                           {"memory_mib", ResourceKind::pooled}});
  }

  /// Number of dimensions.
  [[nodiscard]] std::size_t size() const noexcept { return dimensions_.size(); }
  /// Dimension `index`.
  [[nodiscard]] const ResourceDimension& operator[](std::size_t index) const {
    return dimensions_.at(index);
  }
  /// All dimensions in order.
  [[nodiscard]] const std::vector<ResourceDimension>& dimensions() const noexcept {
    return dimensions_;
  }
  /// Index of a dimension, or nullopt.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < dimensions_.size(); ++i) {
      if (dimensions_[i].name == name) return i;
    }
    return std::nullopt;
  }
  /// Index of a dimension; throws `std::invalid_argument` naming it when unknown.
  [[nodiscard]] std::size_t index_of(std::string_view name) const {
    if (auto index = find(name)) return *index;
    throw std::invalid_argument("unknown resource dimension '" + std::string(name) + "'");
  }
  /// An all-zero vector of this schema's size.
  [[nodiscard]] ResourceVector zeros() const {
    return ResourceVector::Zero(static_cast<Eigen::Index>(size()));
  }
  /// A vector from `{name, amount}` pairs; unnamed dimensions are zero. Throws on an unknown
  /// name, a name given twice, or a negative amount (nothing is clamped).
  [[nodiscard]] ResourceVector make(
      std::initializer_list<std::pair<std::string_view, Amount>> amounts) const {
    ResourceVector result = zeros();
    std::vector<bool> seen(size(), false);
    for (const auto& [name, amount] : amounts) {
      const std::size_t index = index_of(name);
      if (seen[index]) {
        throw std::invalid_argument("resource '" + std::string(name) + "' is given twice");
      }
      if (amount < 0) {
        throw std::invalid_argument("resource '" + std::string(name) +
                                    "' has a negative amount " + std::to_string(amount));
      }
      seen[index] = true;
      result(static_cast<Eigen::Index>(index)) = amount;
    }
    return result;
  }
  /// Whether dimension `index` is a device dimension.
  [[nodiscard]] bool is_device(std::size_t index) const {
    return dimensions_.at(index).kind == ResourceKind::device;
  }
  /// Human-readable `name=amount` list of the non-zero entries, e.g. "cpu_milli=4000".
  [[nodiscard]] std::string format(const ResourceVector& amounts) const {
    std::string text;
    for (std::size_t i = 0; i < size() && i < static_cast<std::size_t>(amounts.size()); ++i) {
      const Amount value = amounts(static_cast<Eigen::Index>(i));
      if (value == 0) continue;
      if (!text.empty()) text += ' ';
      text += dimensions_[i].name + '=' + std::to_string(value);
    }
    return text.empty() ? std::string("nothing") : text;
  }

  /// Same dimensions in the same order.
  friend bool operator==(const ResourceSchema&, const ResourceSchema&) = default;

 private:
  std::vector<ResourceDimension> dimensions_;
};

/// 1 for each device dimension of `schema`, 0 for each pooled one.
[[nodiscard]] inline ResourceVector device_mask(const ResourceSchema& schema) {
  ResourceVector mask = schema.zeros();
  for (std::size_t i = 0; i < schema.size(); ++i) {
    mask(static_cast<Eigen::Index>(i)) = schema.is_device(i) ? 1 : 0;
  }
  return mask;
}

/// Whether `a + b` leaves the range of `Amount` (signed overflow would be undefined behaviour).
[[nodiscard]] constexpr bool sum_overflows(Amount a, Amount b) noexcept {
  return b > 0 ? a > std::numeric_limits<Amount>::max() - b
               : a < std::numeric_limits<Amount>::min() - b;
}

/// Adds `amount` to `sum` entry by entry when no entry overflows and returns true; otherwise
/// returns false and leaves `sum` unchanged. Sizes must agree. Every sum of amounts that come
/// from outside the library (placements, demands) goes through this.
[[nodiscard]] inline bool checked_accumulate(ResourceVector& sum,
                                             const ResourceVector& amount) noexcept {
  for (Eigen::Index i = 0; i < sum.size(); ++i) {
    if (sum_overflows(sum(i), amount(i))) return false;
  }
  sum += amount;
  return true;
}

/// True when every entry of `a` is <= the matching entry of `b` (sizes must agree).
[[nodiscard]] inline bool all_less_equal(const ResourceVector& a, const ResourceVector& b) {
  return (a.array() <= b.array()).all();
}

}  // namespace topopreempt
