#!/usr/bin/env python3
"""Builds TypedStore's DocC reference and checks it, as CI does.

    Tools/build-docs.py [--output DIR] [--skip-build]

1. Builds the library (debug) and extracts its public symbol graph with the toolchain's
   `swift-symbolgraph-extract`: no package plugin is needed. Every module with a catalog of
   its own (`Sources/<module>/<module>.docc`) is documented.
2. Fails if a public symbol declared in Sources/ has no `///` comment.
3. Assembles a catalog from `Sources/<module>/<module>.docc` and the pages of `docs/` (one source:
   the pages stay where the tests and GitHub read them), turning their links to each other
   (`[x](merging.md#a-heading)`) into DocC links (`<doc:merging#A-heading>`), so a page or heading
   that does not exist is a DocC warning.
4. Runs `docc convert --warnings-as-errors`: a broken symbol link (``FetchRequest``), an
   unknown topic or an undocumented parameter fails the build.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*command, **options):
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT, **options)


def target_triple():
    info = subprocess.run(["swift", "-print-target-info"], check=True, capture_output=True,
                          text=True).stdout
    return json.loads(info)["target"]["triple"]


def extract_symbol_graph(module, output):
    modules = os.path.join(ROOT, ".build", "debug", "Modules")
    os.makedirs(output, exist_ok=True)
    run("swift-symbolgraph-extract", "-module-name", module, "-I", modules,
        "-I", os.path.join(ROOT, "Sources", "CSQLite"), "-target", target_triple(),
        "-minimum-access-level", "public", "-output-dir", output)


def undocumented(symbol_graph_dir):
    """Public symbols written in Sources/ without a doc comment (inherited ones excluded)."""
    missing = []
    for path in glob.glob(os.path.join(symbol_graph_dir, "*.symbols.json")):
        with open(path) as file:
            graph = json.load(file)
        for symbol in graph["symbols"]:
            if symbol["accessLevel"] not in ("public", "open"):
                continue
            uri = symbol.get("location", {}).get("uri", "")
            if "/Sources/" not in uri or "docComment" in symbol:
                continue
            line = symbol["location"]["position"]["line"] + 1
            where = uri.split("/Sources/", 1)[1]
            missing.append(f"Sources/{where}:{line}: {'.'.join(symbol['pathComponents'])}")
    return sorted(set(missing))


def docc_anchor(page_text, anchor):
    """The DocC anchor of the heading whose GitHub anchor is `anchor`, or None."""
    for heading in re.findall(r"^#{2,6} (.+)$", page_text, re.M):
        github = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        if github == anchor:
            return re.sub(r"[^\w\-]", "", heading.strip().replace(" ", "-"))
    return None


def assemble_catalog(module, destination):
    source = os.path.join(ROOT, "Sources", module, f"{module}.docc")
    shutil.copytree(source, destination)
    if module != "TypedStore":
        return
    pages = {os.path.basename(p)[:-3]: open(p).read() for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))}
    problems = []

    def link(match):
        text, page, anchor = match.group(1), match.group(2), match.group(3)
        if page not in pages:
            problems.append(f"docs link to a missing page: {page}.md")
            return match.group(0)
        if not anchor:
            return f"<doc:{page}>" if text == "" else f"[{text}](doc:{page})"
        docc = docc_anchor(pages[page], anchor)
        if docc is None:
            problems.append(f"docs link to a missing heading: {page}.md#{anchor}")
            return match.group(0)
        return f"[{text}](doc:{page}#{docc})"

    for name, text in pages.items():
        converted = re.sub(r"\[([^\]]*)\]\(([a-z0-9-]+)\.md(?:#([\w-]+))?\)", link, text)
        with open(os.path.join(destination, f"{name}.md"), "w") as file:
            file.write(converted)
    if problems:
        sys.exit("\n".join(sorted(set(problems))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(ROOT, ".build", "documentation"))
    parser.add_argument("--skip-build", action="store_true")
    arguments = parser.parse_args()

    if not arguments.skip_build:
        run("swift", "build", "-Xswiftc", "-warnings-as-errors")
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        # Every library module with a catalog of its own (Sources/<module>/<module>.docc).
        modules = sorted(os.path.basename(os.path.dirname(c))
                         for c in glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc"))
                         if os.path.basename(c) == os.path.basename(os.path.dirname(c)) + ".docc")
        if "TypedStore" not in modules:
            failures.append("Sources/TypedStore/TypedStore.docc is missing")
        for module in modules:
            graphs = os.path.join(scratch, module, "symbol-graphs")
            extract_symbol_graph(module, graphs)
            missing = undocumented(graphs)
            if missing:
                failures.append(f"{len(missing)} public symbols of {module} have no /// comment:\n"
                                + "\n".join(missing))
            catalog = os.path.join(scratch, module, f"{module}.docc")
            assemble_catalog(module, catalog)
            output = os.path.join(arguments.output, f"{module}.doccarchive")
            shutil.rmtree(output, ignore_errors=True)
            os.makedirs(arguments.output, exist_ok=True)
            result = subprocess.run(
                ["docc", "convert", catalog, "--additional-symbol-graph-dir", graphs,
                 "--fallback-display-name", module, "--fallback-bundle-identifier",
                 f"org.typedstore.{module}", "--output-path", output, "--warnings-as-errors"],
                cwd=ROOT, capture_output=True, text=True)
            if result.returncode != 0:
                # Show the diagnostics with paths relative to the package.
                failures.append(f"docc convert {module} failed:\n"
                                + (result.stdout + result.stderr).replace(scratch, "<catalog>"))
            else:
                print(f"{module}: {output}")
    if failures:
        sys.exit("\n\n".join(failures))


if __name__ == "__main__":
    main()
