// SPDX-License-Identifier: MIT
#pragma once
// Shared by the experiment programs: flags, a progress bar with ETA on stderr, Markdown/CSV
// tables, and where the shared data lives. Not part of the library.

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace experiments {

/// The flags of an experiment program. The switches are common to all; the valued ones are
/// accepted only by the programs that use them (see `ValueFlag`).
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

/// A flag that takes a value. A program lists the ones it reads; any other is refused, so that a
/// flag a program would silently ignore never looks as if it had been applied.
enum class ValueFlag { seed, seeds, nodes, days, csv, curves };

/// What a program accepts: its valued flags, what each means for it, and extra usage text.
struct FlagSpec {
  std::vector<std::pair<ValueFlag, std::string_view>> accepted;  ///< flag, its help line
  std::string_view extra_usage = {};                             ///< printed after the flags
};

/// Upper bounds of the valued flags: far beyond any run the experiments describe, low enough
/// that a typo (an extra digit) is refused before it allocates a cluster the machine cannot hold.
inline constexpr int max_seeds = 10'000;
inline constexpr int max_nodes = 100'000;
inline constexpr double max_days = 3650.0;

namespace detail {

inline std::string_view flag_name(ValueFlag flag) {
  switch (flag) {
    case ValueFlag::seed: return "--seed";
    case ValueFlag::seeds: return "--seeds";
    case ValueFlag::nodes: return "--nodes";
    case ValueFlag::days: return "--days";
    case ValueFlag::csv: return "--csv";
    case ValueFlag::curves: return "--curves";
  }
  return "?";
}

inline std::string_view flag_metavar(ValueFlag flag) {
  switch (flag) {
    case ValueFlag::days: return "X";
    case ValueFlag::csv:
    case ValueFlag::curves: return "PATH";
    default: return "N";
  }
}

inline void print_usage(std::ostream& out, std::string_view program, const FlagSpec& spec) {
  out << "usage: " << program << " [--short] [--check] [--no-verify] [--quiet]";
  for (const auto& [flag, help] : spec.accepted)
    out << " [" << flag_name(flag) << ' ' << flag_metavar(flag) << ']';
  out << "\n  --short: a reduced run; --check: assert the expected shape (exit 1 otherwise);"
         "\n  --no-verify: skip the plan verifier; --quiet: no progress on stderr\n";
  for (const auto& [flag, help] : spec.accepted)
    out << "  " << flag_name(flag) << ' ' << flag_metavar(flag) << ": " << help << '\n';
  out << spec.extra_usage;
}

/// Exit status 2 with a message naming the flag, then the usage.
[[noreturn]] inline void refuse(std::string_view program, const FlagSpec& spec,
                                const std::string& message) {
  std::cerr << program << ": " << message << '\n';
  print_usage(std::cerr, program, spec);
  std::exit(2);
}

/// The whole of `text` as an integer in [low, high], or nullopt ("41x", "-3", "" are refused:
/// std::stoi would read "41x" as 41).
template <class Int>
std::optional<Int> whole_number(std::string_view text, Int low, Int high) {
  Int value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc{} || stop != end || value < low || value > high)
    return std::nullopt;
  return value;
}

/// The whole of `text` as a finite number in (0, high], or nullopt.
inline std::optional<double> positive_number(std::string_view text, double high) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())) != 0)
    return std::nullopt;
  const std::string copy(text);
  char* stop = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &stop);
  if (errno != 0 || stop != copy.c_str() + copy.size() || !std::isfinite(value) || value <= 0.0 ||
      value > high)
    return std::nullopt;
  return value;
}

/// Why `path` cannot be written (its folder is missing or not writable, or it is a folder), or
/// an empty string. Checked before the run, so that a long run is not lost at its end.
inline std::string unwritable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) return "'" + path + "' is a directory";
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, error)) return "folder '" + folder.string() + "' does not exist";
  if (access(folder.c_str(), W_OK) != 0) return "folder '" + folder.string() + "' is not writable";
  if (fs::exists(path, error) && access(path.c_str(), W_OK) != 0)
    return "'" + path + "' is not writable";
  return {};
}

}  // namespace detail

/// Parses and validates every flag before anything runs. `--help` prints the usage on stdout and
/// exits 0; a malformed, out-of-range, unknown or unsupported flag, a missing value, or an output
/// path that cannot be written exits 2 with a message naming the flag.
inline Flags parse_flags(int argc, char** argv, const FlagSpec& spec) {
  const std::string_view program = argc > 0 ? std::string_view(argv[0]) : "experiment";
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      detail::print_usage(std::cout, program, spec);
      std::exit(0);
    }
    // The switches: each sets one field to a fixed value.
    const struct {
      std::string_view name;
      bool* field;
      bool value;
    } switches[] = {{"--short", &flags.short_run, true},
                    {"--check", &flags.check, true},
                    {"--no-verify", &flags.verify, false},
                    {"--quiet", &flags.quiet, true}};
    bool switched = false;
    for (const auto& candidate : switches) {
      if (arg != candidate.name) continue;
      *candidate.field = candidate.value;
      switched = true;
    }
    if (switched) continue;
    const ValueFlag all[] = {ValueFlag::seed, ValueFlag::seeds, ValueFlag::nodes,
                             ValueFlag::days, ValueFlag::csv,   ValueFlag::curves};
    std::optional<ValueFlag> flag;
    for (ValueFlag candidate : all)
      if (arg == detail::flag_name(candidate)) flag = candidate;
    if (!flag) detail::refuse(program, spec, "unknown flag '" + std::string(arg) + "'");
    bool accepted = false;
    for (const auto& entry : spec.accepted) accepted = accepted || entry.first == *flag;
    if (!accepted)
      detail::refuse(program, spec,
                     std::string(arg) + " is not supported by this program (it would be ignored)");
    if (i + 1 >= argc) detail::refuse(program, spec, std::string(arg) + " needs a value");
    const std::string_view text = argv[++i];
    const auto bad = [&](std::string_view expected) {
      detail::refuse(program, spec,
                     std::string(arg) + ": '" + std::string(text) + "' is not " +
                         std::string(expected));
    };
    switch (*flag) {
      case ValueFlag::seed: {
        const auto value = detail::whole_number<std::uint64_t>(
            text, 0, std::numeric_limits<std::uint64_t>::max());
        if (!value) bad("a whole number >= 0");
        flags.seed = *value;
        break;
      }
      case ValueFlag::seeds:
        flags.seeds = detail::whole_number<int>(text, 1, max_seeds);
        if (!flags.seeds) bad("a whole number from 1 to " + std::to_string(max_seeds));
        break;
      case ValueFlag::nodes:
        flags.nodes = detail::whole_number<int>(text, 1, max_nodes);
        if (!flags.nodes) bad("a whole number from 1 to " + std::to_string(max_nodes));
        break;
      case ValueFlag::days:
        flags.days = detail::positive_number(text, max_days);
        if (!flags.days) bad("a number of days above 0 and at most 3650");
        break;
      case ValueFlag::csv:
      case ValueFlag::curves: {
        if (text.empty()) bad("a file path");
        (*flag == ValueFlag::csv ? flags.csv : flags.curves) = std::string(text);
        break;
      }
    }
  }
  return flags;
}

