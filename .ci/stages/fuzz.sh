#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI stage: build the snapshot and sequence fuzzers (tests/fuzz, clang 14 + libFuzzer + ASan +
# UBSan) and run each for a bounded time from its seed corpus; any crash, sanitizer report, leak,
# timeout, out-of-memory or broken rule is a failure (libFuzzer exits non-zero and leaves the
# input in $ARTIFACTS).
#   usage: bash .ci/stages/fuzz.sh        (from anywhere; TOPOPREEMPT_FUZZ_SECONDS overrides 90
#                                          for the snapshot fuzzer, TOPOPREEMPT_SEQUENCE_FUZZ_SECONDS
#                                          60 for the sequence fuzzer)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
SECONDS_TO_FUZZ="${TOPOPREEMPT_FUZZ_SECONDS:-90}"
SEQUENCE_SECONDS="${TOPOPREEMPT_SEQUENCE_FUZZ_SECONDS:-60}"
BUILD="$ROOT/build/fuzz"
ARTIFACTS="$BUILD/artifacts"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/topopreempt-fuzz.XXXXXX")"
BACKGROUND_LOG_DIR="$SCRATCH"
# shellcheck source=.ci/lib/background.sh
source .ci/lib/background.sh
cleanup() {
  stop_background
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# Debian 12 packages: clang 14 with its runtime (libFuzzer and the sanitizers live in
# libclang-rt-14-dev), plus the project's own header dependencies.
packages=(clang-14 libclang-rt-14-dev cmake libeigen3-dev librange-v3-dev nlohmann-json3-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 and line tables only, as OSS-Fuzz builds: a sanitizer report needs no more debug
# information than file:line, and each fuzzer's one translation unit compiles in about 0.8x the
# time of RelWithDebInfo's -O2 -g (measured on fuzz_sequence.cpp with clang 14).
CC=clang-14 CXX=clang++-14 cmake -S tests/fuzz -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" "${launcher[@]}"
cmake --build "$BUILD" -j2

# The checked-in seeds stay untouched: the run grows a copy.
cp -r tests/fuzz/corpus "$SCRATCH/corpus"
cp -r tests/fuzz/sequence_corpus "$SCRATCH/sequence_corpus"
mkdir -p "$ARTIFACTS"
# fuzz NAME SECONDS CORPUS [libFuzzer options...]: starts build/fuzz/topopreempt_fuzz_NAME in the
# background. A fuzzer runs on one core: the two run side by side, each for its own time.
fuzz() {
  local name=$1 seconds=$2 corpus=$3
  shift 3
  echo "fuzzing $name for ${seconds}s"
  start_in_background "$name" "$BUILD/topopreempt_fuzz_$name" "$corpus" \
    -max_total_time="$seconds" -rss_limit_mb=4096 -artifact_prefix="$ARTIFACTS/$name-" \
    -print_final_stats=1 "$@"
}
fuzz snapshot "$SECONDS_TO_FUZZ" "$SCRATCH/corpus" -dict=tests/fuzz/snapshot.dict -timeout=10 \
  -max_len=65536
fuzz sequence "$SEQUENCE_SECONDS" "$SCRATCH/sequence_corpus" -timeout=30 -max_len=2048
failed=0
report_background snapshot || failed=1
report_background sequence || failed=1
if ((failed != 0)); then
  echo "ERROR: a fuzzer found a problem; inputs in $ARTIFACTS:" >&2
  ls -l "$ARTIFACTS" >&2 || true
  exit 1
fi
echo "fuzz: no findings in ${SECONDS_TO_FUZZ}s (snapshots) + ${SEQUENCE_SECONDS}s (sequences)"
