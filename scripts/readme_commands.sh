#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs, verbatim and from the repository root, every shell block of README.md marked
# `<!-- readme-test: run -->` (the commands a reader runs after the two quick-start commands; see
# CONTRIBUTING.md). Needs what the quick start built (`bash scripts/quickstart.sh`).
#   usage: bash scripts/readme_commands.sh [--list]   (--list prints the commands, runs nothing)
# Exits 1 naming the README line of the first block that fails, or when no block is marked.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

list_only=0
case "${1:-}" in
  --list) list_only=1 ;;
  "") ;;
  *)
    echo "usage: bash scripts/readme_commands.sh [--list]" >&2
    exit 2
    ;;
esac

# Each marked block as "LINE<TAB>command" records, one block per NUL-terminated record.
blocks=$(awk '
  /^<!-- readme-test: run -->$/ { marked = 1; next }
  marked && /^```(sh|bash)$/ { inside = 1; start = NR + 1; text = ""; marked = 0; next }
  inside && /^```$/ { printf "%d\t%s%c", start, text, 0; inside = 0; next }
  inside { text = text $0 "\n"; next }
  /^[[:space:]]*$/ { next }
  { marked = 0 }
' README.md | tr '\0' '\036')

if [[ -z "$blocks" ]]; then
  echo "readme_commands: README.md has no block marked <!-- readme-test: run -->" >&2
  exit 1
fi

output=$(mktemp "${TMPDIR:-/tmp}/readme_commands.XXXXXX")
trap 'rm -f "$output"' EXIT
status=0
while IFS= read -r -d $'\036' record; do
  line=${record%%$'\t'*}
  commands=${record#*$'\t'}
  echo "--- README.md:$line"
  printf '%s' "$commands"
  ((list_only)) && continue
  if ! bash -euo pipefail -c "$commands" >"$output" 2>&1; then
    echo "FAIL README.md:$line: the block above failed:" >&2
    sed 's/^/    /' "$output" | tail -n 20 >&2
    status=1
  else
    echo "ok   README.md:$line ($(wc -l <"$output") lines of output)"
  fi
done <<<"$blocks"
exit "$status"
