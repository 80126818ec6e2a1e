// SPDX-License-Identifier: MIT
#pragma once
/// @file trace.hpp
/// What the simulator replays: jobs with an arrival time, an amount of work, and what an eviction
/// costs them (checkpoint interval, restart delay). Plus a CSV loader for users' own traces.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::sim {

/// One job of a trace. `workload` says what it asks for (id, priority, preemptible, replicas,
/// elastic minimum, per-replica demand, topology scopes); the rest says when it comes and how
/// long it runs.
struct TraceJob {
  /// The job: its id, priority, demand and requirements.
  Workload workload{};
  double arrival_s = 0.0;   ///< when it enters the queue
  double duration_s = 0.0;  ///< work at full size: seconds it runs if never disturbed
  /// Progress is saved every `checkpoint_interval_s` seconds of work; an eviction loses the
  /// work since the last checkpoint. 0 = never checkpoints (an eviction loses everything).
  double checkpoint_interval_s = 0.0;
  /// An evicted job re-enters the queue this long after its eviction (teardown, reschedule,
  /// reload); its lost work is then redone.
  double restart_delay_s = 0.0;
};

/// A trace: jobs in any order (the simulator orders arrivals by time, then position).
using Trace = std::vector<TraceJob>;

/// Throws `std::invalid_argument` naming the job and field when `job` is not valid against
/// `topology`: the workload itself (see `validate`), negative or non-finite times, a zero
/// duration.
inline void validate(const TraceJob& job, const Topology& topology) {
  validate(job.workload, topology);
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(job.workload.label() + ": " + what);
  };
  const auto finite_non_negative = [](double value) { return value >= 0.0 && value < 1e300; };
  if (!finite_non_negative(job.arrival_s)) fail("arrival_s must be finite and >= 0");
  if (!finite_non_negative(job.duration_s) || job.duration_s == 0.0) {
    fail("duration_s must be finite and > 0");
  }
  if (!finite_non_negative(job.checkpoint_interval_s))
    fail("checkpoint_interval_s must be finite and >= 0");
  if (!finite_non_negative(job.restart_delay_s)) fail("restart_delay_s must be finite and >= 0");
}

namespace detail {

/// "guaranteed:numa", "best_effort:socket", "none" or "" -> a requirement.
[[nodiscard]] inline TopologyRequirement parse_scope(std::string_view text) {
  if (text.empty() || text == "none") return {};
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw std::invalid_argument("scope '" + std::string(text) +
                                "' must be none, guaranteed:<level> or best_effort:<level>");
  }
  const std::string_view mode = text.substr(0, colon);
  const std::string level(text.substr(colon + 1));
  if (level.empty()) throw std::invalid_argument("scope '" + std::string(text) + "' has no level");
  if (mode == "guaranteed") return TopologyRequirement::guaranteed(level);
  if (mode == "best_effort") return TopologyRequirement::best_effort(level);
  throw std::invalid_argument("scope mode '" + std::string(mode) +
                              "' must be guaranteed or best_effort");
}

[[nodiscard]] inline double parse_double(const std::string& text, std::string_view column) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw std::invalid_argument("column " + std::string(column) + ": '" + text +
                                "' is not a number");
  }
  return value;
}

[[nodiscard]] inline std::int64_t parse_integer(const std::string& text, std::string_view column) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw std::invalid_argument("column " + std::string(column) + ": '" + text +
                                "' is not an integer");
  }
  return value;
}

}  // namespace detail

/// The header a trace CSV must start with (see `load_trace_csv`).
inline constexpr std::string_view trace_csv_header =
    "id,name,arrival_s,duration_s,priority,preemptible,replicas,min_replicas,whole_gpus,"
    "gpu_milli,cpu_milli,memory_mib,replica_scope,gang_scope,checkpoint_interval_s,"
    "restart_delay_s";

