"""The Gradescope run of one bundle per task, on one CPU: peak memory of every process it starts, and wall
time.

    python benchmarks/gradescope_limits.py                  # ~10 minutes on a 2-core CPU
    python benchmarks/gradescope_limits.py --work /tmp/gl   # keep the bundles and hidden sets, to measure
    again

Gradescope runs the packaged grader (``python -m autograder gradescope-run``) in a container with
768 MB of memory and half a CPU by default, and a 10-minute timeout. This runs that same command
under ``taskset -c 0`` (one core; half a core takes about twice the wall time), for a bundle of
each task with the default model size (trained briefly: size sets the memory, not accuracy),
against a hidden set of the task's default size graded with the task's default rubric.

The run happens inside a memory cgroup of its own with Gradescope's limit (``--memory-mb``, 768;
where this machine lets the benchmark make one), as in Gradescope's container: the kernel
charges the grader and its child together, page cache included, and kills a process when they
need more. As in that container, the sandbox makes no cgroup of its own (it could not there), so
the child stays under the limit. Reported: the cgroup's peak charge and whether the kernel killed
anything. Memory is also polled every 50 ms over the whole process tree (the grader, the
sandbox's helpers, the child that loads and runs the model): the peak of the tree's summed
resident memory (RSS: shared library pages counted once per process), of its proportional
memory (PSS: shared pages split between processes), and of its anonymous memory (what no
reclaim can free), the largest process's peak, the grader's own; the wall time; the status,
score and output line in results.json.

Prints a table; writes benchmarks/results/gradescope_limits.json.
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

from results_file import write_results  # noqa: E402

from autograder.container import MemoryCgroup  # noqa: E402

GRADESCOPE_MB = 768
GRADESCOPE_TIMEOUT_SECONDS = 600
# The default model of each task, trained briefly: its size is the default's, its accuracy is not.
BRIEF_TRAINING = {
    "date-generation": {"train_size": 5_000, "val_size": 500, "epochs": 1},
    "date-translation": {"train_size": 3_000, "val_size": 300, "epochs": 1},
    "name-transliteration": {"train_size": 2_000, "val_size": 200, "epochs": 1},
}
POLL_SECONDS = 0.05
# The grader as in Gradescope's container: its sandbox cannot make a cgroup there, so the child stays in the
# container's.
AS_IN_A_CONTAINER = (
    "import sys, autograder.process_tree as tree; "
    "tree.Cgroup.create = classmethod(lambda cls, name, limits: None); "
    "from autograder.__main__ import main; sys.exit(main(sys.argv[1:]))"
)


def _bundle(task_name: str, folder: Path) -> dict:
    """Train ``task_name``'s default-size model briefly and export it to ``folder/submission.zip`` (once)."""
    from labs import tasks
    from labs.common.submission import export

    bundle = folder / "submission.zip"
    info_file = folder / "bundle.json"
    if bundle.is_file() and info_file.is_file():
        return json.loads(info_file.read_text())
    task = tasks.get(task_name)
    config = task.config(**BRIEF_TRAINING[task_name])
    run = task.train(config, verbose=0)
    shutil.rmtree(folder, ignore_errors=True)
    export(run.model, run.vocabs, task=task_name, student_id="gradescope-limits", out=bundle)
    info = {
        "parameters": int(run.model.count_params()),
        "training": BRIEF_TRAINING[task_name],
        "training_seconds": round(run.seconds, 1),
        "bundle_kb": round(bundle.stat().st_size / 1024),
    }
    info_file.write_text(json.dumps(info))
    return info


def _anonymous_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _tree(root) -> list:
    import psutil

    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _measure(process: subprocess.Popen) -> dict:
    """Poll ``process`` and its descendants until it ends: peaks of summed RSS and PSS, of the largest
    process."""
    import psutil

    root = psutil.Process(process.pid)
    peak = {
        "tree_rss_mb": 0.0,
        "tree_pss_mb": 0.0,
        "tree_anonymous_mb": 0.0,
        "largest_process_rss_mb": 0.0,
        "grader_rss_mb": 0.0,
        "processes": 0,
    }
    while process.poll() is None:
        rss = pss = largest = anon = 0
        members = _tree(root)
        for member in members:
            try:
                info = member.memory_full_info()
            except psutil.Error:
                continue
            rss, pss, largest = rss + info.rss, pss + getattr(info, "pss", info.rss), max(largest, info.rss)
            anon += _anonymous_bytes(member.pid)
            if member.pid == root.pid:
                peak["grader_rss_mb"] = max(peak["grader_rss_mb"], info.rss / 2**20)
        peak["tree_rss_mb"] = max(peak["tree_rss_mb"], rss / 2**20)
        peak["tree_pss_mb"] = max(peak["tree_pss_mb"], pss / 2**20)
        peak["tree_anonymous_mb"] = max(peak["tree_anonymous_mb"], anon / 2**20)
        peak["largest_process_rss_mb"] = max(peak["largest_process_rss_mb"], largest / 2**20)
        peak["processes"] = max(peak["processes"], len(members))
        time.sleep(POLL_SECONDS)
    return {key: round(value, 1) for key, value in peak.items()}


