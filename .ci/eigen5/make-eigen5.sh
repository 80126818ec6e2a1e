#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds an Eigen 5.0.1 install prefix for CI, offline apart from PyPI:
#   bash .ci/eigen5/make-eigen5.sh <prefix>
# <prefix>/include/eigen3 gets Eigen 5.0.1's real headers (vendored in the `eigency` 5.0.1.1
# wheel on PyPI; no Eigen 5 is packaged for Debian 12), <prefix>/share/eigen3/cmake the stand-in
# package config beside this script plus the version file CMake writes for SameMajorVersion, the
# compatibility Eigen's own build declares. Put <prefix> first on CMAKE_PREFIX_PATH.
set -euo pipefail
prefix="${1:?usage: make-eigen5.sh <prefix>}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wheels="${TOPOPREEMPT_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/topopreempt-ci}/wheels"
mkdir -p "$wheels"

# A binary wheel for a fixed platform and Python version: only its headers are used, so the
# Python running this script does not matter.
wheel=$(find "$wheels" -name 'eigency-5.0.1.1-*.whl' -print -quit)
if [[ -z "$wheel" ]]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux2014_x86_64 --dest "$wheels" 'eigency==5.0.1.1'
  wheel=$(find "$wheels" -name 'eigency-5.0.1.1-*.whl' -print -quit)
fi

rm -rf "$prefix"
mkdir -p "$prefix/include/eigen3" "$prefix/share/eigen3/cmake"
python3 - "$wheel" "$prefix/include/eigen3" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
root = "eigency/eigen/"
with zipfile.ZipFile(wheel) as archive:
    members = [m for m in archive.namelist()
               if m.startswith(root + "Eigen/") and not m.endswith("/")]
    if not members:
        sys.exit(f"{wheel}: no {root}Eigen/ headers")
    for member in members:
        target = dest + "/" + member[len(root):]
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with archive.open(member) as source, open(target, "wb") as out:
            out.write(source.read())
PY
# Refuse anything but 5.0.1: the point is to test against Eigen 5.
grep -q '^#define EIGEN_MAJOR_VERSION 5$' "$prefix/include/eigen3/Eigen/Version"
grep -q '^#define EIGEN_MINOR_VERSION 0$' "$prefix/include/eigen3/Eigen/Version"
grep -q '^#define EIGEN_PATCH_VERSION 1$' "$prefix/include/eigen3/Eigen/Version"

cp "$here/Eigen3Config.cmake" "$prefix/share/eigen3/cmake/Eigen3Config.cmake"
cmake -DOUT="$prefix/share/eigen3/cmake/Eigen3ConfigVersion.cmake" -P "$here/write-version.cmake"
echo "make-eigen5: Eigen 5.0.1 at $prefix"