/// Reads a trace from CSV with the columns of `trace_csv_header`, one job per line (lines
/// starting with '#' before the header are comments):
/// - `id` (unsigned, unique), `name` (free text without commas; may be empty);
/// - `arrival_s`, `duration_s` (seconds of work at full size, > 0);
/// - `priority` (int32; larger wins), `preemptible` (0 or 1);
/// - `replicas` (>= 1), `min_replicas` (empty = not elastic);
/// - `whole_gpus` per replica; or `gpu_milli` (< 1000) for a share of one GPU (then
///   `whole_gpus` = 0); `cpu_milli`, `memory_mib` per replica;
/// - `replica_scope`, `gang_scope`: `none` (or empty), `guaranteed:<level>` or
///   `best_effort:<level>`, levels of `topology` (e.g. `guaranteed:numa`);
/// - `checkpoint_interval_s` (0 = never), `restart_delay_s`.
/// The standard resource schema is assumed (`ResourceSchema::standard()`). Throws
/// `std::runtime_error` naming the file, line and column of the first bad field, a duplicate
/// id, or a job invalid against `topology`; nothing is returned partially.
[[nodiscard]] inline Trace load_trace_csv(const std::string& path, const Topology& topology) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open trace '" + path + "'");
  std::string line;
  std::size_t number = 1;
  // Comment lines ('#', e.g. a licence line) may precede the header.
  while (std::getline(in, line) && !line.empty() && line.front() == '#') ++number;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line != trace_csv_header) {
    throw std::runtime_error(path + ":" + std::to_string(number) + ": expected the header '" +
                             std::string(trace_csv_header) + "', got '" + line + "'");
  }
  const ResourceSchema& schema = topology.schema();
  const std::size_t gpu_milli = schema.index_of("gpu_milli");
  const std::size_t cpu_milli = schema.index_of("cpu_milli");
  const std::size_t memory_mib = schema.index_of("memory_mib");
  Trace trace;
  std::unordered_set<std::uint64_t> ids;  // membership only: no order leaks out
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (fields.size() != 16) {
      throw std::runtime_error(where + "expected 16 fields, got " + std::to_string(fields.size()));
    }
    try {
      TraceJob job;
      Workload& w = job.workload;
      const std::int64_t id = detail::parse_integer(fields[0], "id");
      if (id < 0) throw std::invalid_argument("column id: must be >= 0");
      w.id = WorkloadId{static_cast<std::uint64_t>(id)};
      w.name = fields[1];
      job.arrival_s = detail::parse_double(fields[2], "arrival_s");
      job.duration_s = detail::parse_double(fields[3], "duration_s");
      const std::int64_t priority = detail::parse_integer(fields[4], "priority");
      if (priority < INT32_MIN || priority > INT32_MAX) {
        throw std::invalid_argument("column priority: out of the int32 range");
      }
      w.priority = static_cast<std::int32_t>(priority);
      if (fields[5] != "0" && fields[5] != "1") {
        throw std::invalid_argument("column preemptible: '" + fields[5] + "' must be 0 or 1");
      }
      w.preemptible = fields[5] == "1";
      const auto small = [](std::int64_t value, std::string_view column) {
        if (value < 0 || value > 1'000'000) {
          throw std::invalid_argument("column " + std::string(column) + ": out of range");
        }
        return static_cast<std::int32_t>(value);
      };
      w.replicas = small(detail::parse_integer(fields[6], "replicas"), "replicas");
      if (!fields[7].empty()) {
        w.min_replicas = small(detail::parse_integer(fields[7], "min_replicas"), "min_replicas");
      }
      w.demand.whole_devices = small(detail::parse_integer(fields[8], "whole_gpus"), "whole_gpus");
      ResourceVector resources = schema.zeros();
      const auto amount = [&](std::size_t column, std::string_view name) {
        const std::int64_t value = detail::parse_integer(fields[column], name);
        if (value < 0) throw std::invalid_argument("column " + std::string(name) + ": negative");
        return value;
      };
      resources(static_cast<Eigen::Index>(gpu_milli)) = amount(9, "gpu_milli");
      resources(static_cast<Eigen::Index>(cpu_milli)) = amount(10, "cpu_milli");
      resources(static_cast<Eigen::Index>(memory_mib)) = amount(11, "memory_mib");
      w.demand.resources = resources;
      w.replica_scope = detail::parse_scope(fields[12]);
      w.gang_scope = detail::parse_scope(fields[13]);
      job.checkpoint_interval_s = detail::parse_double(fields[14], "checkpoint_interval_s");
      job.restart_delay_s = detail::parse_double(fields[15], "restart_delay_s");
      validate(job, topology);
      if (!ids.insert(w.id.value).second) {
        throw std::invalid_argument("duplicate id " + std::to_string(w.id.value));
      }
      trace.push_back(std::move(job));
    } catch (const std::exception& error) {
      throw std::runtime_error(where + error.what());
    }
  }
  return trace;
}

}  // namespace topopreempt::sim
