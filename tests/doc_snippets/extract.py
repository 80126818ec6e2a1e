#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Extracts every ```cpp block of README.md and docs/*.md into compilable sources.

usage: extract.py REPOSITORY_ROOT OUTPUT_DIR

Convention (CONTRIBUTING.md):
- A block that defines `int main(` is a complete program: written as is, compiled and run.
- Any other block is a fragment and must be preceded by `<!-- snippet-context: NAME -->`
  (blank lines between are fine). NAME names tests/doc_snippets/context_NAME.hpp, which
  declares the variables the fragment may use as members of `SnippetContext`. The fragment's
  `#include` lines go to the top of the file, its leading `struct`/`class` definitions (from a
  line starting `struct ` or `class ` to the line `};`) to namespace scope, the rest into a member
  function of a type derived from `SnippetContext`. Fragments are compiled, not run.
Writes one .cpp per complete program and one per document for its fragments, plus
snippets.cmake listing them (name, source, kind, origin) for tests/CMakeLists.txt. Exits 1 with
the document and line of the first block that breaks the convention.
"""
import pathlib
import re
import sys

MARKER = re.compile(r"^<!--\s*snippet-context:\s*([a-z_]+)\s*-->$")


def blocks(path):
    """Yields (line number of the opening fence, context name or None, code) per ```cpp block."""
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            start = i
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise SystemExit(f"{path}:{start + 1}: ```cpp block is never closed")
            context = None
            back = start - 1
            while back >= 0 and lines[back].strip() == "":
                back -= 1
            if back >= 0:
                match = MARKER.match(lines[back].strip())
                if match:
                    context = match.group(1)
            yield start + 1, context, "\n".join(lines[start + 1:end])
            i = end
        i += 1


def split_fragment(code):
    """(includes, namespace-scope declarations, body, index of the body's first line)."""
    includes, declarations, body = [], [], []
    first_body = 0
    lines = code.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#include"):
            includes.append(line)
        elif not body and re.match(r"^(struct|class) \w+", line):
            while i < len(lines) and lines[i] != "};":
                declarations.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"'{line}' has no closing '}};' line")
            declarations.append(lines[i])
        else:
            if not body:
                first_body = i
            body.append(line)
        i += 1
    return includes, declarations, body, first_body


def main():
    root = pathlib.Path(sys.argv[1])
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    documents = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    listing = []
    written = set()
    for document in documents:
        stem = re.sub(r"[^a-z0-9]+", "_", document.stem.lower()).strip("_")
        fragments = []
        programs = 0
        for line, context, code in blocks(document):
            origin = f"{document.relative_to(root)}:{line}"
            if re.search(r"\bint main\s*\(", code):
                if context is not None:
                    raise SystemExit(f"{origin}: a complete program takes no snippet-context")
                # Numbered, not named by line, so that editing the text above keeps test names.
                programs += 1
                name = f"{stem}_program{programs}"
                path = out / f"doc_{name}.cpp"
                path.write_text(f"// {origin} (extracted by tests/doc_snippets/extract.py)\n"
                                + code + "\n", encoding="utf-8")
                written.add(path.name)
                listing.append((name, path, "program", origin))
                continue
            if context is None:
                raise SystemExit(
                    f"{origin}: a ```cpp fragment (no main) needs a '<!-- snippet-context: NAME -->'"
                    " line before it (see CONTRIBUTING.md)")
            header = root / "tests" / "doc_snippets" / f"context_{context}.hpp"
            if not header.is_file():
                raise SystemExit(f"{origin}: unknown snippet context '{context}' (no {header})")
            try:
                includes, declarations, body, first_body = split_fragment(code)
            except ValueError as error:
                raise SystemExit(f"{origin}: {error}")
            # Compiler messages point into the document: its line of the body's first line.
            body_line = line + 1 + first_body
            fragments.append((line, origin, context, includes, declarations, body, body_line))
        if not fragments:
            continue
        name = f"{stem}_fragments"
        path = out / f"doc_{name}.cpp"
        text = [f"// The fragments of {document.relative_to(root)} "
                "(extracted by tests/doc_snippets/extract.py)"]
        for _, _, _, includes, _, _, _ in fragments:
            text += includes
        for context in sorted({f[2] for f in fragments}):
            text.append(f'#include "context_{context}.hpp"')
        text.append("using namespace topopreempt;")
        for line, origin, context, _, declarations, body, body_line in fragments:
            text.append(f"\n// {origin}")
            text.append(f"namespace snippet_{line} {{")
            text += declarations
            text.append(f"struct Snippet : doc_snippets::{context}::SnippetContext {{\n  void run();\n}};")
            text.append("void Snippet::run() {")
            text.append(f'#line {body_line} "{document.relative_to(root)}"')
            text += body
            text.append("}")
            text.append(f"}}  // namespace snippet_{line}")
        text.append("\nint main() { return 0; }  // compiled, not run: the fragments are excerpts")
        path.write_text("\n".join(text) + "\n", encoding="utf-8")
        written.add(path.name)
        origins = ", ".join(f[1] for f in fragments)
        listing.append((name, path, "fragments", origins))
    # Sources of blocks that no longer exist must not linger in the build tree.
    for stale in out.glob("doc_*.cpp"):
        if stale.name not in written:
            stale.unlink()
    with open(out / "snippets.cmake", "w", encoding="utf-8") as cmake:
        for name, path, kind, origin in listing:
            cmake.write(f'list(APPEND TOPOPREEMPT_DOC_SNIPPETS "{name}|{path.as_posix()}|{kind}")\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
