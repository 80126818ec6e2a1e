#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keeps the README a short, true product page (ctest: topopreempt.readme_consistency).

- README.md has at most 250 lines, and no date or commit hash (those belong to the documents
  that measure, and to git).
- Every figure the README quotes through a link to a document that measures it (BENCHMARKS.md,
  EXPERIMENTS.md, docs/slurm.md, docs/kubernetes.md) appears there as written: the link text of
  any such link that holds a digit must occur in the linked document (emphasis, code marks and
  line breaks aside). So a figure changed in the measuring document fails here until the README
  follows.
- Every relative link of the README points to a file that exists, and each #anchor to a heading
  of that file.
- The Slurm differential's case count quoted in README.md, CONTRIBUTING.md and docs/slurm.md
  ("N random cases", "N-case") is the one CI runs (`--cases N` in .ci/stages/slurm.sh).

Usage: check_readme.py [repository-root]   Exits 1 naming every failed check.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
MAX_LINES = 250
MEASURING = {"BENCHMARKS.md", "EXPERIMENTS.md", "docs/slurm.md", "docs/kubernetes.md"}
MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
          "December")
DATE = re.compile(rf"\b\d{{4}}-\d\d-\d\d\b|\b\d{{1,2}} (?:{MONTHS})\b|\b(?:{MONTHS}) \d{{4}}\b")
HEX = re.compile(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/-]|\.\w)")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")

failures: list[str] = []


def fail(message: str) -> None:
    failures.append(message)


def normalised(text: str) -> str:
    """Markdown text as a reader sees it: no emphasis or code marks, one space between words."""
    return " ".join(text.replace("**", "").replace("`", "").split())


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = normalised(heading).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    inside_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside_code = not inside_code
        elif not inside_code and line.startswith("#"):
            found.add(slug(line.lstrip("#").strip()))
    return found


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    inside_code = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            inside_code = not inside_code
            continue
        if not inside_code:
            yield number, line


def check_shape(readme: str) -> None:
    lines = readme.count("\n") + (0 if readme.endswith("\n") else 1)
    if lines > MAX_LINES:
        fail(f"README.md has {lines} lines; at most {MAX_LINES}")
    for number, line in prose_lines(readme):
        for match in DATE.finditer(line):
            fail(f"README.md:{number}: a date ({match.group(0)!r}); dates belong where measured")
        for match in HEX.finditer(line):
            token = match.group(0)
            if re.search(r"[0-9]", token) and re.search(r"[a-f]", token):
                fail(f"README.md:{number}: what looks like a commit hash ({token!r})")


def check_links(readme: str) -> None:
    for number, line in prose_lines(readme):
        for text, target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path_part, _, anchor = target.partition("#")
            path = ROOT / path_part if path_part else ROOT / "README.md"
            if not path.exists():
                fail(f"README.md:{number}: link to {target!r}: no such file")
                continue
            if anchor and path.suffix == ".md" and anchor not in anchors(path):
                fail(f"README.md:{number}: link to {target!r}: {path_part} has no heading "
                     f"with anchor #{anchor}")
            if path_part in MEASURING and re.search(r"\d", text):
                quoted = normalised(text)
                source = normalised(path.read_text(encoding="utf-8"))
                if quoted not in source:
                    fail(f"README.md:{number}: quotes {quoted!r} from {path_part}, which no "
                         "longer says so")


def check_slurm_case_count() -> None:
    stage = (ROOT / ".ci/stages/slurm.sh").read_text(encoding="utf-8")
    match = re.search(r"--cases (\d+)", stage)
    if match is None:
        fail(".ci/stages/slurm.sh: no `--cases N`")
        return
    truth = match.group(1)
    for relative in ("README.md", "CONTRIBUTING.md", "docs/slurm.md"):
        text = (ROOT / relative).read_text(encoding="utf-8")
        for found in re.findall(r"\b([\d,]+)(?: random cases|-case\b)", text):
            if found.replace(",", "") != truth:
                fail(f"{relative}: the Slurm differential has {found} cases; CI runs {truth} "
                     "(.ci/stages/slurm.sh)")


def main() -> int:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    check_shape(readme)
    check_links(readme)
    check_slurm_case_count()
    for message in failures:
        print(f"FAIL {message}", file=sys.stderr)
    if failures:
        return 1
    quoted = sum(1 for _, line in prose_lines(readme) for text, target in LINK.findall(line)
                 if target.partition("#")[0] in MEASURING and re.search(r"\d", text))
    print(f"check_readme: README.md {readme.count(chr(10))} lines, {quoted} quoted figures "
          "found where they are measured, links and the Slurm case count consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
