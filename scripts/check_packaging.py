#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Consistency checks across the build and packaging files (Python standard library only).

- every JSON manifest parses;
- the version agrees everywhere: CMakeLists.txt project() (the source of truth), version.hpp,
  conanfile.py (its own pattern applied to CMakeLists.txt), vcpkg.json, the vcpkg port and the
  top released CHANGELOG.md heading;
- every TOPOPREEMPT_* variable that the port, the Conan recipe, the presets or the scripts set
  is an option() (or cache variable) declared in our CMake files.

Usage: python3 scripts/check_packaging.py [repo-root]
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)

JSON_FILES = ["vcpkg.json", "ports/topopreempt/vcpkg.json", "CMakePresets.json"]
PRESET_NAMES = {"dev", "release", "sanitize"}


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"  ok    {what}")
        else:
            self.failed += 1
            print(f"  FAIL  {what}" + (f": {detail}" if detail else ""))
        return ok


def read(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def cmake_project_version() -> str | None:
    match = re.search(r"project\(\s*topopreempt\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)",
                      read("CMakeLists.txt"))
    return match.group(1) if match else None


def header_version() -> str | None:
    text = read("include/topopreempt/version.hpp")
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(rf"^#define\s+TOPOPREEMPT_VERSION_{part}\s+([0-9]+)\s*$", text, re.M)
        if not match:
            return None
        parts.append(match.group(1))
    return ".".join(parts)


def conan_version() -> str | None:
    """Applies conanfile.py's own _PROJECT_VERSION_PATTERN to CMakeLists.txt, as set_version does."""
    tree = ast.parse(read("conanfile.py"))
    pattern = None
    hardcoded = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == "_PROJECT_VERSION_PATTERN":
                    pattern = node.value.value
                if isinstance(target, ast.Name) and target.id == "version":
                    hardcoded = node.value.value
    if hardcoded is not None:
        return f"hard-coded {hardcoded!r} (must come from CMakeLists.txt)"
    if pattern is None:
        return None
    match = re.search(pattern, read("CMakeLists.txt"))
    return match.group(1) if match else None


def changelog_version() -> str | None:
    for line in read("CHANGELOG.md").splitlines():
        match = re.match(r"^## \[([^\]]+)\]", line)
        if match and match.group(1).lower() != "unreleased":
            return match.group(1)
    return None


def changelog_agrees(truth: str) -> tuple[bool, str]:
    """The top released CHANGELOG heading is the version, or the version is being prepared: it is
    newer than that heading and an `## [Unreleased]` section collects its entries (the heading is
    renamed on release day)."""
    top = changelog_version()
    if top == truth:
        return True, f"top release is {truth}"
    preparing = re.search(r"^## \[Unreleased\]", read("CHANGELOG.md"), re.M | re.I) is not None
    if top is not None and preparing and version_tuple(truth) > version_tuple(top):
        return True, f"{truth} in preparation under [Unreleased] (last release {top})"
    return False, f"top release is {top!r}, version is {truth}"


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


def declared_cmake_options() -> set[str]:
    names: set[str] = set()
    files = [ROOT / "CMakeLists.txt", *ROOT.glob("cmake/*.cmake")]
    for directory in ("tests", "examples", "benchmarks", "tools"):
        files.append(ROOT / directory / "CMakeLists.txt")
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        names.update(re.findall(r"\b(?:cmake_dependent_)?option\(\s*([A-Za-z0-9_]+)", text))
        names.update(re.findall(r"\bset\(\s*([A-Za-z0-9_]+)\s[^)]*\bCACHE\b", text, re.S))
    return names


def used_options() -> dict[str, set[str]]:
    """TOPOPREEMPT_* variables set from outside CMake, by file."""
    used: dict[str, set[str]] = {}
    sources = ["ports/topopreempt/portfile.cmake", "conanfile.py", "scripts/quickstart.sh",
               "scripts/test.sh", ".ci/run", ".ci/vcpkg/run-port.cmake"]
    for relative in sources:
        if not (ROOT / relative).is_file():
            continue
        text = read(relative)
        names = set(re.findall(r"-D(TOPOPREEMPT_[A-Za-z0-9_]+)(?::[A-Z]+)?=", text))
        names.update(re.findall(r"""(?:cache_)?variables\[\s*["'](TOPOPREEMPT_[A-Za-z0-9_]+)["']\s*\]""", text))
        used[relative] = names
    presets = json.loads(read("CMakePresets.json"))
    used["CMakePresets.json"] = {
        name
        for preset in presets.get("configurePresets", [])
        for name in preset.get("cacheVariables", {})
        if name.startswith("TOPOPREEMPT_")
    }
    return used


def main() -> int:
    checks = Checks()

    print("JSON manifests:")
    manifests = {}
    for relative in JSON_FILES:
        try:
            manifests[relative] = json.loads(read(relative))
            checks.check(True, f"{relative} parses")
        except (OSError, json.JSONDecodeError) as error:
            checks.check(False, f"{relative} parses", str(error))

    presets = manifests.get("CMakePresets.json", {})
    for kind in ("configurePresets", "buildPresets", "testPresets", "workflowPresets"):
        names = {p["name"] for p in presets.get(kind, []) if not p.get("hidden")}
        checks.check(PRESET_NAMES <= names, f"CMakePresets.json {kind} has {sorted(PRESET_NAMES)}",
                     f"has {sorted(names)}")

    print("Version:")
    truth = cmake_project_version()
    if not checks.check(truth is not None, "CMakeLists.txt has project(topopreempt VERSION x.y.z)"):
        truth = "<missing>"
    found = {
        "include/topopreempt/version.hpp": header_version(),
        "conanfile.py (set_version)": conan_version(),
        "vcpkg.json": manifests.get("vcpkg.json", {}).get("version"),
        "ports/topopreempt/vcpkg.json": manifests.get("ports/topopreempt/vcpkg.json", {}).get("version"),
    }
    for where, version in found.items():
        checks.check(version == truth, f"{where} is {truth}", f"found {version!r}")
    ok, detail = changelog_agrees(truth)
    checks.check(ok, f"CHANGELOG.md: {detail}", detail)

    print("Options:")
    declared = declared_cmake_options()
    for where, names in used_options().items():
        unknown = sorted(names - declared)
        checks.check(not unknown, f"{where}: {len(names)} TOPOPREEMPT_* variables are declared",
                     f"not declared in CMake: {unknown}")

    print(f"check_packaging: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
