#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Consistency checks across the build and packaging files (Python standard library only).

- every JSON manifest parses;
- the version agrees everywhere: CMakeLists.txt project() (the source of truth), version.hpp,
  conanfile.py (its own pattern applied to CMakeLists.txt), vcpkg.json, the vcpkg port and the
  top released CHANGELOG.md heading;
- every TOPOPREEMPT_* variable that the port, the Conan recipe, the presets or the scripts set
  is an option() (or cache variable) declared in our CMake files;
- the release source agrees: the vcpkg port's vcpkg_from_github downloads REF "v${VERSION}" of
  the GitHub repository that conanfile.py's and the port's homepage name, with a 128-digit
  SHA512; every conandata.yml source is that repository's v<version> tarball with a sha256;
- pyproject.toml (the Python package) takes its version from CMakeLists.txt: `dynamic` version,
  scikit-build-core's regex provider over CMakeLists.txt, whose pattern yields the version;
- README.md asks for the current version (find_package(topopreempt X.Y), topopreempt/X.Y.Z);
- the headers' folders form layers: a header under include/topopreempt/<folder>/ includes only
  its own folder and those FOLDER_LAYERS lets it build on (plan/ never reaches up into solvers/:
  the solvers return plans, and the decisions over time call the solvers); every folder is listed;
- every forwarding header under compat/include/ includes a header that exists.

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

