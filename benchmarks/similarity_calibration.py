"""Model similarity's calibration: what independently trained lab-2 models look like to each other, and
what a copy trained further looks like to its original.

    python benchmarks/similarity_calibration.py          # ~8 minutes on a 2-core CPU
    python benchmarks/similarity_calibration.py --reuse  # grade and compare the bundles of the last run again

Trains lab 2's model (the default architecture, 20,000 pairs, 3 epochs: good, not perfect, so that
it makes mistakes to share) from seeds 1 to 8, and two with another attention (luong-general,
seeds 9 and 10): a class of independent work. Then three copies of seed 1's model: trained 1
and 3 more epochs on fresh pairs (a fresh optimizer, as a student who copies a model would), and
one *distilled*: a luong-general model (another architecture, its own seed 11) trained 5 epochs
on 40,000 fresh sources labelled by seed 1's model, the copy that only shared mistakes can see.
(A distilled model that starts from another student's seed shares that student's starting
weights: weight similarity flags that pair, as it should.) All thirteen are exported as bundles and graded against a 1,000-pair
hidden set, and :mod:`autograder.similarity` compares every pair (78).

Reported per pair: identical weights, weight similarity, shared mistakes (observed, expected for
independent models, z), flagged, and the kind of pair. Checks: no independent pair is flagged,
every copy of seed 1 is (against seed 1); and the margins: the largest independent weight
similarity against :data:`autograder.similarity.WEIGHT_THRESHOLD`, the smallest of a copy; the
largest independent z against :data:`autograder.similarity.MISTAKES_Z`, the distilled copy's.

Prints a table; writes benchmarks/results/similarity_calibration.json.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import write_results  # noqa: E402
from autograder import similarity  # noqa: E402
from autograder.batch import grade_folder  # noqa: E402
from autograder.hidden import make_hidden_set  # noqa: E402
from autograder.rubric import load_rubric  # noqa: E402
from labs.common.pipeline import translation_batches  # noqa: E402
from labs.common.submission import export  # noqa: E402
from labs.common.training import compile_for_training, device_description, fit  # noqa: E402
from labs.date_translation.config import DateTranslationConfig  # noqa: E402
from labs.date_translation.data import sample_pairs  # noqa: E402
from labs.date_translation.train import train  # noqa: E402

CONFIG = DateTranslationConfig(train_size=20_000, epochs=3)
INDEPENDENT = {"seed-1": CONFIG, **{f"seed-{seed}": replace(CONFIG, seed=seed) for seed in range(2, 9)},
               **{f"general-seed-{seed}": replace(CONFIG, seed=seed, attention="luong-general") for seed in (9, 10)}}
DISTILLED = replace(CONFIG, seed=11, attention="luong-general", train_size=40_000, epochs=5)
MORE_EPOCHS = (1, 3)
WORK = Path(__file__).resolve().parents[1] / "runs" / "similarity-calibration"   # bundles kept for --reuse


def train_further(run, epochs: int, seed: int):
    """``run``'s model trained ``epochs`` more epochs on fresh pairs, with a fresh optimizer."""
    import keras

    model = keras.models.clone_model(run.model)
    model.set_weights(run.model.get_weights())
    config = replace(run.config, epochs=epochs, seed=seed)
    batches = translation_batches(sample_pairs(config.train_size, seed, split="train"), run.vocabs,
                                  config.batch_size, shuffle_seed=seed)
    compile_for_training(model, config, batches, metrics=["accuracy"])
    fit(model, batches, batches.take(4), config, verbose=0, description=f"{epochs} more epoch(s)")
    return model


def distill(teacher, config):
    """A model of ``config``'s architecture trained on fresh sources labelled by ``teacher``'s model."""
    from labs.date_translation.model import build_model
    from labs.date_translation.translate import translate
    from labs.common.training import set_seed

    set_seed(config.seed)
    sources = [row["source"] for row in sample_pairs(config.train_size, 200, split="train")]
    labelled = [{"source": s, "target": t.output} for s, t in zip(sources, translate(teacher.model, teacher.vocabs, sources))]
    batches = translation_batches(labelled, teacher.vocabs, config.batch_size, shuffle_seed=config.seed)
    model = build_model(config, len(teacher.vocabs["source"]), len(teacher.vocabs["target"]))
    compile_for_training(model, config, batches, metrics=["accuracy"])
    fit(model, batches, batches.take(4), config, verbose=0, description="a distilled copy")
    return model


def kind(a: str, b: str) -> str:
    copies = {f"seed-1-plus-{n}" for n in MORE_EPOCHS} | {"distilled-from-seed-1"}
    if "seed-1" in (a, b) and {a, b} & copies:
        return "distilled copy (other architecture)" if "distilled-from-seed-1" in (a, b) else "copy trained further"
    if {a, b} <= copies:
        return "two copies of one model"
    return "independent, " + ("other architecture" if "general" in a + b or "distilled" in a + b else
                              "same architecture")


