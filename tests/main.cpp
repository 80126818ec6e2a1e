// SPDX-License-Identifier: MIT
// The doctest runner; the tests themselves live in tests/test_*.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
