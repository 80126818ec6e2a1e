#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when an enumerator of a public enum has no doc comment (run after doxygen).

Doxygen's WARN_IF_UNDOCUMENTED reports undocumented functions, types, variables and enums, but
not an undocumented value of a documented enum, e.g. a new `PlanStatus` value or `TP_PLAN_*`
constant added without its `///<` or trailing comment. This reads doxygen's XML output of the
same run and names every such value.

Usage: check_enumerators.py <doxygen xml directory>   Exits 1 naming each undocumented value.
"""

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path


def described(element) -> bool:
    for tag in ("briefdescription", "detaileddescription"):
        node = element.find(tag)
        if node is not None and "".join(node.itertext()).strip():
            return True
    return False


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check_enumerators.py <doxygen xml directory>", file=sys.stderr)
        return 2
    directory = Path(sys.argv[1])
    files = sorted(directory.glob("*.xml"))
    if not files:
        print(f"check_enumerators: no doxygen XML in {directory}", file=sys.stderr)
        return 2
    missing = set()
    enums = set()
    for path in files:
        if path.name == "index.xml":
            continue
        root = ElementTree.parse(path).getroot()
        for enum in root.iter("memberdef"):
            if enum.get("kind") != "enum":
                continue
            enums.add(enum.get("id"))
            location = enum.find("location")
            where = f"{location.get('file')}:{location.get('line')}" if location is not None else "?"
            for value in enum.findall("enumvalue"):
                if not described(value):
                    missing.add(f"{where}: enumerator {enum.findtext('name')}::"
                                f"{value.findtext('name')} is not documented")
    for message in sorted(missing):
        print(f"error: {message}", file=sys.stderr)
    if missing:
        return 1
    print(f"check_enumerators: every value of {len(enums)} public enums is documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
