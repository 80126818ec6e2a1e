#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian/Ubuntu packages topopreempt needs to build, test and benchmark.
# Does nothing when everything is already installed; uses sudo only when not root.
# Usage: bash scripts/install-deps.sh [EXTRA-PACKAGE...]   (CI adds its own tools: ccache, clang)
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libeigen3-dev librange-v3-dev        # the library's own dependencies
  doctest-dev                          # tests
  libbenchmark-dev coinor-libcbc-dev   # benchmarks (CBC: optional MIP baseline)
  nlohmann-json3-dev                   # tools/ and io/ headers
  python3                              # tests: extracts the docs' C++ blocks (tests/doc_snippets)
  "$@"                                 # the caller's extra packages
)

is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing=()
for package in "${packages[@]}"; do
  is_installed "$package" || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-deps: not a Debian/Ubuntu system; please install: ${missing[*]}" >&2
  exit 1
fi

sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
