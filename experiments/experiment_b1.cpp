// SPDX-License-Identifier: MIT
// Experiment B1: the openb trace without preemption, under FGD's protocol (ATC'23 "Beware of
// Fragmentation"): pods shuffled, arriving one by one until the GPUs requested reach 130% of
// the cluster's 6,212; a pod that does not fit is dropped; GPU allocation ratio against arrived
// load; 10 seeds. Placement policies: FGD's BestFit and Random (as their simulator defines
// them) and the library's find_placement. Compared with FGD's published curves
// (shared/data/fgd/analysis_allo_discrete.csv). See EXPERIMENTS.md.
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "openb.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/sim/sim.hpp"
#include "topopreempt/solvers/greedy.hpp"

using namespace topopreempt;

namespace {

constexpr int max_load = 130;  // percent of capacity

/// FGD's protocol as a trace: pods shuffled (re-shuffled each time the list runs out, as the
/// 8,152 pods request ~98% of the GPUs), one arrival per second until 130% of the GPUs are
/// requested; they never finish.
sim::Trace fgd_trace(const std::vector<experiments::OpenbPod>& pods, double capacity_gpus,
                     std::uint64_t seed) {
  sim::Random random(seed);
  std::vector<std::size_t> order(pods.size());
  sim::Trace trace;
  double requested = 0.0;
  std::size_t next = order.size();
  for (std::uint64_t id = 1; requested < capacity_gpus * max_load / 100.0; ++id) {
    if (next == order.size()) {
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      sim::shuffle(order, random);
      next = 0;
    }
    const experiments::OpenbPod& pod = pods[order[next++]];
    requested += pod.gpus();
    trace.push_back({pod.workload(id), static_cast<double>(id), 1e12, 0.0, 0.0});
  }
  return trace;
}

/// Allocation ratio (%) when the arrived load first reaches each percent 0..130.
std::array<double, max_load + 1> curve(const sim::SimulationMetrics& metrics) {
  std::array<double, max_load + 1> points{};
  std::size_t s = 0;
  for (int load = 0; load <= max_load; ++load) {
    while (s + 1 < metrics.allocation.size() &&
           100.0 * metrics.allocation[s].arrived_gpu_ratio < load)
      ++s;
    points[static_cast<std::size_t>(load)] = 100.0 * metrics.allocation[s].allocated_gpu_ratio;
  }
  return points;
}

/// FGD's published mean curve of one policy on the default trace.
std::array<double, max_load + 1> published(const std::filesystem::path& csv,
                                           const std::string& policy) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::array<double, max_load + 1> sum{};
  int rows = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) f.push_back(field);
    if (f.size() < 5 + max_load + 1 || f[0] != "openb_pod_list_default" || f[1] != policy) continue;
    for (int load = 0; load <= max_load; ++load)
      sum[static_cast<std::size_t>(load)] += std::stod(f[5 + static_cast<std::size_t>(load)]);
    ++rows;
  }
  for (double& v : sum) v = rows > 0 ? v / rows : 0.0;
  return sum;
}

template <class Policy>
std::array<double, max_load + 1> run(const Policy& policy,
                                     const std::shared_ptr<const Topology>& topology,
                                     const sim::Trace& trace, std::uint64_t seed) {
  sim::SimulationOptions options;
  options.preemption = false;
  options.keep_unplaced = false;
  options.verify_plans = false;  // no plans without preemption
  options.seed = seed;
  options.horizon_s = 1e11;  // arrivals only: nobody finishes
  return curve(
      sim::simulate(topology, trace, solvers::greedy, cost::victim_count{}, options, policy));
}

}  // namespace

