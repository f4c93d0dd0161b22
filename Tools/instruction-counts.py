#!/usr/bin/env python3
"""The benchmark's in-process rows counted in instructions, against a committed baseline.

Timings on a shared machine move by a fifth between runs; instruction counts do not. For each
row below, this runs `typedstore-bench --n N --runs 1 --only ROW` under valgrind's callgrind,
which counts the instructions of every thread between the markers that `time` in
Tools/typedstore-bench/Bench+Harness.swift calls around each side's timed part. Each side's
count covers its warm-up run and its timed run, so it is divided by 2 × N for the
instructions per object.

    python3 Tools/instruction-counts.py            # check against Tools/instruction-counts.json
    python3 Tools/instruction-counts.py --update   # write the baseline anew

The check fails when a row's TypedStore count grew by more than 5 % over the baseline. A change
that costs more on purpose updates the baseline in the same commit and says why in the commit
message. A row that got more than 5 % cheaper is reported, and the baseline should be updated
to keep the gain. The raw side is counted for the ratio only; when it moves by more than 5 %
(another SQLite, another C library), the whole baseline is out of date.

It builds the benchmark first with the flags of CI's release step (so that in CI the build is
already there), and needs valgrind (Tools/setup.sh installs it).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "Tools", "instruction-counts.json")
BENCH = os.path.join(ROOT, ".build", "release", "typedstore-bench")
BUILD = ["swift", "build", "-c", "release", "-Xswiftc", "-enable-testing", "-Xswiftc", "-warnings-as-errors",
         "--product", "typedstore-bench"]
N = 2000
TOLERANCE = 0.05

# The rows that run in this process (the writer, follower and latency rows spawn processes,
# and the memory rows measure bytes). Each is an `--only` filter that selects exactly that row.
ROWS = [
    "insert {n} objects, one save, history on",
    "insert {n} objects, one save, history off",
    "fetch {n} objects, every attribute read",
    "fetch {n} objects of an Observable entity",
    "#Predicate matching 10% of {n}, no index",
    "#Predicate matching 10% of {n}, indexed",
    "prefetch their {n} notes",
    "cascade delete of a folder with {n} notes",
    "change one attribute of {n} objects",
    "delete {n} objects through the context",
    "batch update of {n} objects",
    "batch delete of {n} objects",
    "fetch history of {n} changes",
    "fetch history of one delete of {n} rows",
    "fetch history of {n} single-row saves",
]


MARKERS = {
    # side: (the call that starts its timed part, the call that ends it); see `time` in
    # Tools/typedstore-bench/Bench+Harness.swift.
    "typedstore": ("sqlite3_threadsafe", "sqlite3_keyword_count"),
    "raw": ("sqlite3_sourceid", "sqlite3_libversion_number"),
}


def count(row, n):
    """Instructions of each side's timed parts (the warm-up and one run) for `row`."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        markers = [f"--zero-before={start}" for start, _ in MARKERS.values()]
        markers += [f"--dump-before={end}" for _, end in MARKERS.values()]
        env = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1", TMPDIR=scratch)
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *markers,
             BENCH, "--n", str(n), "--runs", "1", "--only", row],
            capture_output=True, text=True, env=env, cwd=scratch)
        if result.returncode != 0:
            sys.exit(f"{row}: the benchmark failed\n{result.stdout}\n{result.stderr}")
        if row not in result.stdout:  # the filter must select a row, or the count is of nothing
            sys.exit(f"{row}: no such row in the benchmark's output\n{result.stdout}")
        counts = {side: [] for side in MARKERS}
        for name in os.listdir(scratch):
            if not name.startswith("callgrind.out."):
                continue
            with open(os.path.join(scratch, name)) as dump:
                text = dump.read()
            trigger = re.search(r"^desc: Trigger: --dump-before=(\w+)", text, re.MULTILINE)
            summary = re.search(r"^summary: (\d+)", text, re.MULTILINE)
            for side, (_, end) in MARKERS.items():
                if trigger and summary and trigger.group(1) == end:
                    counts[side].append(int(summary.group(1)))
        for side, found in counts.items():
            if len(found) != 2:  # the warm-up and the run
                sys.exit(f"{row}: {len(found)} timed parts of the {side} side, not 2\n{result.stdout}")
        return {side: sum(found) for side, found in counts.items()}


def measure(n):
    rows = {}
    for template in ROWS:
        row = template.format(n=n)
        rows[template] = count(row, n)
        typed, raw = rows[template]["typedstore"], rows[template]["raw"]
        print(f"  {row}: {typed / (2 * n):,.0f} instructions per object, "
              f"{typed / raw:.2f}x raw's", flush=True)
    return rows


def table(rows, n):
    lines = ["| row | TypedStore per object | raw per object | ratio |", "|---|---:|---:|---:|"]
    for template, counts in rows.items():
        typed, raw = counts["typedstore"], counts["raw"]
        lines.append(f"| {template.format(n=n)} | {typed / (2 * n):,.0f} | {raw / (2 * n):,.0f} | {typed / raw:.2f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="write the baseline anew")
    parser.add_argument("--skip-build", action="store_true", help="use the benchmark as built")
    args = parser.parse_args()
    if not args.skip_build:
        subprocess.run(BUILD, cwd=ROOT, check=True)
    print(f"Counting {len(ROWS)} rows at N = {N} (callgrind)", flush=True)
    rows = measure(N)
    print(table(rows, N))
    if args.update:
        with open(BASELINE, "w") as file:
            json.dump({"n": N, "rows": rows}, file, indent=2, sort_keys=True)
            file.write("\n")
        print(f"wrote {os.path.relpath(BASELINE, ROOT)}")
        return
    with open(BASELINE) as file:
        baseline = json.load(file)
    failures = []
    for template, counts in rows.items():
        old = baseline["rows"].get(template)
        if old is None:
            failures.append(f"{template}: not in the baseline (run with --update)")
            continue
        change = counts["typedstore"] / old["typedstore"] - 1
        raw_change = counts["raw"] / old["raw"] - 1
        name = template.format(n=N)
        if change > TOLERANCE:
            failures.append(f"{name}: {change:+.1%} instructions over the baseline")
        elif change < -TOLERANCE:
            print(f"note: {name}: {change:+.1%}; update the baseline to keep the gain")
        if abs(raw_change) > TOLERANCE:
            failures.append(f"{name}: the raw side moved {raw_change:+.1%}: the baseline is out of date")
    if failures:
        print("\n".join(["instruction counts over the baseline:"] + failures), file=sys.stderr)
        sys.exit(1)
    print("instruction counts: every row within 5 % of the baseline")


if __name__ == "__main__":
    main()
