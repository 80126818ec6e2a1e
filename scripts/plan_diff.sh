#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Proves that a refactoring changed no plan: builds topopreempt-whatif at REV (default: HEAD) and
# in the working tree, runs every example snapshot (the invalid ones too) through every solver
# and every cost model, and diffs the JSON plans and error messages byte for byte (only the
# measured "seconds" statistic is masked).
# Usage: bash scripts/plan_diff.sh [REV]    (from the repository root; needs the dev dependencies)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rev="${1:-HEAD}"
work="$(mktemp -d "${TMPDIR:-/tmp}/topopreempt-plan-diff.XXXXXX")"
cleanup() {
  git worktree remove --force "$work/base" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

build_whatif() { # <source dir> <build dir>
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DTOPOPREEMPT_BUILD_TESTS=OFF \
    -DTOPOPREEMPT_BUILD_EXAMPLES=OFF -DTOPOPREEMPT_BUILD_EXPERIMENTS=OFF \
    -DTOPOPREEMPT_BUILD_TOOLS=ON >/dev/null
  cmake --build "$2" --target topopreempt-whatif -j2 >/dev/null
}

run_all() { # <whatif> <output dir>
  mkdir -p "$2"
  for snapshot in examples/snapshots/*.json examples/snapshots/invalid/*.json; do
    for solver in greedy knapsack branch_and_bound kube_default exhaustive_subsets; do
      for cost in victim_count priority_weighted lost_work reload_time kubernetes_order; do
        local name
        name="$(basename "$snapshot" .json)_${solver}_${cost}"
        set +e
        "$1" "$snapshot" --solver "$solver" --cost "$cost" --format json >"$2/$name.json" 2>"$2/$name.err"
        echo "exit $?" >>"$2/$name.err"
        set -e
        sed -i -E 's/"seconds": ?[-0-9.e+]+/"seconds": "masked"/g' "$2/$name.json"
      done
    done
  done
}

git worktree add --detach "$work/base" "$rev" >/dev/null
echo "plan_diff: building topopreempt-whatif at $rev and in the working tree"
build_whatif "$work/base" "$work/build-base"
build_whatif . "$work/build-tree"
# Both run on the working tree's snapshots, so that only the code differs.
run_all "$work/build-base/tools/topopreempt-whatif" "$work/base-plans"
run_all "$work/build-tree/tools/topopreempt-whatif" "$work/tree-plans"
count=$(find "$work/tree-plans" -name '*.json' | wc -l)
if diff -r "$work/base-plans" "$work/tree-plans"; then
  echo "plan_diff: $count plans and their errors are byte-identical to $rev"
else
  echo "plan_diff: plans differ from $rev (above)" >&2
  exit 1
fi
