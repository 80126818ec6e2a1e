// SPDX-License-Identifier: MIT
// Experiment C. Two parts (see EXPERIMENTS.md):
// C1, Aryl (arXiv 2202.07896): an inference cluster with a diurnal load next to a training
//   cluster. Idle inference servers are loaned to training and reclaimed by
//   `capacity::reclaim_servers` when the inference load returns; elastic training jobs grow into
//   spare GPUs by `capacity::scale_elastic_jobs`. Runs without either, with each, and with both, on
//   the simulator's periodic controller (`sim::ClusterControl`); reports training queuing
//   time, JCT and cluster GPU usage beside Aryl's 1.53x / 1.50x / +26.9%.
// C2, Compass (arXiv 2402.17652): inference tasks over models of Zipf popularity on GPU
//   workers whose memory caches models; cache-aware placement (`model_cache::place_task`) against
//   cache-blind least-loaded and random placement; reports cache hit rate, model load time and
//   task latency.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.hpp"
#include "topopreempt/capacity/elastic_scaling.hpp"
#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/model_cache/model_cache.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/sim/sim.hpp"
#include "topopreempt/solvers/greedy.hpp"

using namespace topopreempt;

namespace {

constexpr double hour = 3600.0;
constexpr double day = 24.0 * hour;
constexpr std::uint64_t reservation_id_base = 1'000'000'000;  // ids of inference holds

// =============================================================================================
// C1: loaning and elastic scaling (Aryl)
// =============================================================================================

/// The setting of C1. Everything synthetic is drawn from `seed` (see EXPERIMENTS.md).
struct LoanSetting {
  int training_servers = 32;
  int inference_servers = 32;
  double days = 7.0;
  double training_load = 1.0;         ///< offered GPU load / training-cluster GPUs (daily mean)
  double training_amplitude = 0.5;    ///< submissions swing +- this much over the day
  double inference_mean = 0.55;       ///< mean fraction of inference servers busy
  double inference_amplitude = 0.35;  ///< diurnal swing: mean +- amplitude
  double control_interval_s = 300.0;
  std::uint64_t seed = 1;
};

/// Servers the inference cluster needs at `t`: a diurnal sine (low at midnight, peak at noon)
/// plus a seeded jitter of +-5% of the cluster per hour.
struct InferenceLoad {
  std::vector<double> jitter;  // one per hour
  int servers = 0;
  double mean = 0.0;
  double amplitude = 0.0;
  [[nodiscard]] int needed(double t) const {
    const auto h = std::min(static_cast<std::size_t>(t / hour), jitter.size() - 1);
    const double fraction =
        mean + amplitude * std::sin(2.0 * std::numbers::pi * t / day - std::numbers::pi / 2.0) +
        jitter[h];
    return std::clamp(static_cast<int>(std::lround(fraction * servers)), 0, servers);
  }
};

InferenceLoad make_inference_load(const LoanSetting& s) {
  sim::Random random(s.seed * 7919 + 17);
  InferenceLoad load{{}, s.inference_servers, s.inference_mean, s.inference_amplitude};
  // Hours past the arrival window too: the run drains after it.
  const auto hours = static_cast<std::size_t>(std::ceil(s.days * 24.0 * 4.0)) + 1;
  for (std::size_t h = 0; h < hours; ++h)
    load.jitter.push_back(0.1 * sim::uniform01(random) - 0.05);
  return load;
}

/// Training jobs: Poisson arrivals whose rate follows the working day (mean x (1 +- amplitude),
/// peak at noon like the inference load, by thinning); 1, 2, 4, 8 or 16 one-GPU workers
/// (30/25/25/15/5%); half of the multi-worker jobs elastic (min = half, max = twice the requested
/// workers); duration 10 min + exponential(2 h) at the requested size; checkpoint every 30 min, 2
/// min restart.
sim::Trace make_training_trace(const LoanSetting& s) {
  sim::Random random(s.seed);
  const auto& schema = ResourceSchema::standard();
  const double mean_gpus = 0.30 * 1 + 0.25 * 2 + 0.25 * 4 + 0.15 * 8 + 0.05 * 16;
  const double mean_duration = 600.0 + 2.0 * hour;
  const double gpus = 8.0 * s.training_servers;
  const double rate = s.training_load * gpus / (mean_gpus * mean_duration);  // jobs per second
  const double peak = rate * (1.0 + s.training_amplitude);
  sim::Trace trace;
  std::uint64_t id = 1;
  for (double t = sim::exponential(random, 1.0 / peak); t < s.days * day;
       t += sim::exponential(random, 1.0 / peak)) {
    const double now_rate =
        rate * (1.0 + s.training_amplitude *
                          std::sin(2.0 * std::numbers::pi * t / day - std::numbers::pi / 2.0));
    if (sim::uniform01(random) * peak > now_rate) continue;
    const std::uint64_t pick = sim::uniform_below(random, 100);
    const std::int32_t workers = pick < 30 ? 1 : pick < 55 ? 2 : pick < 80 ? 4 : pick < 95 ? 8 : 16;
    const bool elastic = workers > 1 && sim::uniform_below(random, 2) == 0;
    Workload w;
    w.id = WorkloadId{id++};
    w.name = elastic ? "train-elastic" : "train";
    w.priority = 0;
    w.preemptible = true;
    w.replicas = workers;
    if (elastic) w.min_replicas = workers / 2;
    w.demand.whole_devices = 1;
    w.demand.resources = schema.make({{"cpu_milli", 8000}, {"memory_mib", 65536}});
    const double duration = 600.0 + sim::exponential(random, 2.0 * hour);
    trace.push_back({std::move(w), t, duration, 1800.0, 120.0});
  }
  return trace;
}

/// Which of Aryl's two mechanisms a run uses.
struct Mechanisms {
  std::string name;
  bool loaning = false;
  bool scaling = false;
};

/// Per-run counters of the controller.
struct ControllerStats {
  std::uint64_t reclaim_plans = 0;  ///< reclaim_servers calls with servers needed
  std::uint64_t servers_reclaimed = 0;
  std::uint64_t busy_servers_reclaimed = 0;  ///< reclaimed hosts that carried training work
  std::uint64_t reclaim_shrinks = 0;
  std::uint64_t reclaim_evictions = 0;
  std::uint64_t reclaim_failures = 0;  ///< plans infeasible or hosts not free afterwards
  std::uint64_t scaling_plans = 0;
  std::uint64_t scaling_over_budget = 0;  ///< plans using more GPUs than offered (must be 0)
  std::uint64_t scaling_too_large = 0;
  double loaned_server_seconds = 0.0;  ///< integral of loaned servers over time
};

/// Aryl's cluster manager as a `sim::SimulationOptions::controller`.
class LoanController {
 public:
  LoanController(const Mechanisms& mechanisms, const InferenceLoad& load,
                 std::vector<DomainId> inference_hosts, ControllerStats& stats)
      : mechanisms_(mechanisms), load_(load), hosts_(std::move(inference_hosts)), stats_(stats) {
    role_.assign(hosts_.size(), Role::unset);
  }

