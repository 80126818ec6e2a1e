#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README: install dependencies, build everything in the `dev` preset (Debug) and run the tests,
# then the README's commands that follow the quick start, verbatim, when the quick start's Release
# build is there (they name ./build/release/tools/topopreempt-whatif).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev -j2
ctest --preset dev

if [[ -x build/release/tools/topopreempt-whatif ]]; then
  bash scripts/readme_commands.sh
else
  echo "test.sh: not running the README's commands after the quick start:" \
    "build/release/tools/topopreempt-whatif is missing (run bash scripts/quickstart.sh first)"
fi