def grade_once(
    task_name: str, work: Path, cpus: str, memory_mb: int | None, rubric: Path | None = None
) -> dict:
    """``gradescope-run`` on ``work/TASK``'s bundle under ``taskset -c CPUS`` (and a ``memory_mb`` cgroup
    where one can be made): memory, time, results.json."""
    from labs import tasks

    folder = work / task_name
    results = folder / "results.json"
    results.unlink(missing_ok=True)
    command = [
        "taskset",
        "-c",
        cpus,
        sys.executable,
        "-c",
        AS_IN_A_CONTAINER,
        "gradescope-run",
        "--task",
        task_name,
        "--hidden",
        str(folder / "hidden"),
        "--rubric",
        str(rubric or tasks.get(task_name).rubric_path),
        "--submission",
        str(folder / "submission"),
        "--results",
        str(results),
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    cgroup = MemoryCgroup.create(memory_mb) if memory_mb else None
    try:
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=cgroup.join if cgroup else None,
        )
        memory = _measure(process)
        stdout, stderr = process.communicate()
        seconds = time.perf_counter() - started
        container = {
            "memory_limit_mb": memory_mb if cgroup else None,
            "cgroup_peak_mb": cgroup.peak_mb() if cgroup else None,
            "killed_for_memory": cgroup.oom_kills() if cgroup else None,
        }
    finally:
        if cgroup:
            cgroup.remove()
    row = {
        "wall_seconds": round(seconds, 1),
        **container,
        **memory,
        "exit_status": process.returncode,
        "stdout_last_line": stdout.strip().splitlines()[-1] if stdout.strip() else "",
        "stderr_tail": stderr.strip()[-300:],
    }
    if results.is_file():
        data = json.loads(results.read_text())
        record = data["extra_data"]["attention_lab"]
        row.update(
            status=record["status"],
            score=data["score"],
            max_score=record["max_score"],
            child_seconds=record.get("child_seconds"),
            sandbox_peak_memory_mb=record.get("peak_memory_mb"),
            isolation=record.get("isolation"),
            output=data["output"],
        )
    return row


def _rubric(task_name: str, work: Path, batch_size: int | None) -> Path | None:
    """The task's rubric with another decoding batch size (a translation task's), or None for the rubric
    itself."""
    import re

    from labs import tasks

    text = tasks.get(task_name).rubric_path.read_text(encoding="utf-8")
    if batch_size is None or not re.search(r"(?m)^batch_size = ", text):
        return None
    path = work / task_name / f"rubric-batch-{batch_size}.toml"
    path.write_text(re.sub(r"(?m)^batch_size = .*$", f"batch_size = {batch_size}", text), encoding="utf-8")
    return path


def prepare(task_name: str, work: Path) -> dict:
    """The bundle (``work/TASK/submission/submission.zip``) and a default-size hidden set
    (``work/TASK/hidden``)."""
    from autograder.hidden import make_hidden_set
    from labs import tasks

    folder = work / task_name
    info = _bundle(task_name, folder / "submission")
    if not (folder / "hidden" / "manifest.json").is_file():
        secret = work / "secret.txt"
        if not secret.is_file():
            secret.write_text("gradescope-limits-benchmark-0123456789abcdef")
        make_hidden_set(task_name, secret, folder / "hidden")  # the task's default size
    os.chmod(work, 0o700)
    info["hidden_rows"] = json.loads((folder / "hidden" / "manifest.json").read_text())["size"]
    info["hidden_default_rows"] = tasks.get(task_name).hidden_size
    return info


def main() -> None:
    from labs import tasks

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="*", default=list(tasks.names()), choices=tasks.names())
    parser.add_argument("--cpus", default="0", help="taskset's CPU list (default 0: one core)")
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=GRADESCOPE_MB,
        help="the container's memory limit to run under (default 768, Gradescope's; 0: none)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="grade with the rubric's [grading] batch_size set to this (default: the rubric's own)",
    )
    parser.add_argument(
        "--work", default=None, help="keep bundles and hidden sets here (default: a temporary folder)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; do not rewrite the JSON")
    args = parser.parse_args()

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gradescope-limits-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {}
    try:
        for task_name in args.tasks:
            bundle = prepare(task_name, work)
            row = grade_once(
                task_name, work, args.cpus, args.memory_mb, _rubric(task_name, work, args.batch_size)
            )
            report[task_name] = {"bundle": bundle, **row}
            print(
                f"{task_name:22} {row['wall_seconds']:6.1f} s  cgroup peak {row['cgroup_peak_mb']} MB "
                f"(limit {row['memory_limit_mb']}, killed {row['killed_for_memory']})  tree RSS "
                f"{row['tree_rss_mb']:5.0f} MB  PSS {row['tree_pss_mb']:5.0f}  anonymous "
                f"{row['tree_anonymous_mb']:5.0f}  "
                f"largest {row['largest_process_rss_mb']:5.0f}  grader {row['grader_rss_mb']:4.0f} MB  "
                f"{row.get('status')} {row.get('score')}",
                flush=True,
            )
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    checks = {
        "ran_under_a_768_mb_cgroup": all(r["memory_limit_mb"] == GRADESCOPE_MB for r in report.values()),
        "fits_768_mb": all(
            r["killed_for_memory"] == 0 and r.get("status") == "graded" for r in report.values()
        ),
        "pss_under_768_mb": all(r["tree_pss_mb"] <= GRADESCOPE_MB for r in report.values()),
        "under_10_minutes_at_half_a_cpu": all(
            2 * r["wall_seconds"] <= GRADESCOPE_TIMEOUT_SECONDS for r in report.values()
        ),
        "all_graded": all(r.get("status") == "graded" for r in report.values()),
    }
    print(json.dumps(checks))
    if not args.no_write:
        write_results(
            "gradescope_limits",
            {
                "cpus": args.cpus,
                "memory_limit_mb": args.memory_mb,
                "batch_size": args.batch_size or "the rubric's",
                "gradescope_memory_mb": GRADESCOPE_MB,
                "gradescope_timeout_seconds": GRADESCOPE_TIMEOUT_SECONDS,
                "brief_training": BRIEF_TRAINING,
                "poll_seconds": POLL_SECONDS,
            },
            report,
            checks,
            "CPU only",
        )


if __name__ == "__main__":
    main()