  void operator()(sim::ClusterControl& control) {
    const double now = control.now();
    if (now > last_) stats_.loaned_server_seconds += (now - last_) * loaned_count_;
    last_ = now;
    balance_inference(control, static_cast<std::size_t>(load_.needed(now)));
    if (mechanisms_.scaling) scale(control);
  }

 private:
  enum class Role : std::uint8_t { unset, serving, idle_held, loaned };

  [[nodiscard]] std::uint64_t hold_id(std::size_t i) const { return reservation_id_base + i; }

  void hold(sim::ClusterControl& control, std::size_t i, Role role) {
    Workload server;
    server.id = WorkloadId{hold_id(i)};
    server.name = role == Role::serving ? "inference" : "inference-idle";
    server.preemptible = false;
    server.priority = 1000;
    server.demand.whole_devices = 8;
    const PlacementSearchResult found = find_placement(control.state(), server, hosts_[i]);
    if (!found.found) {
      ++stats_.reclaim_failures;  // the host was meant to be free of training work
      return;
    }
    control.reserve(server, found.placement,
                    role == Role::serving ? sim::HeldCapacity::in_use : sim::HeldCapacity::idle);
    role_[i] = role;
  }
  void unhold(sim::ClusterControl& control, std::size_t i) {
    control.release(WorkloadId{hold_id(i)});
    role_[i] = Role::unset;
  }

