#!/usr/bin/env python3
"""A mutation pass over Sources/TypedStore: applies each mutant of Tools/mutants.txt in turn,
builds, runs the mutant's test filter, records whether a test failed (killed) or not
(survived), and restores the source.

    Tools/mutation-pass.py                 # every mutant
    Tools/mutation-pass.py M03 M11         # some of them
    Tools/mutation-pass.py --check         # only check that every snippet is found once
    Tools/mutation-pass.py --full-suite    # a survivor of its filter runs the whole suite too

A mutant names a snippet, not a path and line: the files move, the snippet must occur exactly
once across Sources/TypedStore/ (the pass refuses to start otherwise). The source is mutated
in place and always restored: on success, on a failure, on Ctrl-C or SIGTERM; the original
text is also kept in .build/mutation-pass/ until it is restored. Builds are incremental (one
file changes each time) and everything runs serially. The results, as a Markdown table, go to
standard output and to .build/mutation-pass/results.md.
"""

import argparse
import atexit
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "Sources" / "TypedStore"
MUTANTS = ROOT / "Tools" / "mutants.txt"
WORK = ROOT / ".build" / "mutation-pass"
BUILD = ["swift", "build", "--build-tests"]
TEST_TIMEOUT = 600  # seconds; a mutant that hangs its tests counts as killed, marked so


class Mutant:
    def __init__(self, ident, title, filter_, survives, find, replace):
        self.ident, self.title, self.filter, self.find, self.replace = ident, title, filter_, find, replace
        self.survives = survives  # why no test can kill it (an equivalent mutant), or None
        self.path = None


def fail(message):
    print(f"mutation-pass: {message}", file=sys.stderr)
    sys.exit(2)


def parse(text):
    mutants = []
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        header, _, rest = block.partition("\n")
        ident, _, title = header.partition(" ")
        match = re.match(
            r"filter: ([^\n]*)\n(?:survives: ([^\n]*)\n)?--- find\n(.*?)\n--- replace\n(.*?)\n*\Z", rest, flags=re.S)
        if not match:
            fail(f"{ident}: expected 'filter:', optionally 'survives:', '--- find' and '--- replace' lines")
        mutants.append(
            Mutant(ident, title.strip(), match.group(1).strip(), match.group(2), match.group(3), match.group(4)))
    idents = [m.ident for m in mutants]
    if len(set(idents)) != len(idents):
        fail("two mutants share an id")
    return mutants


def locate(mutants):
    """Finds each mutant's file; fails loudly unless its snippet occurs exactly once."""
    texts = {path: path.read_text() for path in sorted(SOURCES.rglob("*.swift"))}
    problems = []
    for mutant in mutants:
        hits = [(path, text.count(mutant.find)) for path, text in texts.items() if mutant.find in text]
        count = sum(n for _, n in hits)
        if count != 1:
            where = ", ".join(f"{p.relative_to(ROOT)} ({n})" for p, n in hits) or "nowhere"
            problems.append(f"{mutant.ident}: the snippet occurs {count} times ({where}):\n    {mutant.find!r}")
        else:
            mutant.path = hits[0][0]
    if problems:
        fail("snippets not found exactly once in Sources/TypedStore/:\n  " + "\n  ".join(problems))


class Restorer:
    """Keeps the original text of the one mutated file and writes it back, whatever happens."""

    def __init__(self):
        self.path = None
        self.original = None
        atexit.register(self.restore)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self.on_signal)

    def mutate(self, mutant):
        self.restore()
        self.original = mutant.path.read_text()
        self.path = mutant.path
        WORK.mkdir(parents=True, exist_ok=True)
        (WORK / "original.swift").write_text(self.original)
        (WORK / "original.path").write_text(str(self.path))
        mutated = self.original.replace(mutant.find, mutant.replace, 1)
        assert mutated != self.original
        self.path.write_text(mutated)

    def restore(self):
        if self.path is not None:
            self.path.write_text(self.original)
            self.path = None
            for name in ("original.swift", "original.path"):
                (WORK / name).unlink(missing_ok=True)

    def on_signal(self, signum, frame):
        self.restore()
        print(f"mutation-pass: stopped by signal {signum}; the source is restored", file=sys.stderr)
        sys.exit(130)


def run(command, log, timeout=None):
    with open(log, "w") as out:
        try:
            process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None


def recover_interrupted_run():
    """A run killed with SIGKILL cannot restore: the next run does it first."""
    saved, saved_path = WORK / "original.swift", WORK / "original.path"
    if saved.exists() and saved_path.exists():
        path = Path(saved_path.read_text())
        path.write_text(saved.read_text())
        saved.unlink()
        saved_path.unlink()
        print(f"mutation-pass: restored {path.relative_to(ROOT)} left mutated by an interrupted run", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--check", action="store_true", help="only check that every snippet is found once")
    parser.add_argument("--mutants", type=Path, default=MUTANTS, help="the mutants file (default: Tools/mutants.txt)")
    parser.add_argument("--full-suite", action="store_true", help="run the whole suite for a filter's survivor")
    args = parser.parse_args()

    recover_interrupted_run()
    mutants = parse(args.mutants.read_text())
    if args.ids:
        unknown = set(args.ids) - {m.ident for m in mutants}
        if unknown:
            fail(f"no such mutants: {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m.ident in args.ids]
    locate(mutants)
    if args.check:
        print(f"mutation-pass: {len(mutants)} mutants, each snippet found exactly once")
        return

    WORK.mkdir(parents=True, exist_ok=True)
    # The unmutated build must be green, or every mutant would look killed.
    if run(BUILD, WORK / "build-baseline.log") != 0:
        fail(f"the unmutated package does not build; see {WORK / 'build-baseline.log'}")

    restorer = Restorer()
    rows = []
    for mutant in mutants:
        started = time.monotonic()
        restorer.mutate(mutant)
        where = mutant.path.relative_to(SOURCES)
        if run(BUILD, WORK / f"{mutant.ident}-build.log") != 0:
            outcome, killer = "not built", "(the mutant does not compile)"
        else:
            status = run(["swift", "test", "--skip-build", "--filter", mutant.filter],
                         WORK / f"{mutant.ident}-test.log", TEST_TIMEOUT)
            if status is None:
                outcome, killer = "killed", f"`{mutant.filter}` (timed out)"
            elif status != 0:
                outcome, killer = "killed", f"`{mutant.filter}`"
            elif args.full_suite and run(["swift", "test", "--skip-build"], WORK / f"{mutant.ident}-suite.log",
                                         TEST_TIMEOUT * 3) != 0:
                outcome, killer = "killed", "the whole suite"
            elif mutant.survives:
                outcome, killer = "survives (expected)", mutant.survives
            else:
                outcome, killer = "survived", f"`{mutant.filter}` passed"
        restorer.restore()
        seconds = time.monotonic() - started
        print(f"{mutant.ident} {outcome:19} {seconds:5.0f}s  {mutant.title}", flush=True)
        rows.append((mutant, where, outcome, killer))

    # Leave the build matching the restored sources.
    run(BUILD, WORK / "build-restored.log")
    table = ["| mutant | where | change | result | killed by |", "|---|---|---|---|---|"]
    for mutant, where, outcome, killer in rows:
        table.append(f"| {mutant.ident} | `{where}` | {mutant.title} | {outcome} | {killer} |")
    report = "\n".join(table) + "\n"
    (WORK / "results.md").write_text(report)
    print()
    print(report)
    survivors = [m.ident for m, _, outcome, _ in rows if outcome not in ("killed", "survives (expected)")]
    if survivors:
        print(f"mutation-pass: not killed: {', '.join(survivors)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
