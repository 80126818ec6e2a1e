#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Doxygen input filter for the C interface's header (integrations/c_api/include/topopreempt_c.h).

The header is written in C's plain comments, as C readers expect. Doxygen reads only its own
comment forms, so this filter rewrites, line for line (line numbers stay true for warnings):

- the comment block that opens the file (after the SPDX line) into the file's documentation;
- a comment that starts a line, `/* text`, into a doc comment for what follows, `/** text`;
- a comment after code on the same line, `code; /* text */`, into a doc comment for that code,
  `code; /**< text */`.

Left as they are, so that they document nothing: the SPDX line, section rulers (`/* ---- x ---`),
preprocessor lines, and blocks opened by a bare `/*` line after the first one (narrative text,
such as the "Topology." overview). An entity with no comment at all stays undocumented, and
doxygen (WARN_IF_UNDOCUMENTED, WARN_AS_ERROR) fails the reference build naming it.

Usage (doxygen calls it): c_doc_filter.py <header>   — writes the filtered text to stdout.
"""

import re
import sys

LEADING = re.compile(r"^(\s*)/\*(?![*!])\s?")
TRAILING = re.compile(r"^(\s*[^\s/#*].*?)/\*(?![*!<])\s?")
RULER = re.compile(r"^\s*/\* -{3,}")


def filter_lines(lines):
    seen_bare_block = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if index == 0 and "SPDX-License-Identifier" in line:
            yield line
            continue
        if stripped == "/*":
            if not seen_bare_block:
                seen_bare_block = True
                yield line.replace("/*", "/** @file", 1)
            else:
                yield line
            continue
        if stripped.startswith("#") or RULER.match(line):
            yield line
            continue
        if LEADING.match(line):
            yield LEADING.sub(lambda m: m.group(1) + "/** ", line, count=1)
            continue
        if TRAILING.match(line):
            yield TRAILING.sub(lambda m: m.group(1) + "/**< ", line, count=1)
            continue
        yield line


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: c_doc_filter.py <header>", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as header:
        sys.stdout.writelines(filter_lines(header.readlines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
