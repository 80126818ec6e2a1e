#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI stage: the Python package. In a fresh virtual environment (Debian's /usr/bin/python3) in a
# scratch directory: `pip install .` from the repository root, done as its two steps `pip wheel .`
# and installing that wheel (nanobind and scikit-build-core from PyPI, Debian's Eigen, range-v3
# and nlohmann-json), then pytest (python/tests), the examples (examples/python: Experiment A
# with its plot written to the scratch directory, the maintenance-window controller), the wheel
# installed in a second fresh venv and used from outside the tree, and `mypy --strict` on the
# examples. Every step is bounded by `timeout`; any failure fails the stage.
#
# The cross-checks against the CLI and the C++ simulator example need those programs: pass
# TOPOPREEMPT_WHATIF and TOPOPREEMPT_SIMULATE_TRACE (CI passes stage 5's build/release ones and
# TOPOPREEMPT_REQUIRE_CPP_PROGRAMS=1, so that a missing program fails instead of skipping).
# TOPOPREEMPT_EXPERIMENT_A (stage 5's experiment program) also compares the example's hit rates
# with the C++ experiment's on the same trace.
# Usage: bash .ci/stages/python.sh   (from anywhere)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
PYTHON=/usr/bin/python3

# What the build needs from Debian (CI's stage 1 has installed it already: no apt-get here then,
# so this stage may run beside the Slurm stage's).
bash "$ROOT/scripts/install-deps.sh" python3-venv python3-dev

scratch="$(mktemp -d "${TMPDIR:-/tmp}/topopreempt-python.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
venv="$scratch/venv"

step() { printf -- '--- [%4ds] python: %s\n' "$SECONDS" "$*"; }

step "fresh venv ($("$PYTHON" --version))"
"$PYTHON" -m venv "$venv"
timeout 600 "$venv/bin/python" -m pip install --quiet --upgrade pip
timeout 900 "$venv/bin/python" -m pip install --quiet pytest mypy numpy pandas matplotlib

step "pip wheel . (the nanobind compile: the bulk of this stage), then pip install it"
# `pip install .` is exactly this: build the wheel, install it. Building it explicitly keeps the
# wheel, so that a second environment can install it below (`pip wheel .` installs elsewhere).
# The build tree goes to the scratch directory, so every run compiles from scratch (ccache, when
# CI set it up, still applies through CMAKE_CXX_COMPILER_LAUNCHER).
CMAKE_BUILD_PARALLEL_LEVEL=2 timeout 2400 "$venv/bin/python" -m pip wheel --verbose --no-deps \
  --wheel-dir "$scratch/dist" --config-settings=build-dir="$scratch/build" "$ROOT" \
  >"$scratch/pip-wheel.log" 2>&1 ||
  { tail -n 80 "$scratch/pip-wheel.log"; echo "ERROR: pip wheel . failed" >&2; exit 1; }
wheel=("$scratch"/dist/topopreempt-*.whl)
[[ ${#wheel[@]} -eq 1 && -f "${wheel[0]}" ]] || { echo "ERROR: no single wheel in $scratch/dist" >&2; exit 1; }
echo "built ${wheel[0]##*/}"
timeout 600 "$venv/bin/python" -m pip install --quiet "${wheel[0]}"

step "import from outside the source tree"
(cd "$scratch" && "$venv/bin/python" -c 'import topopreempt, sys; print("topopreempt", topopreempt.__version__, "on", sys.version.split()[0])')

step "pytest"
(cd "$scratch" && timeout 1200 "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$ROOT/python/tests")

step "example: Experiment A through Python (41 servers, 1 day)"
(cd "$scratch" && timeout 900 "$venv/bin/python" "$ROOT/examples/python/experiment_a.py" 41 1 \
  "$scratch/experiment_a.png") | tee "$scratch/experiment_a.txt"
test -s "$scratch/experiment_a.png"
# The example rebuilds the C++ experiment's trace draw for draw: with the C++ program at hand
# (TOPOPREEMPT_EXPERIMENT_A), both must count the same preemptions at the same hit rate.
if [[ -n "${TOPOPREEMPT_EXPERIMENT_A:-}" ]]; then
  timeout 900 "$TOPOPREEMPT_EXPERIMENT_A" --nodes 41 --days 1 --quiet >"$scratch/experiment_a_cpp.txt"
  for solver in kube_default branch_and_bound; do
    python_row=$(sed -n "s/^$solver: \([0-9]*\) preemptions, hit rate \([0-9.]*\)%.*/\1 \2/p" \
      "$scratch/experiment_a.txt")
    cpp_row=$(awk -F'|' -v s="$solver" '$3 ~ "^ " s " $" {gsub(/ /, "", $5); gsub(/ /, "", $6); print $5, $6}' \
      "$scratch/experiment_a_cpp.txt")
    echo "$solver: Python '$python_row', C++ '$cpp_row' (preemptions, hit rate %)"
    [[ -n "$python_row" && "$python_row" == "$cpp_row" ]] ||
      { echo "ERROR: the Python example and the C++ experiment disagree on $solver" >&2; exit 1; }
  done
fi

step "example: a maintenance window steered by a controller, watched by a progress callable"
(cd "$scratch" && timeout 600 "$venv/bin/python" "$ROOT/examples/python/maintenance_window.py") |
  tee "$scratch/maintenance_window.txt"
grep -q "controller calls" "$scratch/maintenance_window.txt"

step "the wheel in a second fresh venv: installs elsewhere and solves"
"$PYTHON" -m venv "$scratch/venv-wheel"
timeout 900 "$scratch/venv-wheel/bin/python" -m pip install --quiet "${wheel[0]}"
(cd / && "$scratch/venv-wheel/bin/python" -c '
import topopreempt as tp
state = tp.generate_cluster(tp.ClusterSpec(nodes=4, seed=3))
plan = tp.branch_and_bound.solve(state, tp.make_preemptor(tp.PreemptorKind.node, 8), tp.LostWork())
assert tp.verify_plan(state, tp.make_preemptor(tp.PreemptorKind.node, 8), plan, tp.LostWork()).ok
print("wheel:", tp.__file__, tp.__version__, plan.status)')

step "mypy --strict on the examples"
(cd "$scratch" && timeout 600 "$venv/bin/python" -m mypy --strict --cache-dir "$scratch/mypy-cache" \
  "$ROOT/examples/python")
step "passed"