  /// Keeps `needed` inference hosts serving. The others are loaned to training (loaning) or
  /// held idle (no loaning). Hosts to serve come back by Aryl's reclaim (cheapest first: an
  /// empty loaned host costs nothing); hosts to free are the highest-numbered serving ones.
  void balance_inference(sim::ClusterControl& control, std::size_t needed) {
    std::size_t serving = 0;
    for (Role r : role_) serving += r == Role::serving;
    if (!mechanisms_.loaning) {
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        const Role want = i < needed ? Role::serving : Role::idle_held;
        if (role_[i] == want) continue;
        if (role_[i] != Role::unset) unhold(control, i);
        hold(control, i, want);
      }
      return;
    }
    if (needed < serving) {
      for (std::size_t i = hosts_.size(); i-- > 0 && serving > needed;) {
        if (role_[i] != Role::serving) continue;
        unhold(control, i);
        role_[i] = Role::loaned;
        --serving;
      }
    } else if (needed > serving) {
      std::vector<DomainId> loaned;
      std::map<DomainId, std::size_t> position;
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        if (role_[i] == Role::serving) continue;
        loaned.push_back(hosts_[i]);
        position[hosts_[i]] = i;
      }
      const capacity::ReclaimPlan plan =
          capacity::reclaim_servers(control.state(), loaned, needed - serving);
      ++stats_.reclaim_plans;
      if (plan.status != PlanStatus::feasible) {
        ++stats_.reclaim_failures;
      } else {
        for (const Victim& victim : plan.victims) {
          if (victim.action == VictimAction::shrink) {
            control.shrink(victim.id, victim.dropped_replicas);
            ++stats_.reclaim_shrinks;
          } else {
            control.evict(victim.id);
            ++stats_.reclaim_evictions;
          }
        }
        for (const capacity::ReclaimStep& step : plan.steps) {
          ++stats_.servers_reclaimed;
          if (!step.victims.empty()) ++stats_.busy_servers_reclaimed;
          hold(control, position.at(step.host), Role::serving);
        }
      }
    }
    loaned_count_ = 0;
    for (Role& r : role_) {
      if (r == Role::unset) r = Role::loaned;
      loaned_count_ += r == Role::loaned;
    }
  }

  /// Aryl's elastic scaling: the GPUs that are idle after the queue was served, plus those
  /// elastic jobs already hold beyond their floor, minus what waiting jobs ask for, go to the
  /// elastic jobs by the multiple-choice knapsack (value = JCT reduction at the simulator's
  /// linear work rate); jobs are then shrunk or grown to the chosen sizes.
  void scale(sim::ClusterControl& control) {
    const std::vector<sim::JobStatus> running = control.running();
    std::vector<capacity::ElasticJobOption> options;
    std::vector<std::int32_t> floors;
    std::vector<std::int32_t> current;
    double held_extra = 0.0;
    for (const sim::JobStatus& job : running) {
      if (!job.min_replicas || job.remaining_work_s <= 0.0) continue;
      const std::int32_t floor = std::min(job.replicas, job.trace_replicas);
      const std::int32_t most = 2 * job.trace_replicas;
      held_extra += (job.replicas - floor) * job.gpus_per_replica;
      std::vector<double> throughput;
      for (std::int32_t r = floor; r <= most; ++r) throughput.push_back(r);
      options.push_back(
          {job.id, "", static_cast<std::int64_t>(job.gpus_per_replica),
           capacity::jct_reductions(job.remaining_work_s * job.trace_replicas, throughput)});
      floors.push_back(floor);
      current.push_back(job.replicas);
    }
    if (options.empty()) return;
    double waiting_gpus = 0.0;
    for (const sim::JobStatus& job : control.waiting())
      waiting_gpus += job.replicas * job.gpus_per_replica;
    const auto idle = static_cast<double>(control.state().idle_devices(Topology::root()));
    const auto budget =
        static_cast<std::int64_t>(std::max(0.0, std::floor(idle + held_extra - waiting_gpus)));
    const capacity::ScalingPlan plan = capacity::scale_elastic_jobs(options, budget);
    ++stats_.scaling_plans;
    if (plan.status != capacity::ScalingStatus::optimal) {
      ++stats_.scaling_too_large;
      return;
    }
    if (plan.gpus_used > budget) ++stats_.scaling_over_budget;
    // Shrinks first, so that grows can use what they free.
    for (std::size_t k = 0; k < options.size(); ++k) {
      const std::int32_t target = floors[k] + plan.decisions[k].extra_workers;
      if (target >= current[k]) continue;
      std::vector<std::int32_t> drop;
      for (std::int32_t r = target; r < current[k]; ++r) drop.push_back(r);
      control.shrink(options[k].job, drop);
    }
    for (std::size_t k = 0; k < options.size(); ++k) {
      const std::int32_t target = floors[k] + plan.decisions[k].extra_workers;
      if (target > current[k]) (void)control.grow(options[k].job, target - current[k]);
    }
  }

  const Mechanisms& mechanisms_;
  const InferenceLoad& load_;
  std::vector<DomainId> hosts_;
  ControllerStats& stats_;
  std::vector<Role> role_;
  double last_ = 0.0;
  double loaned_count_ = 0.0;
};

