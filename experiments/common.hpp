// SPDX-License-Identifier: MIT
#pragma once
// Shared by the experiment programs: flags, a progress bar with ETA on stderr, Markdown/CSV
// tables, and where the shared data lives. Not part of the library.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace experiments {

/// Flags every experiment understands.
struct Flags {
  bool short_run = false;      ///< --short: a reduced run (CI, quick start)
  bool check = false;          ///< --check: assert the expected shape, exit 1 otherwise
  bool verify = true;          ///< --no-verify: skip verify_plan on every plan
  std::uint64_t seed = 1;      ///< --seed N: first seed
  std::optional<int> seeds;    ///< --seeds N: number of seeds
  std::optional<int> nodes;    ///< --nodes N
  std::optional<double> days;  ///< --days X: simulated days
  std::string csv;             ///< --csv PATH: also write the table as CSV
  std::string curves;          ///< --curves PATH: per-run curves as CSV (where offered)
  bool quiet = false;          ///< --quiet: no progress output
};

[[noreturn]] inline void usage(std::string_view program, std::string_view extra) {
  std::cerr << "usage: " << program
            << " [--short] [--check] [--no-verify] [--seed N] [--seeds N] [--nodes N] [--days X]"
               " [--csv PATH] [--curves PATH] [--quiet]\n"
            << extra;
  std::exit(2);
}

inline Flags parse_flags(int argc, char** argv, std::string_view extra_usage = {}) {
  Flags flags;
  const auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(argv[0], extra_usage);
    return argv[++i];
  };
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--short")
        flags.short_run = true;
      else if (arg == "--check")
        flags.check = true;
      else if (arg == "--no-verify")
        flags.verify = false;
      else if (arg == "--quiet")
        flags.quiet = true;
      else if (arg == "--seed")
        flags.seed = std::stoull(value(i));
      else if (arg == "--seeds")
        flags.seeds = std::stoi(value(i));
      else if (arg == "--nodes")
        flags.nodes = std::stoi(value(i));
      else if (arg == "--days")
        flags.days = std::stod(value(i));
      else if (arg == "--csv")
        flags.csv = value(i);
      else if (arg == "--curves")
        flags.curves = value(i);
      else
        usage(argv[0], extra_usage);
    }
  } catch (const std::exception&) {
    usage(argv[0], extra_usage);
  }
  return flags;
}

/// The shared data directory: $TOPOPREEMPT_DATA_DIR, else the one compiled in (../shared/data
/// beside the repository); nullopt when it does not exist.
inline std::optional<std::filesystem::path> data_dir() {
  if (const char* env = std::getenv("TOPOPREEMPT_DATA_DIR"); env != nullptr && *env != '\0') {
    if (std::filesystem::is_directory(env)) return std::filesystem::path(env);
    return std::nullopt;
  }
#ifdef TOPOPREEMPT_DATA_DIR
  if (std::filesystem::is_directory(TOPOPREEMPT_DATA_DIR))
    return std::filesystem::path(TOPOPREEMPT_DATA_DIR);
#endif
  return std::nullopt;
}

/// A progress bar with ETA on stderr. Silent for the first 2 s (short runs print nothing);
/// on a terminal it redraws one line, elsewhere (CI logs) it prints a line every 25%.
class Progress {
 public:
  Progress(std::string label, bool quiet)
      : label_(std::move(label)),
        quiet_(quiet),
        tty_(isatty(STDERR_FILENO) == 1),
        started_(std::chrono::steady_clock::now()) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { done(); }

  /// Reports `fraction` (0..1) of the work done.
  void update(double fraction) {
    if (quiet_ || finished_) return;
    const double elapsed = seconds();
    if (elapsed < 2.0) return;
    fraction = std::min(std::max(fraction, 0.0), 1.0);
    const double eta = fraction > 0.0 ? elapsed * (1.0 - fraction) / fraction : 0.0;
    if (tty_) {
      const int width = 30;
      const int filled = static_cast<int>(fraction * width);
      std::fprintf(stderr, "\r%-28.28s [%s%s] %5.1f%%  %6.0fs elapsed, ETA %6.0fs", label_.c_str(),
                   std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   std::string(static_cast<std::size_t>(width - filled), ' ').c_str(),
                   100.0 * fraction, elapsed, eta);
      drawn_ = true;
    } else if (fraction >= next_report_) {
      std::fprintf(stderr, "%s: %3.0f%% after %.0fs, ETA %.0fs\n", label_.c_str(), 100.0 * fraction,
                   elapsed, eta);
      while (next_report_ <= fraction) next_report_ += 0.25;
    }
  }
  /// Ends the bar (prints the total time when the run was long enough to show one).
  void done() {
    if (finished_) return;
    finished_ = true;
    if (quiet_) return;
    if (drawn_) std::fputc('\n', stderr);
    if (seconds() >= 2.0) std::fprintf(stderr, "%s: done in %.1fs\n", label_.c_str(), seconds());
  }
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

 private:
  std::string label_;
  bool quiet_;
  bool tty_;
  bool drawn_ = false;
  bool finished_ = false;
  double next_report_ = 0.25;
  std::chrono::steady_clock::time_point started_;
};

/// A table printed as Markdown (stdout) and optionally written as CSV.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print_markdown(std::ostream& out) const {
    const auto line = [&](const std::vector<std::string>& cells) {
      out << '|';
      for (const auto& cell : cells) out << ' ' << cell << " |";
      out << '\n';
    };
    line(header_);
    out << '|';
    for (std::size_t i = 0; i < header_.size(); ++i) out << (i == 0 ? "---|" : "---:|");
    out << '\n';
    for (const auto& row : rows_) line(row);
  }
  void write_csv(const std::string& path) const {
    if (path.empty()) return;
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    const auto line = [&](const std::vector<std::string>& cells) {
      for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << cells[i];
      out << '\n';
    };
    line(header_);
    for (const auto& row : rows_) line(row);
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// Fixed-point formatting for tables.
inline std::string fixed(double value, int digits = 2) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

}  // namespace experiments
