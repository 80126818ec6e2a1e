#!/bin/sh
# SPDX-License-Identifier: MIT
# Smoke test of topopreempt-whatif over examples/snapshots/.
#   usage: run_whatif.sh PATH/TO/topopreempt-whatif SNAPSHOT_DIR
# Valid examples must exit 0 (infeasible-*.json: 1, documented as infeasible; 4 would be
# "unknown", which no example may be), in every output
# format and with --solver all; JSON output must parse. Every invalid/*.json must exit 2 with a
# JSON path ("$.") on stderr. Prints one line per check; exits 1 if any check failed.
set -u

tool=${1:?usage: run_whatif.sh TOOL SNAPSHOT_DIR}
dir=${2:?usage: run_whatif.sh TOOL SNAPSHOT_DIR}
failures=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/run_whatif.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT INT TERM

check() {  # check EXPECTED_EXIT DESCRIPTION -- COMMAND...
  expected=$1
  what=$2
  shift 3
  "$@" >"$scratch/out" 2>"$scratch/err"
  status=$?
  if [ "$status" -ne "$expected" ]; then
    echo "FAIL $what: exit $status, expected $expected"
    sed 's/^/    /' "$scratch/err" | head -n 5
    failures=$((failures + 1))
    return 1
  fi
  echo "ok   $what (exit $status)"
  return 0
}

# JSON on stdout must parse (python3 when present; otherwise only the exit code is checked).
check_json() {
  if command -v python3 >/dev/null 2>&1; then
    if ! python3 -c 'import json, sys; json.load(sys.stdin)' <"$scratch/out"; then
      echo "FAIL $1: stdout is not valid JSON"
      failures=$((failures + 1))
    fi
  fi
}

check 0 "--help" -- "$tool" --help
check 2 "no arguments" -- "$tool"
check 2 "unknown option" -- "$tool" --bogus "$dir/paper-server.json"
check 2 "unknown solver" -- "$tool" --solver simplex "$dir/paper-server.json"
check 2 "missing file" -- "$tool" "$dir/does-not-exist.json"
# A limit past 2^40 ms used to overflow std::chrono::nanoseconds (undefined behaviour).
check 2 "--time-limit-ms beyond 2^40" -- \
  "$tool" --time-limit-ms 9300000000000 "$dir/paper-server.json"
check 0 "--time-limit-ms 2^40" -- "$tool" --time-limit-ms 1099511627776 "$dir/paper-server.json"
# Finite prices whose sum overflows a double: the snapshot loads, but its cost model is unusable
# for this preemptor, an input error (it used to read as a wrong "infeasible").
here=$(dirname "$0")
if check 2 "cost model whose prices overflow" -- "$tool" --solver all "$here/cost-sum-overflow.json"; then
  if ! grep -q '\$\.cost_model' "$scratch/err"; then
    echo "FAIL cost model whose prices overflow: \$.cost_model not named on stderr"
    failures=$((failures + 1))
  fi
fi

# Issue 19: a gang guaranteed on one GPU whose CPU comes from the core groups beside it (RTX
# 4090 server): every solver's plan must verify (it used to exit 3).
check 0 "GPU-scoped gang with CPU beside the GPU, every solver" -- \
  "$tool" --solver all "$here/gpu-gang-beside-cores.json"

# Issue 34: a limit reached before anything was proven answered "infeasible". A limit of 0 still
# searches the most promising domains (a plan here, exit 0), and a gang with too few hosts that
# can ever be emptied is proven infeasible before any search, whatever the limit (exit 1).
for solver in branch_and_bound greedy knapsack exhaustive_subsets all; do
  check 0 "--time-limit-ms 0 on one node with two running workloads ($solver)" -- \
    "$tool" --solver "$solver" --time-limit-ms 0 "$here/limit-zero.json"
done
for limit in 0 1 500; do
  if check 1 "gang of 4 nodes where only 3 can be emptied, --time-limit-ms $limit" -- \
    "$tool" --time-limit-ms "$limit" "$here/gang-too-few-hosts.json"; then
    if grep -q 'hold at most 3 of the 4 replicas' "$scratch/out" &&
      grep -q 'verification: infeasible confirmed' "$scratch/out"; then
      echo "ok   the proof is named: $(grep -m1 'hold at most' "$scratch/out" | sed 's/^ *//')"
    else
      echo "FAIL gang-too-few-hosts.json: the host-count proof is not in the explanation"
      sed 's/^/    /' "$scratch/out" | head -n 20
      failures=$((failures + 1))
    fi
  fi
done

found=0
for snapshot in "$dir"/*.json; do
  [ -e "$snapshot" ] || continue
  found=$((found + 1))
  name=$(basename "$snapshot")
  expected=0
  case "$name" in infeasible-*) expected=1 ;; esac
  check "$expected" "$name" -- "$tool" "$snapshot"
  # An infeasible plan has nothing to apply: the text says what was verified, never "plan ok".
  if [ "$expected" -eq 1 ]; then
    if grep -q 'verification: infeasible confirmed' "$scratch/out" &&
      ! grep -q 'plan ok' "$scratch/out"; then
      echo "ok   $name: $(grep 'verification:' "$scratch/out")"
    else
      echo "FAIL $name: the verification line of an infeasible plan does not say so"
      grep 'verification:' "$scratch/out" | sed 's/^/    /'
      failures=$((failures + 1))
    fi
  fi
  if check "$expected" "$name --format json" -- "$tool" --format json "$snapshot"; then
    check_json "$name --format json"
  fi
  check "$expected" "$name --solver all" -- "$tool" --solver all --format both "$snapshot"
  if check "$expected" "$name --solver all --format json --time-limit-ms 5000" -- \
    "$tool" --solver all --format json --time-limit-ms 5000 "$snapshot"; then
    check_json "$name --solver all --format json"
  fi
  for cost in victim_count priority_weighted lost_work reload_time kubernetes_order; do
    check "$expected" "$name --cost $cost" -- "$tool" --cost "$cost" "$snapshot"
  done
done
if [ "$found" -eq 0 ]; then
  echo "FAIL no snapshots in $dir"
  failures=$((failures + 1))
fi

for snapshot in "$dir"/invalid/*.json; do
  [ -e "$snapshot" ] || continue
  name=invalid/$(basename "$snapshot")
  if check 2 "$name" -- "$tool" "$snapshot"; then
    if grep -q '\$\.' "$scratch/err"; then
      echo "ok   $name names a JSON path: $(head -n 1 "$scratch/err")"
    else
      echo "FAIL $name: no JSON path (\$.) on stderr"
      sed 's/^/    /' "$scratch/err" | head -n 5
      failures=$((failures + 1))
    fi
  fi
done

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
