#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README quick start: install dependencies, build the quick-start example in Release, run it (its
# side-by-side table of every solver first, then the exact plan explained once; `--explain all`
# for every explanation),
# then a short Experiment A (a simulated day on 41 of the paper's servers; EXPERIMENTS.md).
# Also builds build/release/tools/topopreempt-whatif, which the README's commands after the
# quick start use (scripts/readme_commands.sh runs them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release -j2 --target topopreempt_quickstart topopreempt_experiment_a \
  topopreempt-whatif
./build/release/examples/topopreempt_quickstart
echo
./build/release/experiments/topopreempt_experiment_a --short