struct LoanRow {
  Mechanisms mechanisms;
  sim::SimulationMetrics metrics;
  ControllerStats stats;
  double usage = 0.0;  ///< time-weighted GPU usage of the whole cluster over the arrival window
};

/// Time-weighted mean of the allocated ratio over [0, until] (a step function of the samples).
double window_usage(const std::vector<sim::AllocationSample>& samples, double until) {
  double integral = 0.0;
  for (std::size_t i = 0; i < samples.size() && samples[i].time_s < until; ++i) {
    const double next = i + 1 < samples.size() ? std::min(samples[i + 1].time_s, until) : until;
    integral += samples[i].allocated_gpu_ratio * (next - samples[i].time_s);
  }
  return until > 0.0 ? integral / until : 0.0;
}

LoanRow run_loaning(const Mechanisms& mechanisms, const LoanSetting& setting,
                    const std::shared_ptr<const Topology>& topology, const sim::Trace& trace,
                    const InferenceLoad& load, const experiments::Flags& flags) {
  const Topology& topo = *topology;
  const auto hosts = topo.domains_at(topo.host_level());
  const std::vector<DomainId> inference(hosts.begin() + setting.training_servers, hosts.end());
  LoanRow row{mechanisms, {}, {}, 0.0};
  LoanController controller(row.mechanisms, load, inference, row.stats);
  // Every load runs the same four mechanisms: the label names the load so that the progress
  // lines of one load are told from another's.
  experiments::Progress bar(
      "C1 load " + experiments::fixed(setting.training_load, 2) + " " + mechanisms.name,
      flags.quiet);
  sim::SimulationOptions options;
  options.preemption = false;  // training jobs do not preempt each other
  options.verify_plans = flags.verify;
  options.seed = flags.seed;
  options.controller = std::ref(controller);
  options.control_interval_s = setting.control_interval_s;
  options.progress_every = 2000;
  const double window = setting.days * day;
  options.progress = [&](const sim::SimulationProgress& p) {
    bar.update(static_cast<double>(p.jobs_finished) /
               static_cast<double>(std::max<std::uint64_t>(p.jobs, 1)));
  };
  row.metrics = sim::simulate(topology, trace, solvers::greedy, cost::victim_count{}, options);
  bar.done();
  row.usage = window_usage(row.metrics.allocation, window);
  return row;
}

