"""The grader's time to score a homework bundle's outputs: 2,000 hidden names, three beams each.

    python benchmarks/scoring_time.py                  # a few seconds
    python benchmarks/scoring_time.py --against REV    # and the same at commit REV first, side by side

The rubric gives the grader ``scoring_seconds`` (60 s) to score one bundle's outputs, on Gradescope's half a
CPU; past it, the bundle gets an error instead of its grade. The work grows with the length of the outputs:
a model that never ends its names (a short or broken training) writes 64 letters for each, and every
accepted spelling of every name is compared with its best output, letter by letter. Three kinds of outputs
are timed (CPU seconds of ``grading_metrics``, the grader's own function), each three times, the least kept:
the right spellings, a model that never ends its names (64 random letters), and the first letters of the
right spelling followed by noise up to 64 letters.

Prints a table; writes benchmarks/results/scoring_time.json.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES, REPEATS = 2000, 3
LONGEST = 64  # the homework's longest output (TASK.max_output_length)


def outputs(kind: str, rows: list[dict]) -> list[list[str]]:
    rng = random.Random(3)

    def noise(n: int) -> str:
        return "".join(rng.choice("abcdefghiklmnoprstuwy ") for _ in range(n))

    if kind == "right":
        return [[row["target"], noise(len(row["target"])), noise(len(row["target"]))] for row in rows]
    if kind == "never-ending":
        return [[noise(LONGEST) for _ in range(3)] for _ in rows]
    return [[(row["target"][:8] + noise(LONGEST))[:LONGEST] for _ in range(3)] for row in rows]


KINDS = ("right", "never-ending", "right-start-then-noise")


def measure(root: Path) -> dict:
    """CPU seconds of ``grading_metrics`` on each kind of outputs, with the kit at ``root``."""
    sys.path.insert(0, str(root))
    from labs.common.files import read_csv
    from labs.name_transliteration.evaluate import grading_metrics

    rows = read_csv(root / "datasets" / "thai-names" / "test.csv")[:NAMES]
    seconds = {}
    for kind in KINDS:
        given = {"outputs": outputs(kind, rows)}
        times = []
        for _ in range(REPEATS):
            started = time.process_time()
            grading_metrics(given, rows)
            times.append(time.process_time() - started)
        seconds[kind] = round(min(times), 3)
    return seconds


def against(revision: str) -> dict:
    """The same measure with the kit as it was at ``revision``, in a temporary worktree."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from results_file import short_commit

    commit = short_commit(revision)
    with tempfile.TemporaryDirectory(prefix="attention-lab-against-") as temporary:
        tree = Path(temporary) / "kit"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--quiet", "--detach", str(tree), commit], check=True
        )
        try:
            ran = subprocess.run(
                [sys.executable, __file__, "--measure-at", str(tree)],
                check=True,
                capture_output=True,
                text=True,
            )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    return {"commit": commit, "seconds": json.loads(ran.stdout.splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="first time the kit as it was at commit REV")
    parser.add_argument("--measure-at", metavar="ROOT", help=argparse.SUPPRESS)  # the run inside a worktree
    args = parser.parse_args()
    if args.measure_at:
        print(json.dumps(measure(Path(args.measure_at))))
        return
    before = against(args.against) if args.against else None
    seconds = measure(ROOT)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from results_file import write_results

    from autograder.rubric import load_rubric

    budget = load_rubric(task="name-transliteration").scoring_seconds
    print(f"grading_metrics on {NAMES:,} names, 3 beams (CPU s, least of {REPEATS}); budget {budget:.0f} s")
    for kind in KINDS:
        was = f"   at {before['commit']}: {before['seconds'][kind]:.2f} s" if before else ""
        print(f"  {kind:24} {seconds[kind]:6.2f} s{was}")
    report = {"names": NAMES, "beams": 3, "cpu_seconds": seconds, "budget_seconds": budget}
    if before:
        report["against"] = before
    write_results(
        "scoring_time",
        {"names": NAMES, "repeats": REPEATS, "longest_output": LONGEST},
        report,
        # a tenth of the budget on this CPU: Gradescope's half a CPU and a slow day leave it inside
        {"longest_outputs_within_a_tenth_of_the_budget": max(seconds.values()) <= budget / 10},
        "CPU",
        f"python benchmarks/scoring_time.py{f' --against {args.against}' if args.against else ''}",
    )


if __name__ == "__main__":
    main()
