"""Grading time per bundle on one core: the Gradescope package run as Gradescope runs it (``user+nonet``
isolation) beside the same grader under ``namespaces``.

    sudo .venv/bin/python benchmarks/gradescope_isolation.py            # ~10 minutes on a 2-core CPU, as root
    python benchmarks/gradescope_isolation.py --work /tmp/gl            # reuse gradescope_limits.py's bundles

For each task: the default-size bundle and default-size hidden set of ``gradescope_limits.py``; then, under
``taskset -c 0``,

- ``namespaces``: ``python -m autograder gradescope-run`` (the grader of ``run_autograder``) on
  this machine, where user namespaces work;
- ``user+nonet``: ``python -m autograder gradescope-selfcheck`` on the package ``gradescope``
  writes: run_autograder as root with namespaces and mounts refused and no cgroup, its ``chmod``
  and ``find`` over the package and the virtual environment included.

Reported: the wall time of each, the sandboxed child's own wall time (what isolation changes),
status, score. Writes benchmarks/results/gradescope_isolation.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gradescope_limits  # noqa: E402
from results_file import write_results  # noqa: E402


def user_isolation(task_name: str, work: Path, cpus: str) -> dict:
    """The package of ``work/TASK`` run by the self-check on its bundle, on ``cpus``."""
    from autograder.gradescope import package
    from autograder.rubric import load_rubric

    folder = work / task_name
    zip_path = package(task_name, folder / "hidden", folder / "autograder.zip", load_rubric(task=task_name))
    bundle = folder / "submission" / "submission.zip"
    started = time.perf_counter()
    ran = subprocess.run(
        [
            "taskset",
            "-c",
            cpus,
            sys.executable,
            "-m",
            "autograder",
            "gradescope-selfcheck",
            str(zip_path),
            str(bundle),
            "--keep",
            str(folder / "layout"),
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    try:
        results = json.loads((folder / "layout" / "autograder" / "results" / "results.json").read_text())
    finally:
        subprocess.run(["rm", "-rf", "--", str(folder / "layout")], check=False)
    record = results["extra_data"]["attention_lab"]
    seconds = next(
        (float(line.split()[-2]) for line in ran.stdout.splitlines() if line.startswith("run_autograder")),
        None,
    )
    return {
        "run_autograder_seconds": seconds,
        "selfcheck_wall_seconds": round(wall, 1),
        "sandbox_seconds": record.get("sandbox_seconds"),
        "isolation": record.get("isolation"),
        "status": record["status"],
        "score": results["score"],
        "exit_status": ran.returncode,
    }


def namespaces(task_name: str, work: Path, cpus: str) -> dict:
    """``gradescope-run`` under namespaces on ``cpus`` (gradescope_limits.py's own run, without a memory
    cgroup)."""
    row = gradescope_limits.grade_once(task_name, work, cpus, None)
    results = json.loads((work / task_name / "results.json").read_text())
    return {
        "gradescope_run_seconds": row["wall_seconds"],
        "sandbox_seconds": results["extra_data"]["attention_lab"].get("sandbox_seconds"),
        "isolation": row.get("isolation"),
        "status": row.get("status"),
        "score": row.get("score"),
    }


def main() -> None:
    from labs import tasks

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="*", default=list(tasks.names()), choices=tasks.names())
    parser.add_argument("--cpus", default="0", help="taskset's CPU list (default 0: one core)")
    parser.add_argument(
        "--work", default=None, help="keep bundles and hidden sets here (default: a temporary folder)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; do not rewrite the JSON")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run it as root: the package runs as Gradescope runs it (sudo .venv/bin/python ...)")

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gradescope-isolation-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {}
    try:
        for task_name in args.tasks:
            bundle = gradescope_limits.prepare(task_name, work)
            spaced = namespaces(task_name, work, args.cpus)
            user = user_isolation(task_name, work, args.cpus)
            report[task_name] = {"bundle": bundle, "namespaces": spaced, "user+nonet": user}
            print(
                f"{task_name:22} namespaces: gradescope-run {spaced['gradescope_run_seconds']:5.1f} s (child "
                f"{spaced['sandbox_seconds']} s) {spaced['status']} {spaced['score']}   user+nonet: "
                f"run_autograder "
                f"{user['run_autograder_seconds']} s (child {user['sandbox_seconds']} s) {user['status']} "
                f"{user['score']}",
                flush=True,
            )
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    checks = {
        "all_graded": all(
            r["namespaces"]["status"] == r["user+nonet"]["status"] == "graded" for r in report.values()
        ),
        "user_isolation_is_user+nonet": all(
            r["user+nonet"]["isolation"] == "user+nonet" for r in report.values()
        ),
        "same_scores": all(r["namespaces"]["score"] == r["user+nonet"]["score"] for r in report.values()),
    }
    print(json.dumps(checks))
    if not args.no_write:
        write_results(
            "gradescope_isolation",
            {"cpus": args.cpus, "brief_training": gradescope_limits.BRIEF_TRAINING},
            report,
            checks,
            "CPU only",
        )


if __name__ == "__main__":
    main()
