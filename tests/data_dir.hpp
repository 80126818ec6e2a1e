// SPDX-License-Identifier: MIT
#pragma once
// Where our own programs (tests, benchmarks, experiments) find input data, with no test framework
// attached so that benchmarks and tools can use it too:
// - tests/data/: the small reference data the unit tests need, shipped in the repository, so a
//   plain clone passes its tests (see tests/data/README.md);
// - the full data set (`TOPOPREEMPT_DATA_DIR`): read-only files beside the repository, absent from
//   a plain clone. Whatever needs it must say that it is skipped, never fail.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

namespace topopreempt::test {

#ifdef TOPOPREEMPT_TEST_DATA_DIR
/// The repository's tests/data directory, compiled in as TOPOPREEMPT_TEST_DATA_DIR (an absolute
/// path, so the tests find it from any working directory). Only for programs that define it.
[[nodiscard]] inline std::filesystem::path test_data_dir() {
  return std::filesystem::path(TOPOPREEMPT_TEST_DATA_DIR);
}

/// `relative` inside tests/data.
[[nodiscard]] inline std::filesystem::path test_data(std::string_view relative) {
  return test_data_dir() / relative;
}
#endif

/// The full data set: the `TOPOPREEMPT_DATA_DIR` environment variable when set, else the directory
/// configured at build time (CMake cache variable of the same name, default `../shared/data`
/// beside the repository). Empty when that directory does not exist. Reads the environment, so
/// call it from one thread at a time with respect to setenv().
[[nodiscard]] inline std::optional<std::filesystem::path> data_dir() {
  std::filesystem::path dir;
  if (const char* from_environment = std::getenv("TOPOPREEMPT_DATA_DIR");
      from_environment != nullptr && *from_environment != '\0') {
    dir = from_environment;
  } else {
#ifdef TOPOPREEMPT_DATA_DIR
    dir = TOPOPREEMPT_DATA_DIR;
#endif
  }
  std::error_code error;
  if (dir.empty() || !std::filesystem::is_directory(dir, error)) {
    return std::nullopt;
  }
  return dir;
}

/// `relative` inside the full data set, or empty when the data set or that file is missing.
[[nodiscard]] inline std::optional<std::filesystem::path> data_file(std::string_view relative) {
  const auto dir = data_dir();
  if (!dir) {
    return std::nullopt;
  }
  std::filesystem::path file = *dir / relative;
  std::error_code error;
  if (!std::filesystem::is_regular_file(file, error)) {
    return std::nullopt;
  }
  return file;
}

}  // namespace topopreempt::test