/// Writes the hourly GPU usage of each run (for the plot).
void write_usage_curves(const std::string& path, const std::vector<LoanRow>& rows,
                        const InferenceLoad& load, double window) {
  if (path.empty()) return;
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "series,hour,usage_percent\n";
  for (double t = 0.0; t <= window; t += hour) {
    out << "inference servers busy," << t / hour << ','
        << experiments::fixed(100.0 * load.needed(t) / load.servers, 2) << '\n';
  }
  for (const LoanRow& row : rows) {
    const auto& samples = row.metrics.allocation;
    std::size_t i = 0;
    for (double t = 0.0; t <= window; t += hour) {
      while (i + 1 < samples.size() && samples[i + 1].time_s <= t) ++i;
      const double value = samples.empty() ? 0.0 : samples[i].allocated_gpu_ratio;
      out << row.mechanisms.name << ',' << t / hour << ',' << experiments::fixed(100.0 * value, 2)
          << '\n';
    }
  }
}

/// `path` with `suffix` before its ".csv" (a.csv -> a_ratios.csv); empty stays empty (no file).
std::string suffixed(const std::string& path, std::string_view suffix) {
  if (path.empty()) return path;
  std::string result = path;
  result.insert(result.size() - (result.ends_with(".csv") ? 4 : 0), suffix);
  return result;
}

bool part_loaning(const experiments::Flags& flags) {
  LoanSetting setting;
  if (flags.short_run) {
    setting.training_servers = 6;
    setting.inference_servers = 6;
    setting.days = 2.0;
  }
  if (flags.nodes) {
    setting.training_servers = *flags.nodes;
    setting.inference_servers = *flags.nodes;
  }
  if (flags.days) setting.days = *flags.days;
  setting.seed = flags.seed;
  const auto topology = std::make_shared<const Topology>(shapes::cluster(
      shapes::hgx_h100(),
      static_cast<std::size_t>(setting.training_servers + setting.inference_servers), 8));
  const InferenceLoad load = make_inference_load(setting);
  const std::vector<Mechanisms> all{{"no loaning / no scaling", false, false},
                                    {"scaling only", false, true},
                                    {"loaning only", true, false},
                                    {"loaning + scaling (Aryl)", true, true}};
  // The short run checks the default load; the full run shows how the gains depend on it.
  const std::vector<double> loads =
      flags.short_run ? std::vector<double>{1.0} : std::vector<double>{0.8, 1.0, 1.2};
  std::cout << "C1. Loaning and elastic scaling (Aryl): " << setting.training_servers
            << " training + " << setting.inference_servers
            << " inference servers (8x H100 each), training arrivals over " << setting.days
            << " day(s), inference servers busy " << setting.inference_mean << " +- "
            << setting.inference_amplitude << " (diurnal); training submissions +- "
            << setting.training_amplitude << " (diurnal), seed " << setting.seed << "\n\n";
  experiments::Table table({"training load", "mechanisms", "jobs", "mean queuing s", "mean JCT s",
                            "cluster GPU usage %", "loaned servers (mean)", "servers reclaimed",
                            "busy reclaimed", "reclaim shrinks", "reclaim evictions", "GPU-h lost",
                            "replicas grown", "reclaim failures"});
  experiments::Table vs({"training load", "against no loaning / no scaling",
                         "queuing time reduction", "JCT reduction", "usage gain (pp)",
                         "usage gain (relative %)"});
  const auto ratio = [](double a, double b) { return b > 0.0 ? a / b : 0.0; };
  std::vector<LoanRow> curve_rows;
  bool ok = true;
  for (const double training_load : loads) {
    setting.training_load = training_load;
    const sim::Trace trace = make_training_trace(setting);
    std::vector<LoanRow> rows;
    for (const Mechanisms& m : all)
      rows.push_back(run_loaning(m, setting, topology, trace, load, flags));
    const std::string load_text = experiments::fixed(training_load, 2);
    for (const LoanRow& row : rows) {
      const auto& m = row.metrics;
      const auto& s = row.stats;
      table.add({load_text, row.mechanisms.name, std::to_string(m.jobs_completed),
                 experiments::fixed(m.mean_queue_s, 0), experiments::fixed(m.mean_jct_s, 0),
                 experiments::fixed(100.0 * row.usage, 2),
                 experiments::fixed(s.loaned_server_seconds / std::max(m.end_time_s, 1.0), 2),
                 std::to_string(s.servers_reclaimed), std::to_string(s.busy_servers_reclaimed),
                 std::to_string(s.reclaim_shrinks), std::to_string(s.reclaim_evictions),
                 experiments::fixed(m.gpu_hours_lost, 1), std::to_string(m.grows),
                 std::to_string(s.reclaim_failures)});
    }
    const LoanRow& base = rows.front();
    const LoanRow& aryl_row = rows.back();
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const LoanRow& row = rows[i];
      vs.add(
          {load_text, row.mechanisms.name,
           experiments::fixed(ratio(base.metrics.mean_queue_s, row.metrics.mean_queue_s), 2) + "x",
           experiments::fixed(ratio(base.metrics.mean_jct_s, row.metrics.mean_jct_s), 2) + "x",
           experiments::fixed(100.0 * (row.usage - base.usage), 1),
           experiments::fixed(100.0 * (ratio(row.usage, base.usage) - 1.0), 1)});
    }
    if (training_load == loads.back()) curve_rows = rows;
    if (flags.check) {
      const auto fail = [&](const std::string& what) {
        std::cerr << "CHECK FAILED: C1 (load " << load_text << "): " << what << "\n";
        ok = false;
      };
      for (const LoanRow& row : rows) {
        if (row.stats.reclaim_failures != 0) {
          fail(row.mechanisms.name + ": " + std::to_string(row.stats.reclaim_failures) +
               " reclaim plans did not free the servers requested");
        }
        if (row.stats.scaling_over_budget != 0 || row.stats.scaling_too_large != 0) {
          fail(row.mechanisms.name +
               ": a scaling plan used more GPUs than offered or was too large");
        }
        if (row.metrics.jobs_completed != trace.size()) {
          fail(row.mechanisms.name + ": only " + std::to_string(row.metrics.jobs_completed) +
               " of " + std::to_string(trace.size()) + " jobs completed");
        }
      }
      if (aryl_row.stats.busy_servers_reclaimed == 0) {
        fail("no reclaimed server carried training work; the reclaim path was not exercised");
      }
      if (aryl_row.metrics.grows == 0) fail("no elastic job was ever grown");
      for (std::size_t i : {std::size_t{2}, std::size_t{3}}) {
        const LoanRow& row = rows[i];
        if (!(row.metrics.mean_queue_s < base.metrics.mean_queue_s)) {
          fail(row.mechanisms.name + " did not reduce the mean queuing time");
        }
        if (!(row.usage > base.usage))
          fail(row.mechanisms.name + " did not raise the cluster usage");
        if (!(row.metrics.mean_jct_s < base.metrics.mean_jct_s)) {
          fail(row.mechanisms.name + " did not reduce the mean JCT");
        }
      }
    }
  }
  vs.add({"", "Aryl, published (15-day trace, 50,000 jobs)", "1.53x", "1.50x", "", "up to 26.9"});
  table.print_markdown(std::cout);
  std::cout << '\n';
  vs.print_markdown(std::cout);
  table.write_csv(flags.csv);
  vs.write_csv(suffixed(flags.csv, "_ratios"));
  write_usage_curves(flags.curves, curve_rows, load, setting.days * day);
  return ok;
}

