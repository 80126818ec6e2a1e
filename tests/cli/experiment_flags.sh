#!/bin/sh
# SPDX-License-Identifier: MIT
# The experiment programs refuse every bad flag before running: exit 2 with a message naming the
# flag (and --help exits 0 with the usage on stdout). Each case fails at parsing, so this is quick.
#   usage: experiment_flags.sh PROGRAM NAME=VALUE...
#   e.g.   experiment_flags.sh build/dev/experiments/topopreempt_experiment_a supports=nodes,days
# `supports` lists the valued flags PROGRAM accepts besides --seed and --csv (which every one
# takes); the others must be refused as unsupported.
set -u

program=${1:?usage: experiment_flags.sh PROGRAM supports=FLAG,...}
supports=${2#supports=}
failures=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/experiment_flags.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT INT TERM

# expect EXIT TEXT DESCRIPTION -- ARGS...: exit status EXIT and TEXT in stderr (stdout for exit 0).
expect() {
  code=$1
  text=$2
  what=$3
  shift 4
  "$program" "$@" >"$scratch/out" 2>"$scratch/err"
  status=$?
  stream="$scratch/err"
  [ "$code" -eq 0 ] && stream="$scratch/out"
  if [ "$status" -ne "$code" ]; then
    echo "FAIL $what: exit $status, expected $code"
    sed 's/^/    /' "$scratch/err" | head -n 3
    failures=$((failures + 1))
  elif ! grep -qF -- "$text" "$stream"; then
    echo "FAIL $what: the message does not contain '$text'"
    sed 's/^/    /' "$stream" | head -n 3
    failures=$((failures + 1))
  else
    echo "ok   $what: $(head -n 1 "$stream")"
  fi
}

expect 0 "usage:" "--help" -- --help
expect 2 "unknown flag '--bogus'" "unknown flag" -- --bogus
expect 2 "--seed needs a value" "missing value" -- --seed
expect 2 "--seed: '-1'" "--seed -1" -- --seed -1
expect 2 "--seed: '7x'" "--seed 7x" -- --seed 7x
expect 2 "--csv: cannot write '/missing/dir/a.csv'" "--csv into a missing folder" -- \
  --csv /missing/dir/a.csv
expect 2 "--csv: cannot write '$scratch'" "--csv naming a folder" -- --csv "$scratch"

for flag in seeds nodes days curves; do
  case ",$supports," in
    *",$flag,"*) ;;
    *) expect 2 "--$flag is not supported" "unsupported --$flag" -- "--$flag" 3 ;;
  esac
done
case ",$supports," in *,nodes,*)
  expect 2 "--nodes: '-3'" "--nodes -3" -- --nodes -3
  expect 2 "--nodes: '41x'" "--nodes 41x" -- --nodes 41x
  expect 2 "--nodes: '0'" "--nodes 0" -- --nodes 0
  expect 2 "--nodes: '99999999999'" "--nodes beyond int" -- --nodes 99999999999 ;;
esac
case ",$supports," in *,seeds,*)
  expect 2 "--seeds: '0'" "--seeds 0" -- --seeds 0
  expect 2 "--seeds: '2.5'" "--seeds 2.5" -- --seeds 2.5 ;;
esac
case ",$supports," in *,days,*)
  expect 2 "--days: '0'" "--days 0" -- --days 0
  expect 2 "--days: 'nan'" "--days nan" -- --days nan
  expect 2 "--days: '1d'" "--days 1d" -- --days 1d ;;
esac
case ",$supports," in *,curves,*)
  expect 2 "--curves: cannot write '/missing/dir/c.csv'" "--curves into a missing folder" -- \
    --curves /missing/dir/c.csv ;;
esac
[ "$failures" -eq 0 ]
