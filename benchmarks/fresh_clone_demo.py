"""`make demo` as a newcomer runs it: a fresh clone, no .venv, no pip cache; install and demo timed apart.

    python benchmarks/fresh_clone_demo.py [--pip-cache]   # 10 to 15 minutes; writes
    benchmarks/results/fresh_clone_demo.json
    python benchmarks/fresh_clone_demo.py --against 10bc03c   # that commit first, then HEAD: both times

With ``--against REV`` it measures the kit at commit REV the same way first, on the same machine, and
prints the ratio of the two ``make demo`` times (machines here differ by 2x from day to day);
``--before FILE`` takes the older commit's figures from a results file written by such a run made just before.

It clones HEAD (uncommitted changes are not measured), then runs the Makefile's install target (``make
.venv/.installed``: create ``.venv``, install ``requirements-dev.txt``) and ``make demo`` in the clone, with
the interpreter on PATH, as the README's Quickstart does. pip runs with ``PIP_NO_CACHE_DIR=1`` unless
``--pip-cache`` is given, so every wheel is downloaded as on a fresh machine: the install time depends on the
network, and on where pip is configured to look (``pip config list``; a machine with a local wheel mirror
installs faster than one reading PyPI), which the results record. The demo's own figures (time per lab,
grades) come from the clone's ``runs/demo/summary.json``."""

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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import (  # noqa: E402
    ROOT,
    add_comparison_arguments,
    comparison_command,
    read_before,
    short_commit,
    write_results,
)


def _environment(pip_cache: bool) -> dict:
    """The caller's environment without its virtual environment, as on a machine where nothing is set up."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv_bins = {str(Path(p).resolve()) for p in (os.environ.get("VIRTUAL_ENV", ""), sys.prefix) if p}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if str(Path(p).resolve().parent) not in venv_bins
    )
    if not pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    return env


def _timed(command: list[str], cwd: Path, env: dict, log: Path) -> float:
    """Run ``command``, echo its output and keep it in ``log``; its wall time in seconds."""
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as handle:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for line in process.stdout:
            handle.write(line)
            if not line.startswith(("  Downloading", "  Using cached", "Requirement already", "Collecting")):
                print("   ", line.rstrip()[:160], flush=True)
    if process.wait() != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {process.returncode}; see {log}")
    return time.perf_counter() - started


def measure(revision: str, pip_cache: bool, keep: bool) -> dict:
    """Clone the kit at ``revision``, install and run ``make demo`` in the clone: the timings and grades."""
    commit = short_commit(revision)
    work = Path(tempfile.mkdtemp(prefix="attention-lab-fresh-"))
    kit, env = work / "attention-lab", _environment(pip_cache)
    python = subprocess.run(["python3", "--version"], env=env, capture_output=True, text=True).stdout.strip()
    pip_config = subprocess.run(
        ["python3", "-m", "pip", "config", "list"], env=env, capture_output=True, text=True
    )
    pip_sources = [
        line for line in pip_config.stdout.splitlines() if "index-url" in line or "find-links" in line
    ]
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(kit)], check=True)
        subprocess.run(["git", "-C", str(kit), "checkout", "--quiet", commit], check=True)
        print(
            f"[1/2] {kit} at {commit}: make .venv/.installed ({python}, pip cache "
            f"{'on' if pip_cache else 'off'})"
        )
        install = _timed(["make", ".venv/.installed"], kit, env, work / "install.log")
        print(f"  installed in {install:.0f} s\n[2/2] make demo")
        demo = _timed(["make", "demo"], kit, env, work / "demo.log")
        summary = json.loads((kit / "runs" / "demo" / "summary.json").read_text(encoding="utf-8"))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    print(f"\ninstall {install:.0f} s + make demo {demo / 60:.1f} min = {(install + demo) / 60:.1f} min")
    for task, lab in summary["labs"].items():
        print(
            f"  {task:22} trained in {lab['training_seconds']:5.0f} s, grade {lab['score']:g} / "
            f"{lab['max_score']:g}"
        )
    return {
        "commit": commit,
        "python": python,
        "pip_sources": pip_sources,
        "install_seconds": round(install, 1),
        "demo_seconds": round(demo, 1),
        "total_seconds": round(install + demo, 1),
        "demo_reported_seconds": summary["seconds"],
        "device": summary["device"],
        "labs": summary["labs"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pip-cache", action="store_true", help="let pip use its cache (not a fresh machine)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    add_comparison_arguments(parser, "measure the kit the same way")
    args = parser.parse_args()
    if subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.strip():
        print("note: the working tree has uncommitted changes; the clone measures HEAD without them")
    before = measure(args.against, args.pip_cache, args.keep) if args.against else None
    if args.before:
        before = read_before(args.before, ("commit", "install_seconds", "demo_seconds", "labs"))
    report = measure("HEAD", args.pip_cache, args.keep)
    checks = {"demo_under_15_minutes": report["demo_seconds"] <= 15 * 60}
    if before is not None:
        report["against"] = {
            key: before[key] for key in ("commit", "install_seconds", "demo_seconds", "labs")
        }
        ratio = report["demo_seconds"] / before["demo_seconds"]
        report["against"]["demo_time_ratio"] = round(ratio, 3)
        checks["demo_at_most_two_thirds_of_before"] = ratio <= 2 / 3
        print(
            f"make demo: {report['demo_seconds']:.0f} s at {report['commit']} against "
            f"{before['demo_seconds']:.0f} s at {before['commit']}, measured just before: ratio {ratio:.2f}"
        )
    unseen = (
        report["labs"].get("name-transliteration", {}).get("hidden_set_metrics", {}).get("accuracy_unseen")
    )
    if unseen is not None:
        checks["homework_hidden_unseen_at_least_90"] = unseen >= 0.90
        print(f"homework, hidden set: unseen names {unseen:.2%}")
    write_results(
        "fresh_clone_demo",
        {"pip_cache": args.pip_cache},
        report,
        checks,
        report["device"],
        command=comparison_command("fresh_clone_demo", args),
    )


if __name__ == "__main__":
    main()
