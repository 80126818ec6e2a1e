#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README: install dependencies, build everything in the `dev` preset (Debug) and run the tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev -j2
ctest --preset dev
