#!/usr/bin/env python3
"""Checks the public API of TypedStore's libraries against the recorded baseline in api/.

    Tools/check-api.py            compare (CI): fails with a diff when the API changed
    Tools/check-api.py --update   record the current API as the new baseline

The API is read from the built modules (`swift build` first) by the toolchain's
`swift-api-digester -dump-sdk` and written one declaration a line (kind, qualified name,
signature, conformances, generic requirements), sorted, so that a change reads as a diff in
review. An API change is deliberate: update the baseline in the same commit and list the change
in CHANGELOG.md (under "Breaking" when a line is removed or changed).
"""

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["TypedStore", "TypedStoreTesting"]
DECLARATIONS = {"TypeDecl", "Var", "Function", "Constructor", "Subscript", "TypeAlias",
                "AssociatedType", "EnumElement", "Macro", "OperatorDecl"}


def dump(module, output):
    triple = json.loads(subprocess.run(["swift", "-print-target-info"], check=True,
                                       capture_output=True, text=True).stdout)["target"]["triple"]
    subprocess.run(
        ["swift-api-digester", "-dump-sdk", "-module", module, "-o", output,
         "-I", os.path.join(ROOT, ".build", "debug", "Modules"),
         "-I", os.path.join(ROOT, "Sources", "CSQLite"), "-target", triple,
         "-avoid-location", "-avoid-tool-args", "-swift-only", "-abort-on-module-fail"],
        check=True, cwd=ROOT)
    with open(output) as file:
        return json.load(file)["ABIRoot"]


def types_of(node):
    return [child["printedName"] + (" = default" if child.get("hasDefaultArg") else "")
            for child in node.get("children", [])
            if child["kind"].startswith("Type") and child["kind"] != "TypeDecl"]


def lines(root):
    result = []

    def walk(node, path):
        if node.get("isInternal"):
            return  # `package` declarations: for the package's other modules, not its users
        kind = node.get("kind")
        if kind in DECLARATIONS and not node.get("implicit"):
            name = path + [node["printedName"]]
            line = f"{node.get('declKind', kind)} {'.'.join(name)}"
            types = types_of(node)
            if types:
                line += " : " + ", ".join(types)
            if node.get("genericSig"):
                line += f" where {node['genericSig']}"
            accessors = sorted(a["accessorKind"] for a in node.get("accessors", []))
            if accessors and accessors != ["get"]:
                line += " { " + " ".join(accessors) + " }"
            for attribute in ("isOpen", "throwing", "static"):
                if node.get(attribute):
                    line += f" [{attribute}]"
            attributes = sorted(set(node.get("declAttributes", [])) - {"HasStorage"})
            if attributes:
                line += " @" + " @".join(attributes)
            conformances = sorted(c["printedName"] for c in node.get("conformances", []))
            if conformances:
                line += " conforms to " + ", ".join(conformances)
            result.append(line)
            for child in node.get("children", []):
                walk(child, name)
        else:
            for child in node.get("children", []):
                walk(child, path)

    walk(root, [])
    return sorted(set(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="record the current API")
    arguments = parser.parse_args()
    changed = False
    with tempfile.TemporaryDirectory() as scratch:
        for module in MODULES:
            current = lines(dump(module, os.path.join(scratch, f"{module}.json")))
            baseline_path = os.path.join(ROOT, "api", f"{module}.api")
            if arguments.update:
                os.makedirs(os.path.dirname(baseline_path), exist_ok=True)
                with open(baseline_path, "w") as file:
                    file.write("\n".join(current) + "\n")
                print(f"recorded {len(current)} declarations of {module} in api/{module}.api")
                continue
            try:
                with open(baseline_path) as file:
                    baseline = file.read().splitlines()
            except FileNotFoundError:
                baseline = []
            if baseline != current:
                changed = True
                sys.stdout.writelines(difflib.unified_diff(
                    [line + "\n" for line in baseline], [line + "\n" for line in current],
                    f"api/{module}.api (baseline)", f"{module} (this build)"))
            else:
                print(f"{module}: {len(current)} declarations, as recorded")
    if changed:
        sys.exit("The public API differs from api/: if the change is meant, run "
                 "Tools/check-api.py --update and list it in CHANGELOG.md.")


if __name__ == "__main__":
    main()
