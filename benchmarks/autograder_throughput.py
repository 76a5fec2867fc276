"""Autograder throughput: 50 lab-2 bundles graded against a 1,000-pair hidden set, with --jobs 1 and 2.

    python benchmarks/autograder_throughput.py        # ~12 minutes on a 2-core CPU

The bundles are one trained lab-2 model (the default architecture) exported 50 times under
different student ids, so every bundle costs the same. Reported: wall time of each batch
(target: at most 5 minutes with --jobs 2), bundles per minute, and per bundle the sandbox's
wall time split into the child's own work (loading the model, decoding the hidden set) and the
rest: the sandbox overhead (process start, TensorFlow import, copying files, isolation, counting
the parameters in a sandbox of their own), and the peak memory of the child's whole tree. The
time with --jobs 2 is compared with the previous run's (the JSON file this script overwrites).

Model similarity's share of the batch (issue target: at most 10 % more grading time for 50
bundles): the comparison of every pair and the class report at the end of ``grade`` (timed again
on the --jobs 2 grades: 1,225 pairs, all flagged, the worst case for the report), plus what reading
the weights' values for the fingerprint and the sampled matrices adds to each bundle's weights
sandbox (timed in this process against counting the parameters alone), over the --jobs 2 batch.

Prints a table; writes benchmarks/results/autograder_throughput.json.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import write_results  # noqa: E402

from autograder import weights  # noqa: E402
from autograder.batch import compare_class, grade_folder  # noqa: E402
from autograder.hidden import make_hidden_set  # noqa: E402
from autograder.rubric import load_rubric  # noqa: E402
from autograder.sandbox import available_isolation  # noqa: E402
from labs.common.submission import export  # noqa: E402
from labs.date_translation.config import DateTranslationConfig  # noqa: E402
from labs.date_translation.train import train  # noqa: E402

BUNDLES = 50
PREVIOUS = Path(__file__).resolve().parent / "results" / "autograder_throughput.json"


def main() -> None:
    config = DateTranslationConfig(train_size=20_000, epochs=2)  # the default architecture, trained briefly
    previous = (
        json.loads(PREVIOUS.read_text())["report"]["jobs"]["2"]["seconds"] if PREVIOUS.is_file() else None
    )
    rubric = load_rubric(task="date-translation")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        run = train(config, verbose=0)
        (root / "secret.txt").write_text("benchmark-secret-0123456789abcdef")
        make_hidden_set("date-translation", root / "secret.txt", root / "hidden")
        subs = root / "submissions"
        first = export(
            run.model,
            run.vocabs,
            task="date-translation",
            student_id="student-00",
            out=subs / "student-00.zip",
        )
        for i in range(1, BUNDLES):
            shutil.copyfile(first, subs / f"student-{i:02d}.zip")
        report = {
            "bundles": BUNDLES,
            "hidden_pairs": 1000,
            "isolation": available_isolation(),
            "previous_seconds_with_2_jobs": previous,
            "exact_match_of_the_bundle": None,
            "jobs": {},
        }
        for jobs in (1, 2):
            started = time.perf_counter()
            records = grade_folder(subs, rubric, root / "hidden", root / f"grades-{jobs}", jobs=jobs)
            seconds = time.perf_counter() - started
            sandbox = [r["sandbox_seconds"] for r in records]
            child = [r["child_seconds"]["load"] + r["child_seconds"]["predict"] for r in records]
            report["exact_match_of_the_bundle"] = records[0]["metrics"]["exact_match"]
            report["jobs"][jobs] = {
                "seconds": seconds,
                "bundles_per_minute": 60 * BUNDLES / seconds,
                "all_graded": all(r["status"] == "graded" for r in records),
                "sandbox_seconds_median": statistics.median(sandbox),
                "child_work_seconds_median": statistics.median(child),
                "sandbox_overhead_seconds_median": statistics.median(s - c for s, c in zip(sandbox, child)),
                "peak_memory_mb_median": statistics.median(r["peak_memory_mb"] for r in records),
            }
            j = report["jobs"][jobs]
            print(
                f"--jobs {jobs}: {BUNDLES} bundles in {seconds:.1f} s ({j['bundles_per_minute']:.1f} per "
                f"minute); "
                f"per bundle: sandbox {j['sandbox_seconds_median']:.2f} s = model work "
                f"{j['child_work_seconds_median']:.2f} s + overhead "
                f"{j['sandbox_overhead_seconds_median']:.2f} s"
            )
        report["similarity"] = _similarity_share(
            first, records, rubric, root / "grades-2", report["jobs"][2]["seconds"]
        )
    checks = {
        "50_bundles_within_5_minutes_with_2_jobs": report["jobs"][2]["seconds"] <= 300,
        "similarity_adds_at_most_10_percent": report["similarity"]["share_of_grading"] <= 0.10,
        "every_bundle_graded": all(j["all_graded"] for j in report["jobs"].values()),
    }
    if previous:
        report["ratio_to_previous_with_2_jobs"] = report["jobs"][2]["seconds"] / previous
        checks["within_25_percent_of_the_previous_run_with_2_jobs"] = (
            report["ratio_to_previous_with_2_jobs"] <= 1.25
        )
        print(
            f"--jobs 2 against the previous run ({previous:.1f} s): "
            f"{report['ratio_to_previous_with_2_jobs']:.2f}x"
        )
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'MISS'}  {name}")
    write_results("autograder_throughput", config.to_dict(), report, checks, run.device)


def _similarity_share(bundle: Path, records: list[dict], rubric, grades: Path, batch_seconds: float) -> dict:
    """Seconds that model similarity adds to the --jobs 2 batch, and their share of the rest of its time."""
    import zipfile

    started = time.perf_counter()
    compare_class(records, rubric, grades)
    compare_seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as scratch:
        with zipfile.ZipFile(bundle) as archive:
            model = archive.extract("model.keras", scratch)
        timings = {}
        for name, limit in (("count_only", -1), ("with_similarity", weights.MAX_READ)):
            saved, weights.MAX_READ = weights.MAX_READ, limit
            try:
                started = time.perf_counter()
                for _ in range(20):
                    weights.read(model)
                timings[name] = (time.perf_counter() - started) / 20
            finally:
                weights.MAX_READ = saved
    per_bundle = max(0.0, timings["with_similarity"] - timings["count_only"])
    added = compare_seconds + BUNDLES * per_bundle / 2  # two bundles at a time
    share = added / (batch_seconds - added)
    print(
        f"model similarity: compare + class report {compare_seconds:.2f} s, weights {per_bundle * 1000:.1f} "
        f"ms more "
        f"per bundle: {added:.2f} s, {share:.1%} of the rest of the batch"
    )
    return {
        "compare_and_report_seconds": compare_seconds,
        "weights_extra_seconds_per_bundle": per_bundle,
        "added_seconds": added,
        "share_of_grading": share,
        "flagged_pairs": sum(1 for _ in open(grades / "similarity.csv", encoding="utf-8")) - 1,
    }


if __name__ == "__main__":
    main()
