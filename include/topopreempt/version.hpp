// SPDX-License-Identifier: MIT
// Library version. The root CMakeLists.txt `project(... VERSION ...)` is the source of truth;
// scripts/check_packaging.py fails CI when these macros drift from it.
#pragma once

#include <string_view>

#define TOPOPREEMPT_VERSION_MAJOR 0
#define TOPOPREEMPT_VERSION_MINOR 5
#define TOPOPREEMPT_VERSION_PATCH 0

// Single integer for preprocessor comparisons: MAJOR * 10000 + MINOR * 100 + PATCH.
#define TOPOPREEMPT_VERSION \
  (TOPOPREEMPT_VERSION_MAJOR * 10000 + TOPOPREEMPT_VERSION_MINOR * 100 + TOPOPREEMPT_VERSION_PATCH)

#define TOPOPREEMPT_DETAIL_STRINGIZE_IMPL(x) #x
#define TOPOPREEMPT_DETAIL_STRINGIZE(x) TOPOPREEMPT_DETAIL_STRINGIZE_IMPL(x)

namespace topopreempt {

inline constexpr int version_major = TOPOPREEMPT_VERSION_MAJOR;
inline constexpr int version_minor = TOPOPREEMPT_VERSION_MINOR;
inline constexpr int version_patch = TOPOPREEMPT_VERSION_PATCH;

/// "MAJOR.MINOR.PATCH", built from the macros above so the two cannot disagree.
inline constexpr std::string_view version_string =
    TOPOPREEMPT_DETAIL_STRINGIZE(TOPOPREEMPT_VERSION_MAJOR) "." TOPOPREEMPT_DETAIL_STRINGIZE(
        TOPOPREEMPT_VERSION_MINOR) "." TOPOPREEMPT_DETAIL_STRINGIZE(TOPOPREEMPT_VERSION_PATCH);

}  // namespace topopreempt
