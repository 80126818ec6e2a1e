#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README quick start: install dependencies, build the quick-start example in Release, run it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release -j2 --target topopreempt_quickstart
./build/release/examples/topopreempt_quickstart