// =============================================================================================
// C2: model-cache-aware placement (Compass)
// =============================================================================================

/// The setting of C2.
struct CacheSetting {
  int servers = 4;  ///< 8x RTX 4090 (24 GiB) each: 8 workers per server
  int models = 48;
  double zipf_s = 1.0;  ///< popularity of the k-th model ~ 1 / k^s
  std::size_t tasks = 100'000;
  double utilisation = 0.6;  ///< offered busy time / worker time (execution only)
  std::uint64_t seed = 1;
};

struct CacheTask {
  double arrival = 0.0;
  model_cache::Task task;
};

/// Models: sizes of common fp16 checkpoints that fit a 24 GiB GPU (1-14 GiB, drawn per model);
/// tasks: Poisson arrivals, one model drawn by Zipf popularity (a random permutation decides
/// which model is popular), 20% of tasks need a second (e.g. an embedding model) from the same
/// distribution; run time exponential with mean 1 s (+50 ms).
std::vector<CacheTask> make_cache_workload(const CacheSetting& s) {
  sim::Random random(s.seed * 104729 + 3);
  const std::vector<Amount> sizes{1024, 2048, 3072, 4608, 6144, 8192, 10240, 13824};
  std::vector<model_cache::ModelRef> models;
  for (int m = 0; m < s.models; ++m) {
    models.push_back(
        {"model-" + std::to_string(m), sizes[sim::uniform_below(random, sizes.size())]});
  }
  sim::shuffle(models, random);  // popularity rank independent of size
  std::vector<double> cumulative;
  double total = 0.0;
  for (int k = 1; k <= s.models; ++k) {
    total += 1.0 / std::pow(static_cast<double>(k), s.zipf_s);
    cumulative.push_back(total);
  }
  const auto draw = [&]() -> const model_cache::ModelRef& {
    const double u = sim::uniform01(random) * total;
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
    return models[static_cast<std::size_t>(
        std::min<std::ptrdiff_t>(it - cumulative.begin(), s.models - 1))];
  };
  const double mean_duration = 1.05;
  const double workers = 8.0 * s.servers;
  const double rate = s.utilisation * workers / mean_duration;
  std::vector<CacheTask> tasks;
  double t = 0.0;
  for (std::size_t i = 0; i < s.tasks; ++i) {
    t += sim::exponential(random, 1.0 / rate);
    model_cache::Task task;
    task.name = "t" + std::to_string(i);
    task.models.push_back(draw());
    if (sim::uniform_below(random, 5) == 0) {
      const model_cache::ModelRef& second = draw();
      if (second.id != task.models.front().id &&
          second.size_mib + task.models.front().size_mib <= 24576) {
        task.models.push_back(second);
      }
    }
    task.duration_s = 0.05 + sim::exponential(random, 1.0);
    tasks.push_back({t, std::move(task)});
  }
  return tasks;
}

