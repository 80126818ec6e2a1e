#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints apt source entries of type deb-src mirroring the machine's Debian `deb` entries.

`apt-get source slurm-wlm` needs a deb-src entry; a fresh Debian 12 machine has only `deb`
entries. We copy every Debian archive entry (same URIs, suites, components and signing key) as
deb-src, from deb822 `.sources` files and from one-line `sources.list` files alike, and leave
third-party repositories alone. Output is deb822, for /etc/apt/sources.list.d/*.sources.
Usage: enable-deb-src.py [apt-dir]   (default /etc/apt)
"""
import glob
import os
import re
import sys

DEBIAN_URI = re.compile(r"^(https?|file|cdrom)://[^ ]*debian[^ ]*$")
OUR_FILE = "topopreempt-debian-src.sources"


def deb822_stanzas(text):
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        key = None
        for line in stanza.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0] in " \t" and key:  # continuation line (multi-line Signed-By keys)
                fields[key] += "\n" + line
                continue
            if ":" not in line:
                continue
            key, value = line.split(":", 1)
            key = key.strip()
            fields[key] = value.strip()
        if fields:
            yield fields


def one_line_entries(text):
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        options = {}
        rest = line[4:].strip()
        if rest.startswith("["):
            inside, rest = rest[1:].split("]", 1)
            for option in inside.split():
                if "=" in option:
                    name, value = option.split("=", 1)
                    options[name] = value
            rest = rest.strip()
        parts = rest.split()
        if len(parts) < 2:
            continue
        fields = {"Types": "deb", "URIs": parts[0], "Suites": parts[1]}
        if len(parts) > 2:
            fields["Components"] = " ".join(parts[2:])
        if "signed-by" in options:
            fields["Signed-By"] = options["signed-by"]
        yield fields


def main():
    apt_dir = sys.argv[1] if len(sys.argv) > 1 else "/etc/apt"
    entries = []
    list_files = [os.path.join(apt_dir, "sources.list")] + sorted(
        glob.glob(os.path.join(apt_dir, "sources.list.d", "*.list")))
    for path in list_files:
        if os.path.isfile(path):
            entries += one_line_entries(open(path, encoding="utf-8").read())
    for path in sorted(glob.glob(os.path.join(apt_dir, "sources.list.d", "*.sources"))):
        if os.path.basename(path) != OUR_FILE:
            entries += deb822_stanzas(open(path, encoding="utf-8").read())
    stanzas = []
    for fields in entries:
        if "deb" not in fields.get("Types", "").split():
            continue
        if fields.get("Enabled", "yes").lower() == "no":
            continue
        uris = [uri for uri in fields.get("URIs", "").split() if DEBIAN_URI.match(uri)]
        if not uris:
            continue
        lines = ["Types: deb-src", "URIs: " + " ".join(uris), "Suites: " + fields["Suites"]]
        if "Components" in fields:
            lines.append("Components: " + fields["Components"])
        if "Signed-By" in fields:
            lines.append("Signed-By: " + fields["Signed-By"])
        stanzas.append("\n".join(lines))
    if not stanzas:
        sys.exit("enable-deb-src.py: no Debian 'deb' entry found under " + apt_dir)
    print("# Written by topopreempt integrations/slurm/build-plugin.sh: source entries for\n"
          "# `apt-get source slurm-wlm`, mirroring the Debian deb entries.\n")
    print("\n\n".join(stanzas))


if __name__ == "__main__":
    main()
