#!/bin/sh
# SPDX-License-Identifier: MIT
# The plans the documentation promises are the plans topopreempt-whatif prints.
#   usage: check_doc_claims.sh PATH/TO/topopreempt-whatif REPOSITORY_ROOT
# gpu-shares.json's description and docs/snapshot-format.md each state "the cheapest plan under
# priority weighting evicts POD on NODE". Every topology-aware solver and the exhaustive baseline
# must evict exactly POD, with NODE as the plan's target. Exits 1 on any mismatch.
set -u

tool=${1:?usage: check_doc_claims.sh TOOL REPOSITORY_ROOT}
root=${2:?usage: check_doc_claims.sh TOOL REPOSITORY_ROOT}
snapshot="$root/examples/snapshots/gpu-shares.json"
failures=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/check_doc_claims.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT INT TERM

claim_pattern='cheapest plan under priority weighting evicts [A-Za-z0-9_-]* on [A-Za-z0-9_-]*'
# Each document must make the claim once; the claims must agree.
claims=""
for document in "$snapshot" "$root/docs/snapshot-format.md"; do
  found=$(grep -o "$claim_pattern" "$document" | sort -u)
  if [ -z "$found" ] || [ "$(printf '%s\n' "$found" | wc -l)" -ne 1 ]; then
    echo "FAIL $document: expected one claim 'cheapest plan under priority weighting evicts POD on NODE', found: ${found:-none}"
    failures=$((failures + 1))
    continue
  fi
  claims="$claims$found
"
done
[ "$failures" -eq 0 ] || exit 1
if [ "$(printf '%s' "$claims" | sort -u | wc -l)" -ne 1 ]; then
  echo "FAIL the documents disagree:"
  printf '%s' "$claims" | sed 's/^/    /'
  exit 1
fi
claim=$(printf '%s' "$claims" | head -n 1)
pod=$(echo "$claim" | sed 's/.* evicts \([^ ]*\) on .*/\1/')
node=$(echo "$claim" | sed 's/.* on \([^ ]*\)$/\1/')
echo "claim: evicts $pod on $node"

for solver in greedy knapsack branch_and_bound exhaustive_subsets; do
  if ! "$tool" "$snapshot" --solver "$solver" --cost priority_weighted >"$scratch/out" 2>&1; then
    echo "FAIL $solver: topopreempt-whatif exited non-zero"
    sed 's/^/    /' "$scratch/out" | head -n 5
    failures=$((failures + 1))
    continue
  fi
  # The plan's victim lines ("    - evict workload 11 'openb-pod-0011' ...") before the
  # explanation, which repeats them.
  victims=$(sed -n '/^  victims/,/^  placement/p' "$scratch/out" |
    sed -n "s/^    - [a-z]* workload [0-9]* '\([^']*\)'.*/\1/p" | tr '\n' ' ')
  target=$(sed -n 's/^  target: [a-z_]* \(.*\)$/\1/p' "$scratch/out")
  case "$target" in
    "$node" | */"$node") target_ok=1 ;;
    *) target_ok=0 ;;
  esac
  if [ "$victims" != "$pod " ] || [ "$target_ok" -ne 1 ]; then
    echo "FAIL $solver: evicts '${victims% }' with target '$target'; the docs say $pod on $node"
    failures=$((failures + 1))
  else
    echo "ok   $solver evicts $pod on $target"
  fi
done

# The embedding guide leads with the safe path: its opening C++ blocks (before the first
# section after "The path") use plan_queue, commit and IncrementalDecider, and never apply a plan
# by hand (state.add of the preemptor at plan.placement).
guide="$root/docs/embedding.md"
path_section=$(awk '/^## The path/ { on = 1; next } on && /^## / { exit } on' "$guide")
for api in 'plan_queue(' 'commit(' 'IncrementalDecider'; do
  if printf '%s\n' "$path_section" | grep -qF "$api"; then
    echo "ok   docs/embedding.md leads with $api"
  else
    echo "FAIL docs/embedding.md: its path section does not use $api"
    failures=$((failures + 1))
  fi
done
if printf '%s\n' "$path_section" | grep -q 'state\.add([a-z_]*, *[a-z_.]*plan\.placement)'; then
  echo "FAIL docs/embedding.md: its path section applies a plan by hand (state.add at plan.placement)"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ]