struct CacheRow {
  std::string policy;
  std::uint64_t references = 0;
  std::uint64_t hits = 0;
  double load_seconds = 0.0;
  double latency_sum = 0.0;
  std::vector<double> latencies;
  [[nodiscard]] double hit_rate() const {
    return references == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(references);
  }
  [[nodiscard]] double mean_latency() const {
    return latencies.empty() ? 0.0 : latency_sum / static_cast<double>(latencies.size());
  }
};

enum class CachePolicy : std::uint8_t { cache_aware, least_loaded, random };

CacheRow run_cache(CachePolicy policy, std::string name, const std::vector<CacheTask>& tasks,
                   const std::shared_ptr<const Topology>& topology,
                   const experiments::Flags& flags) {
  model_cache::ModelCacheState cache(topology);
  const auto workers = cache.workers();
  sim::Random random(flags.seed);
  CacheRow row{std::move(name), 0, 0, 0.0, 0.0, {}};
  experiments::Progress bar("C2 " + row.policy, flags.quiet);
  row.latencies.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const CacheTask& item = tasks[i];
    DomainId worker;
    switch (policy) {
      case CachePolicy::cache_aware:
        worker = model_cache::place_task(cache, item.task, workers, item.arrival);
        break;
      case CachePolicy::least_loaded: {  // earliest ready, blind to the cache (ties: lowest id)
        worker = workers.front();
        for (DomainId w : workers) {
          if (cache.ready_time(w) < cache.ready_time(worker)) worker = w;
        }
        break;
      }
      case CachePolicy::random:
        worker = workers[sim::uniform_below(random, workers.size())];
        break;
    }
    for (const model_cache::ModelRef& model : item.task.models) {
      ++row.references;
      if (cache.is_cached(worker, model.id)) {
        ++row.hits;
      } else {
        row.load_seconds += cache.load_time(model.size_mib);
      }
    }
    const double start = model_cache::dispatch(cache, item.task, worker, item.arrival);
    const double latency = start + item.task.duration_s - item.arrival;
    row.latency_sum += latency;
    row.latencies.push_back(latency);
    if (i % 4096 == 0) bar.update(static_cast<double>(i) / static_cast<double>(tasks.size()));
  }
  bar.done();
  std::sort(row.latencies.begin(), row.latencies.end());
  return row;
}

