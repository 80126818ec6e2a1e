#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI stage: ThreadSanitizer over concurrent `solve` calls (every solver and baseline, several
# threads, one shared const Allocation). Builds tests/tsan/concurrent_solve.cpp with
# -fsanitize=thread into build/tsan and runs it under a time bound; fails on any TSan report
# (halt_on_error, exit code 66), on a plan mismatch between threads, or on a timeout.
# Usage: bash .ci/stages/tsan.sh   (from anywhere; CXX overrides the compiler, default g++)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

packages=(g++ libeigen3-dev pkg-config)
missing=()
for package in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" == "install ok installed" ]] ||
    missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

build_dir="build/tsan"
mkdir -p "$build_dir"
binary="$build_dir/concurrent_solve"
pid_file="$build_dir/run.pid"
cleanup() {
  # Stop the run this script started, if a timeout or signal left it behind.
  if [[ -f "$pid_file" ]]; then
    kill "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
  fi
}
trap cleanup EXIT

# shellcheck disable=SC2207
eigen_flags=($(pkg-config --cflags eigen3))
echo "tsan: building $binary with ${CXX:-g++}"
"${CXX:-g++}" -std=c++20 -O1 -g -fsanitize=thread -fno-omit-frame-pointer -pthread \
  -Wall -Wextra -Wpedantic -Werror -Iinclude -isystem "${eigen_flags[0]#-I}" \
  tests/tsan/concurrent_solve.cpp -o "$binary"

echo "tsan: running (bounded to 180 s)"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
timeout --kill-after=10 180 "$binary" &
echo $! >"$pid_file"
status=0
wait "$(cat "$pid_file")" || status=$?
rm -f "$pid_file"
if ((status == 124)); then
  echo "tsan: FAILED: timed out" >&2
elif ((status == 66)); then
  echo "tsan: FAILED: ThreadSanitizer reported a data race (see above)" >&2
elif ((status != 0)); then
  echo "tsan: FAILED: exit status $status" >&2
else
  echo "tsan: no reports"
fi
exit "$status"
