#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the API reference (target topopreempt_docs, doxygen) in its own small build tree and
# fails on any doxygen warning, such as a public entity without a doc comment (CI stage 2).
# Then proves the check can fail: on a scratch copy with the doc comments of one C++ function, one
# C function and one enum value removed, the same configuration must fail and name all three.
#   usage: bash scripts/check_api_docs.sh [build-dir]   (default build/docs)
# Needs doxygen (apt-get install doxygen), python3, and what configuring the project needs
# (Eigen, range-v3). Takes a few seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build/docs}"

cmake -S . -B "$build" -DTOPOPREEMPT_BUILD_DOCS=ON -DTOPOPREEMPT_BUILD_TESTS=OFF \
  -DTOPOPREEMPT_BUILD_EXAMPLES=OFF -DTOPOPREEMPT_BUILD_TOOLS=OFF \
  -DTOPOPREEMPT_BUILD_EXPERIMENTS=OFF -DTOPOPREEMPT_BUILD_BENCHMARKS=OFF \
  -DTOPOPREEMPT_BUILD_C_API=OFF -DTOPOPREEMPT_INSTALL=OFF >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --target topopreempt_docs
echo "check_api_docs: the reference built with no warning: $build/docs/reference/html/index.html"

# The control: the same Doxyfile over a copy missing three doc comments must fail.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/topopreempt-docs.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp -r include "$scratch/include"
cp integrations/c_api/include/topopreempt_c.h "$scratch/topopreempt_c.h"
# C++: the doc comment right above verify_plan's declaration (its `template` line, if any, kept).
python3 - "$scratch" <<'PY'
import re, sys
root = sys.argv[1]
def drop_comment_above(path, declaration, comment):
    lines = open(path, encoding="utf-8").read().split("\n")
    at = next(i for i, line in enumerate(lines) if re.search(declaration, line))
    i = at - 1
    while i >= 0 and lines[i].lstrip().startswith("template"):
        i -= 1
    end = i
    while i >= 0 and re.match(comment, lines[i]):
        i -= 1
    if end == i:
        sys.exit(f"check_api_docs: no doc comment above {declaration} in {path}")
    del lines[i + 1:end + 1]
    open(path, "w", encoding="utf-8").write("\n".join(lines))
drop_comment_above(f"{root}/include/topopreempt/plan/verifier.hpp",
                   r"^\[\[nodiscard\]\] PlanVerdict verify_plan\(", r"^\s*///")
drop_comment_above(f"{root}/topopreempt_c.h", r"tp_cluster_create\(void\)", r"^\s*/?\*")
drop_comment_above(f"{root}/include/topopreempt/model/resources.hpp", r"^  device,$", r"^\s*///")
PY
{ cat "$build/docs/reference/Doxyfile"
  echo "INPUT = $scratch/include/topopreempt $scratch/topopreempt_c.h"
  echo "STRIP_FROM_PATH = $scratch"
  echo "OUTPUT_DIRECTORY = $scratch/out"
} | doxygen - >"$scratch/control.log" 2>&1 && doxygen_passed=1 || doxygen_passed=0
python3 docs/reference/check_enumerators.py "$scratch/out/xml" >>"$scratch/control.log" 2>&1 &&
  enumerators_passed=1 || enumerators_passed=0
if ((doxygen_passed || enumerators_passed)); then
  cat "$scratch/control.log" >&2
  echo "check_api_docs: ERROR: a check passed with doc comments removed" >&2
  exit 1
fi
for missing in 'verify_plan' 'tp_cluster_create' 'ResourceKind::device'; do
  grep -q "$missing.* is not documented" "$scratch/control.log" || {
    cat "$scratch/control.log" >&2
    echo "check_api_docs: ERROR: the control run did not name $missing" >&2
    exit 1
  }
done
echo "check_api_docs: control ok: removing the doc comments of verify_plan, tp_cluster_create and ResourceKind::device fails the check"