# What each folder of include/topopreempt/ may include besides itself (the umbrella header and
# version.hpp sit at the top and may include anything). A folder missing here fails the check, so
# that a new folder gets its place on purpose.
FOLDER_LAYERS: dict[str, set[str]] = {
    "model": set(),
    "plan": {"model"},
    "solvers": {"model", "plan"},
    "decisions": {"model", "plan", "solvers"},
    "baselines": {"model", "plan", "solvers"},
    "capacity": {"model", "plan", "solvers"},
    "model_cache": {"model", "plan", "solvers"},
    "sim": {"model", "plan", "solvers"},
    "io": {"model", "plan", "solvers"},
}
PROJECT_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]topopreempt/([^">]+)[">]', re.MULTILINE)


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


def pyproject_version() -> str | None:
    """Applies pyproject.toml's own version regex to CMakeLists.txt, as scikit-build-core does;
    None unless the version is dynamic and read from CMakeLists.txt (a literal version there
    would be a second source of truth)."""
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Debian 12 has 3.11
        return None
    document = tomllib.loads(read("pyproject.toml"))
    if "version" in document.get("project", {}) or "version" not in document.get("project", {}).get("dynamic", []):
        return None
    provider = document.get("tool", {}).get("scikit-build", {}).get("metadata", {}).get("version", {})
    if provider.get("provider") != "scikit_build_core.metadata.regex" or provider.get("input") != "CMakeLists.txt":
        return None
    match = re.search(provider.get("regex", "$^"), read("CMakeLists.txt"), re.MULTILINE)
    return match.group("value") if match and "value" in match.groupdict() else None


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
    if (ROOT / "pyproject.toml").is_file():
        defines = re.search(r"^\[tool\.scikit-build\.cmake\.define\]\n((?:[^\[].*\n)*)", read("pyproject.toml"), re.M)
        used["pyproject.toml"] = set(re.findall(r"^(TOPOPREEMPT_[A-Za-z0-9_]+)\s*=", defines.group(1), re.M)) if defines else set()
    presets = json.loads(read("CMakePresets.json"))
    used["CMakePresets.json"] = {
        name
        for preset in presets.get("configurePresets", [])
        for name in preset.get("cacheVariables", {})
        if name.startswith("TOPOPREEMPT_")
    }
    return used


def conan_homepage() -> str | None:
    match = re.search(r'^\s*homepage\s*=\s*"([^"]+)"', read("conanfile.py"), re.M)
    return match.group(1) if match else None


def vcpkg_from_github_arguments() -> dict[str, str]:
    text = read("ports/topopreempt/portfile.cmake")
    call = re.search(r"^vcpkg_from_github\((.*?)^\)", text, re.M | re.S)
    if call is None:
        return {}
    tokens = re.findall(r'"[^"]*"|\S+', call.group(1))
    arguments: dict[str, str] = {}
    for key, value in zip(tokens, tokens[1:]):
        if re.fullmatch(r"[A-Z_0-9]+", key):
            arguments[key] = value.strip('"')
    return arguments


def conandata_sources() -> dict[str, dict[str, str]]:
    """`sources` of conandata.yml, read without a YAML library (the file's own simple form)."""
    sources: dict[str, dict[str, str]] = {}
    current = None
    for line in read("conandata.yml").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        version = re.match(r'^  "?([0-9][^":]*)"?:\s*$', line)
        field = re.match(r'^    (url|sha256):\s*"?([^"]+)"?\s*$', line)
        if version:
            current = sources.setdefault(version.group(1), {})
        elif field and current is not None:
            current[field.group(1)] = field.group(2)
    return sources


def check_release_sources(checks: Checks, truth: str) -> None:
    homepage = conan_homepage()
    port_manifest = json.loads(read("ports/topopreempt/vcpkg.json"))
    checks.check(homepage is not None and homepage.startswith("https://github.com/"),
                 "conanfile.py homepage is a GitHub repository", f"found {homepage!r}")
    checks.check(port_manifest.get("homepage") == homepage,
                 "ports/topopreempt/vcpkg.json homepage equals conanfile.py's",
                 f"{port_manifest.get('homepage')!r} != {homepage!r}")
    repository = (homepage or "").removeprefix("https://github.com/")
    arguments = vcpkg_from_github_arguments()
    checks.check(arguments.get("REPO") == repository,
                 f"portfile vcpkg_from_github REPO is {repository}", f"found {arguments.get('REPO')!r}")
    checks.check(arguments.get("REF") == "v${VERSION}",
                 'portfile vcpkg_from_github REF is "v${VERSION}"', f"found {arguments.get('REF')!r}")
    checks.check(re.fullmatch(r"[0-9a-f]{128}", arguments.get("SHA512", "")) is not None,
                 "portfile vcpkg_from_github SHA512 has 128 hex digits",
                 f"found {arguments.get('SHA512')!r}")
    checks.check(bool(arguments.get("HEAD_REF")), "portfile vcpkg_from_github has a HEAD_REF")
    for version, source in conandata_sources().items():
        expected = f"{homepage}/archive/refs/tags/v{version}.tar.gz"
        checks.check(source.get("url") == expected, f"conandata.yml {version} url is {expected}",
                     f"found {source.get('url')!r}")
        checks.check(re.fullmatch(r"[0-9a-f]{64}", source.get("sha256", "")) is not None,
                     f"conandata.yml {version} has a sha256", f"found {source.get('sha256')!r}")
        checks.check(version_tuple(version) <= version_tuple(truth),
                     f"conandata.yml {version} is not newer than {truth}")


def check_readme_versions(checks: Checks, truth: str) -> None:
    readme = read("README.md")
    major_minor = ".".join(truth.split(".")[:2])
    asked = set(re.findall(r"find_package\(topopreempt ([0-9.]+)", readme))
    checks.check(asked == {major_minor}, f"README.md find_package(topopreempt {major_minor} ...)",
                 f"found {sorted(asked)}")
    references = set(re.findall(r"topopreempt/([0-9]+\.[0-9]+\.[0-9]+)", readme))
    checks.check(references <= {truth}, f"README.md Conan references are topopreempt/{truth}",
                 f"found {sorted(references)}")


def check_include_layers(checks: Checks, root: Path = ROOT) -> None:
    headers = root / "include" / "topopreempt"
    folders = sorted(p.name for p in headers.iterdir() if p.is_dir())
    unknown = [f for f in folders if f not in FOLDER_LAYERS]
    checks.check(not unknown, f"include/topopreempt/: {len(folders)} folders have a layer",
                 f"no entry in FOLDER_LAYERS for {unknown}")
    for folder in folders:
        allowed = FOLDER_LAYERS.get(folder, set()) | {folder}
        wrong = []
        for header in sorted((headers / folder).rglob("*.hpp")):
            text = header.read_text(encoding="utf-8")
            for target in PROJECT_INCLUDE.findall(text):
                if "/" in target and target.split("/", 1)[0] not in allowed:
                    wrong.append(f"{header.relative_to(root)} includes topopreempt/{target}")
        checks.check(not wrong, f"{folder}/ includes only {sorted(allowed)}", "; ".join(wrong))


def check_forwarding_headers(checks: Checks, root: Path = ROOT) -> None:
    compat = root / "compat" / "include"
    missing = []
    count = 0
    for header in sorted(compat.rglob("*.hpp")):
        count += 1
        for target in PROJECT_INCLUDE.findall(header.read_text(encoding="utf-8")):
            if not (root / "include" / "topopreempt" / target).is_file():
                missing.append(f"{header.relative_to(root)} -> topopreempt/{target}")
    checks.check(count > 0 and not missing,
                 f"compat/include/: {count} forwarding headers name existing headers",
                 "; ".join(missing) if missing else "none found")


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
        "pyproject.toml (dynamic, regex over CMakeLists.txt)": pyproject_version(),
    }
    for where, version in found.items():
        checks.check(version == truth, f"{where} is {truth}", f"found {version!r}")
    ok, detail = changelog_agrees(truth)
    checks.check(ok, f"CHANGELOG.md: {detail}", detail)

    print("Release sources:")
    check_release_sources(checks, truth)
    check_readme_versions(checks, truth)

    print("Options:")
    declared = declared_cmake_options()
    for where, names in used_options().items():
        unknown = sorted(names - declared)
        checks.check(not unknown, f"{where}: {len(names)} TOPOPREEMPT_* variables are declared",
                     f"not declared in CMake: {unknown}")

    print("Headers:")
    check_include_layers(checks)
    check_forwarding_headers(checks)

    print(f"check_packaging: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