int main(int argc, char** argv) {
  const experiments::FlagSpec spec{
      .accepted = {{experiments::ValueFlag::seed, "first seed (default 1)"},
                   {experiments::ValueFlag::seeds, "number of seeds (default 10; --short: 2)"},
                   {experiments::ValueFlag::csv, "also write the table as CSV"},
                   {experiments::ValueFlag::curves, "mean allocation per load, as CSV"}}};
  const experiments::Flags flags = experiments::parse_flags(argc, argv, spec);
  experiments::require_writable(argc, argv, spec, "--csv", flags.csv);
  experiments::require_writable(argc, argv, spec, "--curves", flags.curves);
  const auto data = experiments::openb_data_dir_or_skip("Experiment B1", "openb/ and fgd/");
  if (!data) return flags.check ? 77 : 0;  // 77: ctest's SKIP_RETURN_CODE
  const auto topology = experiments::openb_cluster(*data);
  const auto pods = experiments::load_openb_pods(*data / "openb" / "openb_pod_list_default.csv");
  const double capacity = static_cast<double>(topology->capacity(Topology::root())(0)) / 1000.0;
  const int seeds = flags.seeds.value_or(flags.short_run ? 2 : 10);

  struct Series {
    std::string name;
    std::string fgd_name;  // FGD's label of the same policy, if any
    std::vector<std::array<double, max_load + 1>> runs;
  };
  std::vector<Series> series{{"best_fit (FGD integer scores)", "05-BestFit", {}},
                             {"best_fit (exact scores)", "05-BestFit", {}},
                             {"random", "01-Random", {}},
                             {"find_placement", "", {}}};
  experiments::Progress bar("B1 openb, " + std::to_string(seeds) + " seeds", flags.quiet);
  for (int k = 0; k < seeds; ++k) {
    const std::uint64_t seed = flags.seed + static_cast<std::uint64_t>(k);
    const sim::Trace trace = fgd_trace(pods, capacity, seed);
    series[0].runs.push_back(run(sim::best_fit_placement{}, topology, trace, seed));
    bar.update((4.0 * k + 1) / (4.0 * seeds));
    series[1].runs.push_back(
        run(sim::best_fit_placement{.fgd_integer_scores = false}, topology, trace, seed));
    bar.update((4.0 * k + 2) / (4.0 * seeds));
    series[2].runs.push_back(run(sim::random_placement{}, topology, trace, seed));
    bar.update((4.0 * k + 3) / (4.0 * seeds));
    series[3].runs.push_back(run(sim::default_placement{}, topology, trace, seed));
    bar.update((4.0 * k + 4) / (4.0 * seeds));
  }
  bar.done();

  const std::filesystem::path fgd_csv = *data / "fgd" / "analysis_allo_discrete.csv";
  const std::array<int, 6> loads{50, 80, 90, 100, 110, 130};
  std::vector<std::string> header{"policy", "source"};
  for (int load : loads) header.push_back("alloc % at " + std::to_string(load) + "% load");
  experiments::Table table(header);
  std::map<std::string, std::array<double, max_load + 1>> means;
  for (const Series& s : series) {
    std::array<double, max_load + 1> mean{};
    for (const auto& r : s.runs) {
      for (std::size_t i = 0; i <= max_load; ++i)
        mean[i] += r[i] / static_cast<double>(s.runs.size());
    }
    means[s.name] = mean;
    std::vector<std::string> row{s.name, "ours, " + std::to_string(seeds) + " seeds"};
    for (int load : loads) row.push_back(experiments::fixed(mean[static_cast<std::size_t>(load)]));
    table.add(row);
  }
  for (const std::string fgd : {"01-Random", "05-BestFit", "06-FGD"}) {
    const auto mean = published(fgd_csv, fgd);
    means["FGD " + fgd] = mean;
    std::vector<std::string> row{fgd, "FGD published, 10 seeds"};
    for (int load : loads) row.push_back(experiments::fixed(mean[static_cast<std::size_t>(load)]));
    table.add(row);
  }
  std::cout << "Experiment B1: openb default trace (" << pods.size() << " pods, " << capacity
            << " GPUs on 1,213 nodes), FGD's protocol, seeds " << flags.seed << ".."
            << flags.seed + static_cast<std::uint64_t>(seeds) - 1 << "\n\n";
  table.print_markdown(std::cout);
  table.write_csv(flags.csv);
  if (!flags.curves.empty()) {
    std::ofstream out(flags.curves);
    out << "series,load_percent,allocation_percent\n";
    for (const auto& [name, mean] : means) {
      for (int load = 0; load <= max_load; ++load)
        out << name << ',' << load << ',' << mean[static_cast<std::size_t>(load)] << '\n';
    }
  }
  bool ok = true;
  if (flags.check) {
    // Our BestFit must track FGD's published BestFit (what this experiment validates).
    const double ours = means["best_fit (FGD integer scores)"][100];
    const double theirs = means["FGD 05-BestFit"][100];
    if (std::abs(ours - theirs) > 2.0) {
      std::cerr << "CHECK FAILED: BestFit at 100% load: ours " << ours << " vs FGD " << theirs
                << "\n";
      ok = false;
    }
    std::cout << (ok ? "\nchecks passed\n" : "\nCHECKS FAILED\n");
  }
  return ok ? 0 : 1;
}