/// Exits 2 naming `flag` when `path` (a file the run will write) cannot be written. Programs that
/// write several files derived from one flag check each of them.
inline void require_writable(int argc, char** argv, const FlagSpec& spec, std::string_view flag,
                             const std::string& path) {
  if (path.empty()) return;
  const std::string why = detail::unwritable(path);
  if (!why.empty())
    detail::refuse(argc > 0 ? std::string_view(argv[0]) : "experiment", spec,
                   std::string(flag) + ": cannot write '" + path + "': " + why);
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

/// Whether a progress bar may extrapolate an ETA from its fraction done. `unknown` where the
/// fraction is of simulated time and the cost per simulated second grows as the cluster fills
/// (an ETA from it promised 5 s for a run that took 2 minutes more).
enum class Eta { extrapolated, unknown };

/// A progress bar on stderr, with an ETA where the work is roughly linear in its fraction.
/// Silent for the first 2 s (short runs print nothing); on a terminal it redraws one line,
/// elsewhere (CI logs) it prints a line every 25%. Ends with the wall and CPU time of the run:
/// on a shared machine the two differ by the time other processes held the cores.
class Progress {
 public:
  Progress(std::string label, bool quiet, Eta eta = Eta::extrapolated)
      : label_(std::move(label)),
        quiet_(quiet),
        eta_(eta),
        tty_(isatty(STDERR_FILENO) == 1),
        started_(std::chrono::steady_clock::now()),
        cpu_started_(std::clock()) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { done(); }

  /// Reports `fraction` (0..1) of the work done.
  void update(double fraction) {
    if (quiet_ || finished_) return;
    const double elapsed = seconds();
    if (elapsed < 2.0) return;
    fraction = std::min(std::max(fraction, 0.0), 1.0);
    const std::string eta = eta_text(fraction, elapsed);
    if (tty_) {
      const int width = 30;
      const int filled = static_cast<int>(fraction * width);
      std::fprintf(stderr, "\r%-36.36s [%s%s] %5.1f%%  %6.0fs elapsed%s", label_.c_str(),
                   std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   std::string(static_cast<std::size_t>(width - filled), ' ').c_str(),
                   100.0 * fraction, elapsed, eta.c_str());
      drawn_ = true;
    } else if (fraction >= next_report_) {
      std::fprintf(stderr, "%s: %3.0f%% after %.0fs%s\n", label_.c_str(), 100.0 * fraction,
                   elapsed, eta.c_str());
      while (next_report_ <= fraction) next_report_ += 0.25;
    }
  }
  /// Ends the bar (prints the wall and CPU time when the run was long enough to show a bar).
  void done() {
    if (finished_) return;
    finished_ = true;
    if (quiet_) return;
    if (drawn_) std::fputc('\n', stderr);
    if (seconds() >= 2.0)
      std::fprintf(stderr, "%s: done in %.1fs wall, %.1fs CPU\n", label_.c_str(), seconds(),
                   cpu_seconds());
  }
  /// Wall-clock seconds since the bar was created.
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }
  /// CPU seconds of this process since the bar was created.
  [[nodiscard]] double cpu_seconds() const {
    return static_cast<double>(std::clock() - cpu_started_) / CLOCKS_PER_SEC;
  }

 private:
  [[nodiscard]] std::string eta_text(double fraction, double elapsed) const {
    if (eta_ == Eta::unknown) return " (of simulated time; no ETA)";
    const double eta = fraction > 0.0 ? elapsed * (1.0 - fraction) / fraction : 0.0;
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, ", ETA %.0fs", eta);
    return buffer;
  }

  std::string label_;
  bool quiet_;
  Eta eta_;
  bool tty_;
  bool drawn_ = false;
  bool finished_ = false;
  double next_report_ = 0.25;
  std::chrono::steady_clock::time_point started_;
  std::clock_t cpu_started_;
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

/// A ratio (0..1) as a percentage with `digits` decimals, or "n/a" when `count`, the number of
/// events it is a rate of, is 0: a run without preemptions has no hit rate, not a perfect one.
inline std::string percent_or_na(double ratio, std::uint64_t count, int digits = 1) {
  if (count == 0) return "n/a";
  return fixed(100.0 * ratio, digits);
}

}  // namespace experiments
