// SPDX-License-Identifier: MIT
#pragma once
/// @file json_reading.hpp
/// JSON reading primitives of the snapshot loader: paths for error messages, suggestions for
/// misspelt names, `ObjectReader` (unknown keys are errors), and readers of strings, integers,
/// numbers, resource vectors and the resource schema.

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

#include "topopreempt/io/snapshot_types.hpp"
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

}  // namespace topopreempt::io::detail