def main() -> None:
    rubric = load_rubric(task="date-translation")
    started = time.perf_counter()
    root, reuse = WORK, "--reuse" in sys.argv[1:]
    subs = root / "submissions"
    seconds = {}
    if not reuse or not subs.is_dir():
        shutil.rmtree(root, ignore_errors=True)
        for name, config in INDEPENDENT.items():
            t = time.perf_counter()
            run = train(config, verbose=0)
            export(run.model, run.vocabs, task=rubric.task, student_id=name, out=subs / f"{name}.zip")
            seconds[name] = round(time.perf_counter() - t, 1)
            print(f"trained {name} in {seconds[name]:.0f} s", flush=True)
            if name == "seed-1":
                original = run
        for epochs in MORE_EPOCHS:
            name = f"seed-1-plus-{epochs}"
            t = time.perf_counter()
            model = train_further(original, epochs, seed=100 + epochs)
            export(model, original.vocabs, task=rubric.task, student_id=name, out=subs / f"{name}.zip")
            seconds[name] = round(time.perf_counter() - t, 1)
            print(f"trained {name} in {seconds[name]:.0f} s", flush=True)
        t = time.perf_counter()
        export(distill(original, DISTILLED), original.vocabs, task=rubric.task, student_id="distilled-from-seed-1",
               out=subs / "distilled-from-seed-1.zip")
        seconds["distilled-from-seed-1"] = round(time.perf_counter() - t, 1)
        print(f"trained distilled-from-seed-1 in {seconds['distilled-from-seed-1']:.0f} s", flush=True)
    (root / "secret.txt").write_text("calibration-secret-0123456789abcdef")
    shutil.rmtree(root / "hidden", ignore_errors=True)
    shutil.rmtree(root / "grades", ignore_errors=True)
    make_hidden_set(rubric.task, root / "secret.txt", root / "hidden")
    records = grade_folder(subs, rubric, root / "hidden", root / "grades", progress=False)
    t = time.perf_counter()
    pairs = similarity.write_similarity(root / "grades", records)
    compare_seconds = time.perf_counter() - t
    scores = {r["student"]: {"score": r["score"], "exact_match": r["metrics"].get("exact_match")} for r in records}
    rows = []
    print(f"\n{'pair':44} {'kind':36} {'ident':>5} {'weights r':>9} {'O':>5} {'E':>7} {'z':>7}  flagged")
    for pair in pairs:
        row = {key: pair[key] for key in similarity.COLUMNS}
        row["kind"] = kind(pair["student_a"], pair["student_b"])
        rows.append(row)
        r = "" if pair["weight_similarity"] is None else f"{pair['weight_similarity']:.3f}"
        print(f"{pair['student_a'] + ' / ' + pair['student_b']:44} {row['kind']:36} {str(pair['identical_weights']):>5} "
              f"{r:>9} {pair['shared_mistakes']:>5} {pair['expected_shared_mistakes']:>7.1f} "
              f"{pair['shared_mistakes_z']:>7.1f}  {pair['flagged']}")
    independent = [r for r in rows if r["kind"].startswith("independent")]
    trained_further = [r for r in rows if r["kind"] == "copy trained further"]
    distilled = next(r for r in rows if r["kind"].startswith("distilled"))
    must_flag = [r for r in rows if r["kind"] in ("copy trained further", "distilled copy (other architecture)")]
    report = {
        "models": scores, "training_seconds": seconds, "pairs": rows,
        "similarity_seconds": round(compare_seconds, 3),
        "largest_independent_weight_similarity": max(r["weight_similarity"] for r in independent),
        "smallest_copy_weight_similarity": min(r["weight_similarity"] for r in trained_further),
        "largest_independent_z": max(r["shared_mistakes_z"] for r in independent),
        "distilled_copy": {key: distilled[key] for key in ("weight_similarity", "shared_mistakes",
                                                           "expected_shared_mistakes", "shared_mistakes_z", "flagged")},
        "thresholds": {"weight_similarity": similarity.WEIGHT_THRESHOLD, "shared_mistakes_z": similarity.MISTAKES_Z},
        "minutes": round((time.perf_counter() - started) / 60, 1),
    }
    checks = {"no independent pair flagged": not any(r["flagged"] for r in independent),
              "every copy of seed 1 flagged": all(r["flagged"] for r in must_flag)}
    print(f"\nindependent: weight similarity at most {report['largest_independent_weight_similarity']:.3f}, z at most "
          f"{report['largest_independent_z']:.1f}; copies trained further: weight similarity at least "
          f"{report['smallest_copy_weight_similarity']:.3f}; the distilled copy: {distilled['shared_mistakes']} shared "
          f"wrong answers, {distilled['expected_shared_mistakes']:.1f} expected, z {distilled['shared_mistakes_z']:.1f}; "
          f"thresholds {report['thresholds']}")
    print(f"checks: {checks}")
    write_results("similarity_calibration", {"config": CONFIG.__dict__, "independent": list(INDEPENDENT),
                                             "more_epochs": list(MORE_EPOCHS)}, report, checks, device_description())


if __name__ == "__main__":
    main()
