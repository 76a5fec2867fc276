"""Homework 3.1 targets: the reference model (the solution's key-value attention), default configuration.

    python benchmarks/name_transliteration.py        # ~12 minutes on a 2-core CPU
    python benchmarks/name_transliteration.py --against 10bc03c  # first the benchmark at that commit

``--against REV`` runs this benchmark as it was at commit REV (in a temporary git worktree, with this
interpreter) before this one, on the same machine, and prints both training times and their ratio:
machines here differ by 2x from day to day, so a training time is compared only with one measured beside it.
``--before FILE`` takes those figures from a results file written by such a run made just before.

1. Training time (targets: at most 10 minutes on a 2-core CPU, and with ``--against``, no longer
   than the commit's).
2. On the public test split (4,000 names: 2,000 ``seen``, 2,000 ``unseen``), decoded with beam
   search (width 3): accuracy against any accepted spelling (targets: >= 99 % seen, >= 93 %
   unseen), character error rate (targets: <= 1 % seen, <= 4 % unseen), exact match, mean
   F-score, MRR and top-3 accuracy, per stratum; and accuracy by name length.
3. Decoding speed: names per second, greedy and beam 3, with the step decoder (after a warm-up run).
4. Side by side on the same names: pythainlp's own romanizers, ``thai2rom_onnx`` (neural, ONNX)
   and ``royin`` (rules, RTGS), each word romanized and capitalised: accuracy, character error
   rate and names per second. Mind what this compares: the dataset's spellings were *made* from
   thai2rom_onnx's outputs (plus a rule layer), and its plain spelling is one of the accepted
   alternatives; so thai2rom_onnx is the teacher here, not a rival, and the interesting figures
   are how close the student model gets and how fast each runs.

Prints a table; writes benchmarks/results/name_transliteration.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import (  # noqa: E402
    ROOT,
    add_comparison_arguments,
    comparison_command,
    read_before,
    short_commit,
    write_results,
)

from labs.common.files import read_csv  # noqa: E402
from labs.common.paths import DATASETS_DIR  # noqa: E402
from labs.name_transliteration import evaluate  # noqa: E402
from labs.name_transliteration.config import NameTransliterationConfig  # noqa: E402
from labs.name_transliteration.train import train  # noqa: E402
from labs.name_transliteration.transliterate import transliterate  # noqa: E402


def timed(model, vocabs, names, **options):
    transliterate(model, vocabs, names[:200], **options)  # warm-up: build and compile the step decoder
    started = time.perf_counter()
    results = transliterate(model, vocabs, names, **options)
    return results, time.perf_counter() - started


def romanizer_predictions(names: list[str], engine: str) -> tuple[list[str], float]:
    """Each name's words romanized by pythainlp's ``engine`` and capitalised; and the seconds it took."""
    from labs.name_transliteration.romanization import romanize_words

    romanize_words(["สมชาย"], engine)  # load the engine outside the timing
    started = time.perf_counter()
    predictions = [
        " ".join(w.capitalize() for w in romanize_words(name.split(" "), engine)) for name in names
    ]
    return predictions, time.perf_counter() - started


def against(revision: str) -> dict:
    """This benchmark as it was at ``revision``, run now in a temporary worktree: its commit and figures."""
    commit = short_commit(revision)
    with tempfile.TemporaryDirectory(prefix="attention-lab-against-") as temporary:
        tree = Path(temporary) / "kit"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True)
        try:
            print(f"== the benchmark at {commit} (before this one, same machine)", flush=True)
            subprocess.run([sys.executable, "benchmarks/name_transliteration.py"], cwd=tree, check=True)
            old = json.loads((tree / "benchmarks" / "results" / "name_transliteration.json").read_text())
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    strata = old["report"]["beam3"]["per_stratum"]
    return {
        "commit": commit,
        "config": old["config"],
        "training_seconds": old["report"]["training_seconds"],
        "seen": strata["seen"]["accuracy"],
        "unseen": strata["unseen"]["accuracy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_comparison_arguments(parser, "run this benchmark")
    args = parser.parse_args()
    before = against(args.against) if args.against else None
    if args.before:
        before = read_before(args.before, ("commit", "config", "training_seconds", "seen", "unseen"))
        before = {key: value for key, value in before.items() if key != "time_ratio"}
    config = NameTransliterationConfig()
    test = read_csv(DATASETS_DIR / "thai-names" / "test.csv")
    names = [row["source"] for row in test]
    run = train(config, verbose=2)
    greedy, greedy_seconds = timed(run.model, run.vocabs, names)
    beam, beam_seconds = timed(run.model, run.vocabs, names, beam=3)
    result = evaluate.summary(test, [r.alternatives for r in beam])
    report = {
        "training_seconds": run.seconds,
        "parameters": run.model.count_params(),
        "validation_loss": run.history["validation"][-1],
        "beam3": result,
        "greedy": evaluate.summary(test, [[r.output] for r in greedy]),
        "names_per_second": {"greedy": len(names) / greedy_seconds, "beam3": len(names) / beam_seconds},
    }
    print(f"\ntrained in {run.seconds:.0f} s on the {run.device} ({run.model.count_params():,} parameters)")
    print(evaluate.format_summary(result, "beam 3"))
    print(evaluate.format_summary(report["greedy"], "greedy"))
    print(
        f"decoding: greedy {report['names_per_second']['greedy']:,.0f} names/s, "
        f"beam 3 {report['names_per_second']['beam3']:,.0f} names/s"
    )
    report["pythainlp"] = {}
    for engine in ("thai2rom_onnx", "royin"):
        predictions, seconds = romanizer_predictions(names, engine)
        summary = evaluate.summary(test, [[p] for p in predictions])
        report["pythainlp"][engine] = {"summary": summary, "names_per_second": len(names) / seconds}
        print(
            evaluate.format_summary(summary, f"pythainlp {engine}").splitlines()[0]
            + f"; {len(names) / seconds:,.0f} names/s"
        )
        for stratum, headline in summary["per_stratum"].items():
            print(f"    {stratum} words: accuracy {headline['accuracy']:.2%}, CER {headline['cer']:.2%}")
    seen, unseen = result["per_stratum"]["seen"], result["per_stratum"]["unseen"]
    if before is not None:
        report["against"] = {**before, "time_ratio": run.seconds / before["training_seconds"]}
        print(
            f"training time: {run.seconds:.0f} s here, {before['training_seconds']:.0f} s at "
            f"{before['commit']} "
            f"(ratio {report['against']['time_ratio']:.2f}); unseen {unseen['accuracy']:.2%} against "
            f"{before['unseen']:.2%}, seen {seen['accuracy']:.2%} against {before['seen']:.2%}"
        )
    checks = {
        "training_at_most_10_minutes": run.seconds <= 600,
        "seen_accuracy_at_least_99": seen["accuracy"] >= 0.99,
        "unseen_accuracy_at_least_93": unseen["accuracy"] >= 0.93,
        "seen_cer_at_most_1": seen["cer"] <= 0.01,
        "unseen_cer_at_most_4": unseen["cer"] <= 0.04,
    }
    if before is not None:
        checks["training_no_longer_than_before"] = run.seconds <= before["training_seconds"]
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'MISS'}  {name}")
    write_results(
        "name_transliteration",
        config.to_dict(),
        report,
        checks,
        run.device,
        command=comparison_command("name_transliteration", args),
    )


if __name__ == "__main__":
    main()