bool part_cache(const experiments::Flags& flags) {
  CacheSetting setting;
  if (flags.short_run) setting.tasks = 20'000;
  setting.seed = flags.seed;
  const auto topology = std::make_shared<const Topology>(
      shapes::cluster(shapes::rtx4090_server(), static_cast<std::size_t>(setting.servers), 8));
  const std::vector<CacheTask> tasks = make_cache_workload(setting);
  std::vector<CacheRow> rows;
  rows.push_back(run_cache(CachePolicy::cache_aware, "cache-aware (Compass earliest start)", tasks,
                           topology, flags));
  rows.push_back(
      run_cache(CachePolicy::least_loaded, "cache-blind least-loaded", tasks, topology, flags));
  rows.push_back(run_cache(CachePolicy::random, "cache-blind random", tasks, topology, flags));
  std::cout << "\nC2. Model-cache-aware placement (Compass): " << 8 * setting.servers
            << " RTX 4090 workers (24 GiB), " << setting.models
            << " models (1-13.5 GiB), Zipf s = " << setting.zipf_s << ", " << tasks.size()
            << " tasks, offered utilisation " << setting.utilisation
            << ", load bandwidth 12 GiB/s, seed " << setting.seed << "\n\n";
  experiments::Table table({"policy", "model references", "cache hit rate %", "model load s",
                            "load time saved vs least-loaded %", "mean latency s", "p50 latency s",
                            "p99 latency s"});
  const double blind_load = rows[1].load_seconds;
  for (const CacheRow& row : rows) {
    table.add({row.policy, std::to_string(row.references),
               experiments::fixed(100.0 * row.hit_rate(), 2),
               experiments::fixed(row.load_seconds, 0),
               experiments::fixed(
                   blind_load > 0 ? 100.0 * (1.0 - row.load_seconds / blind_load) : 0.0, 1),
               experiments::fixed(row.mean_latency(), 3),
               experiments::fixed(sim::detail::sorted_percentile(row.latencies, 0.5), 3),
               experiments::fixed(sim::detail::sorted_percentile(row.latencies, 0.99), 3)});
  }
  table.print_markdown(std::cout);
  table.write_csv(suffixed(flags.csv, "_compass"));
  bool ok = true;
  if (flags.check) {
    for (std::size_t i = 1; i < rows.size(); ++i) {
      if (!(rows[0].hit_rate() > rows[i].hit_rate())) {
        std::cerr << "CHECK FAILED: C2: cache-aware hit rate " << rows[0].hit_rate()
                  << " not above " << rows[i].policy << "'s " << rows[i].hit_rate() << "\n";
        ok = false;
      }
      if (!(rows[0].load_seconds < rows[i].load_seconds)) {
        std::cerr << "CHECK FAILED: C2: cache-aware placement loads no less than " << rows[i].policy
                  << "\n";
        ok = false;
      }
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const experiments::FlagSpec spec{
      .accepted = {{experiments::ValueFlag::seed, "seed of C1 and C2 (default 1)"},
                   {experiments::ValueFlag::nodes,
                    "training and inference servers each (C1; default 32, --short: 6)"},
                   {experiments::ValueFlag::days, "arrival window in days (C1)"},
                   {experiments::ValueFlag::csv,
                    "C1 table (PATH), C1 ratios (PATH_ratios), C2 table (PATH_compass)"},
                   {experiments::ValueFlag::curves, "C1 hourly GPU usage per run"}}};
  const experiments::Flags flags = experiments::parse_flags(argc, argv, spec);
  // Every file the run writes, checked before it starts.
  experiments::require_writable(argc, argv, spec, "--csv", flags.csv);
  experiments::require_writable(argc, argv, spec, "--csv", suffixed(flags.csv, "_ratios"));
  experiments::require_writable(argc, argv, spec, "--csv", suffixed(flags.csv, "_compass"));
  experiments::require_writable(argc, argv, spec, "--curves", flags.curves);
  const bool loaning_ok = part_loaning(flags);
  const bool cache_ok = part_cache(flags);
  const bool ok = loaning_ok && cache_ok;
  if (flags.check) std::cout << (ok ? "\nchecks passed\n" : "\nCHECKS FAILED\n");
  return ok ? 0 : 1;
}
