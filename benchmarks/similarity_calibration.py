"""Model similarity's calibration: what independently trained lab-2 models look like to each other, and
what a copy trained further, or with its hidden units reordered, looks like to its original.

    python benchmarks/similarity_calibration.py          # ~10 minutes on a 2-core CPU
    python benchmarks/similarity_calibration.py --quick  # the same roster, trained briefly: ~6 minutes
    python benchmarks/similarity_calibration.py --reuse  # grade and compare the bundles of the last run again

Trains lab 2's model (the default architecture, 20,000 pairs, 3 epochs: good, not perfect, so that
it makes mistakes to share) from seeds 1 to 8, and two with another attention (luong-general,
seeds 9 and 10): a class of independent work. Then the copies of seed 1's model: trained 1
and 3 more epochs on fresh pairs (a fresh optimizer, as a student who copies a model would); one
*distilled*: a luong-general model (another architecture, its own seed 11) trained 5 epochs
on 40,000 fresh sources labelled by seed 1's model, the copy that only shared mistakes can see.
(A distilled model that starts from another student's seed shares that student's starting
weights: weight similarity flags that pair, as it should.) These thirteen are the class, and
:mod:`autograder.similarity` compares every pair (78).

And four *reordered* copies of seed 1's model (:func:`reorder`): every hidden unit put in another
order (the embedding dimensions, both encoder LSTMs' units, the decoder LSTM's, the attention's
and W_c's, each permutation applied to a layer's outputs and to the next layer's inputs alike:
the same function), with noise added to every weight: 1e-6 (the attack that hid a copy from
the sampled positions alone), 1e-3 (outputs still near the original's), 1e-2 (about a tenth of the
weights' typical size, which changes the outputs: reported, not checked), and 1e-6 followed by
one more epoch of training (reordered *and* retrained, out of the weights' reach: reported, not
checked). Each is compared with each model of the class on its own: four copies of one model
in the class would skew what shared mistakes expect of every other pair.

All seventeen are exported as bundles and graded together against a 1,000-pair hidden set
(``similarity.csv`` holds the batch as grading compares it). ``--quick`` trains each model on
16,000 pairs for 2 epochs (all but the distilled copy, trained as in the full run): about 57 %
exact match instead of 85 %, so that the whole run takes minutes; it writes its results to the
work folder, not to ``benchmarks/results/``.

Reported per pair: identical weights, weight similarity, shared mistakes (observed, expected for
independent models, z), flagged, and the kind of pair; for each reordered copy, how far its
outputs are from the original's. Checks: no independent pair is flagged; every copy of seed 1 is
(against seed 1), but for the two reported only; and the margins: the largest independent weight
similarity against :data:`autograder.similarity.WEIGHT_THRESHOLD`, the smallest of a copy
trained further and of a reordered copy; the largest independent z (within the class) against
:data:`autograder.similarity.MISTAKES_Z`, the distilled copy's.

Prints a table; writes benchmarks/results/similarity_calibration.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from results_file import write_results  # noqa: E402

from autograder import similarity  # noqa: E402
from autograder.batch import grade_folder  # noqa: E402
from autograder.hidden import make_hidden_set  # noqa: E402
from autograder.rubric import load_rubric  # noqa: E402
from labs.common.pipeline import translation_arrays, translation_batches  # noqa: E402
from labs.common.submission import export  # noqa: E402
from labs.common.training import compile_for_training, device_description, fit  # noqa: E402
from labs.date_translation.config import DateTranslationConfig  # noqa: E402
from labs.date_translation.data import sample_pairs  # noqa: E402
from labs.date_translation.train import train  # noqa: E402

CONFIG = DateTranslationConfig(train_size=20_000, epochs=3)
QUICK = {"train_size": 16_000, "epochs": 2}  # --quick: every model trained briefly
INDEPENDENT = {
    "seed-1": CONFIG,
    **{f"seed-{seed}": replace(CONFIG, seed=seed) for seed in range(2, 9)},
    **{f"general-seed-{seed}": replace(CONFIG, seed=seed, attention="luong-general") for seed in (9, 10)},
}
DISTILLED = replace(CONFIG, seed=11, attention="luong-general", train_size=40_000, epochs=5)
MORE_EPOCHS = (1, 3)
REORDERED = {
    "seed-1-reordered": 1e-6,
    "seed-1-reordered-noisy": 1e-3,  # name: the noise added to every weight
    "seed-1-reordered-noisier": 1e-2,
}  # (this much changes the outputs: not checked)
RETRAINED = "seed-1-reordered-retrained"  # reordered (1e-6), then one more epoch
COPIES = {
    **{f"seed-1-plus-{n}": "copy trained further" for n in MORE_EPOCHS},
    "distilled-from-seed-1": "distilled copy (other architecture)",
    **{
        name: "reordered copy" if noise <= 1e-3 else "reordered copy, noisier (not checked)"
        for name, noise in REORDERED.items()
    },
    RETRAINED: "reordered copy, retrained (not checked)",
}
MUST_FLAG = ("copy trained further", "distilled copy (other architecture)", "reordered copy")
WORK = Path(__file__).resolve().parents[1] / "runs" / "similarity-calibration"  # bundles kept for --reuse


def train_further(run, epochs: int, seed: int, model=None):
    """``run``'s model (or ``model``, of the same architecture) trained ``epochs`` more epochs on fresh pairs,
    with a fresh optimizer."""
    import keras

    source = run.model if model is None else model
    model = keras.models.clone_model(source)
    model.set_weights(source.get_weights())
    config = replace(run.config, epochs=epochs, seed=seed)
    batches = translation_batches(
        sample_pairs(config.train_size, seed, split="train"), run.vocabs, config.batch_size, shuffle_seed=seed
    )
    compile_for_training(model, config, batches, metrics=["accuracy"])
    fit(model, batches, batches.take(4), config, verbose=0, description=f"{epochs} more epoch(s)")
    return model


def distill(teacher, config):
    """A model of ``config``'s architecture trained on fresh sources labelled by ``teacher``'s model."""
    from labs.common.training import set_seed
    from labs.date_translation.model import build_model
    from labs.date_translation.translate import translate

    set_seed(config.seed)
    sources = [row["source"] for row in sample_pairs(config.train_size, 200, split="train")]
    labelled = [
        {"source": s, "target": t.output}
        for s, t in zip(sources, translate(teacher.model, teacher.vocabs, sources))
    ]
    batches = translation_batches(labelled, teacher.vocabs, config.batch_size, shuffle_seed=config.seed)
    model = build_model(config, len(teacher.vocabs["source"]), len(teacher.vocabs["target"]))
    compile_for_training(model, config, batches, metrics=["accuracy"])
    fit(model, batches, batches.take(4), config, verbose=0, description="a distilled copy")
    return model


def reorder(model, noise: float, seed: int):
    """``model`` (lab 2's default: luong-additive attention, LSTM decoder) with every hidden unit in another
    order and ``noise`` (a standard deviation) added to every weight: the same function, other arrays.

    Each permutation reorders a layer's units and, alike, the inputs of what reads them: the embeddings'
    dimensions (and the LSTM kernels' rows that read them); each encoder direction's units (within each of an
    LSTM's four gates); the decoder's units, which start from the encoder's final states and so follow their
    order; the attention's units (``U_a``, ``W_a`` and the score's ``scale``); ``W_c``'s units (and ``W_o``'s
    rows)."""
    import keras

    rng = np.random.default_rng(seed)
    w = {_variable(v.path): v.numpy() for v in model.weights}
    units = w["forward_lstm/lstm_cell/recurrent_kernel"].shape[0]  # u per encoder direction

    def gates(order):  # the same order in i, f, c, o
        return np.concatenate([g * len(order) + order for g in range(4)])

    source_dims = rng.permutation(w["source_embedding/embeddings"].shape[1])
    target_dims = rng.permutation(w["target_embedding/embeddings"].shape[1])
    forward, backward = rng.permutation(units), rng.permutation(units)
    h = np.concatenate([forward, units + backward])  # h_j = [forward; backward]
    scores, combined = rng.permutation(w["attention/scale"].shape[0]), rng.permutation(2 * units)
    new = {
        "source_embedding/embeddings": w["source_embedding/embeddings"][:, source_dims],
        "target_embedding/embeddings": w["target_embedding/embeddings"][:, target_dims],
        "U_a/kernel": w["U_a/kernel"][h][:, scores],
        "W_a/kernel": w["W_a/kernel"][h][:, scores],
        "attention/scale": w["attention/scale"][scores],
        "W_c/kernel": w["W_c/kernel"][np.concatenate([h, 2 * units + h])][:, combined],  # [s_t; c_t] -> W_c
        "W_c/bias": w["W_c/bias"][combined],
        "W_o/kernel": w["W_o/kernel"][combined],
        "W_o/bias": w["W_o/bias"],
    }
    for cell, order, inputs in (
        ("forward_lstm", forward, source_dims),
        ("backward_lstm", backward, source_dims),
        ("decoder_lstm", h, target_dims),
    ):
        new[f"{cell}/lstm_cell/kernel"] = w[f"{cell}/lstm_cell/kernel"][inputs][:, gates(order)]
        new[f"{cell}/lstm_cell/recurrent_kernel"] = w[f"{cell}/lstm_cell/recurrent_kernel"][order][
            :, gates(order)
        ]
        new[f"{cell}/lstm_cell/bias"] = w[f"{cell}/lstm_cell/bias"][gates(order)]
    if set(new) != set(w):
        raise ValueError(f"reorder knows lab 2's default model; this one has {sorted(set(w) - set(new))}")
    copy = keras.models.clone_model(model)
    for variable in copy.weights:
        value = new[_variable(variable.path)]
        variable.assign(value + rng.normal(0.0, noise, value.shape).astype(value.dtype))
    return copy


def _variable(path: str) -> str:
    """A variable's path without what Keras adds to tell apart models built in one process: 'forward_lstm/...'
    for 'bilstm/forward_lstm_1/...'."""
    return re.sub(r"_\d+(?=/)", "", path.removeprefix("bilstm/"))


def output_difference(a, b, vocabs) -> float:
    """The largest difference between two models' next-character probabilities on 256 fresh pairs."""
    source, target_in, _ = translation_arrays(sample_pairs(256, 300, split="train"), vocabs)
    return float(
        np.abs(a.predict([source, target_in], verbose=0) - b.predict([source, target_in], verbose=0)).max()
    )


def kind(a: str, b: str) -> str:
    if "seed-1" in (a, b) and {a, b} & set(COPIES):
        return COPIES[b if a == "seed-1" else a]
    if {a, b} <= set(COPIES):
        return "two copies of one model"
    return "independent, " + (
        "other architecture" if "general" in a + b or "distilled" in a + b else "same architecture"
    )


def train_class(subs: Path, rubric, quick: bool) -> tuple[dict, dict]:
    """Train and export every model of the roster into ``subs``; return the seconds each took and, per
    reordered copy, the noise added and how far its outputs are from the original's."""
    seconds, reordered, runs = {}, {}, {}

    def timed(name: str, make):
        t = time.perf_counter()
        model, vocabs = make()
        export(model, vocabs, task=rubric.task, student_id=name, out=subs / f"{name}.zip")
        seconds[name] = round(time.perf_counter() - t, 1)
        print(f"trained {name} in {seconds[name]:.0f} s", flush=True)
        return model

    def independent(name: str, config):
        runs[name] = train(replace(config, **QUICK) if quick else config, verbose=0)
        return runs[name].model, runs[name].vocabs

    for name, config in INDEPENDENT.items():
        timed(name, lambda: independent(name, config))
    original = runs["seed-1"]
    for epochs in MORE_EPOCHS:
        timed(
            f"seed-1-plus-{epochs}",
            lambda: (train_further(original, epochs, seed=100 + epochs), original.vocabs),
        )
    timed("distilled-from-seed-1", lambda: (distill(original, DISTILLED), original.vocabs))
    for k, (name, noise) in enumerate(REORDERED.items()):
        copy = timed(name, lambda: (reorder(original.model, noise, seed=200 + k), original.vocabs))
        reordered[name] = {
            "noise": noise,
            "largest_output_difference": output_difference(copy, original.model, original.vocabs),
        }
    timed(
        RETRAINED,
        lambda: (
            train_further(original, 1, seed=104, model=reorder(original.model, 1e-6, seed=210)),
            original.vocabs,
        ),
    )
    return seconds, reordered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="train every model briefly (minutes, not the figures of record: results go to the work folder)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="grade and compare the bundles of the last run again"
    )
    parser.add_argument(
        "--work", type=Path, default=WORK, help=f"where the bundles and grades go (default {WORK})"
    )
    args = parser.parse_args()
    rubric = load_rubric(task="date-translation")
    started = time.perf_counter()
    root = args.work
    subs = root / "submissions"
    if not args.reuse or not subs.is_dir():
        shutil.rmtree(root, ignore_errors=True)
        seconds, reordered = train_class(subs, rubric, args.quick)
        (root / "training.json").write_text(
            json.dumps({"seconds": seconds, "reordered": reordered}, indent=2)
        )
    else:
        kept = json.loads((root / "training.json").read_text())
        seconds, reordered = kept["seconds"], kept["reordered"]
    shutil.rmtree(root / "grades", ignore_errors=True)
    shutil.rmtree(
        root / "hidden", ignore_errors=True
    )  # where earlier runs kept them, before the grader refused
    (root / "secret.txt").unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(
        prefix="attention-lab-calibration-"
    ) as private:  # outside the kit: grade
        secret = Path(private) / "secret.txt"  # refuses a kit holding them
        secret.write_text("calibration-secret-0123456789abcdef")
        make_hidden_set(rubric.task, secret, Path(private) / "hidden")
        records = grade_folder(subs, rubric, Path(private) / "hidden", root / "grades", progress=False)
    t = time.perf_counter()
    similarity.write_similarity(root / "grades", records)  # the whole batch, as grading compares it
    compare_seconds = time.perf_counter() - t
    # Shared mistakes read the rest of the class as independent work: four exact copies of one model in it
    # would skew that for every other pair. So the class is compared without the reordered copies, and each
    # reordered copy with each model of the class on its own (weights are compared pair by pair anyway).
    evidence = similarity.load_evidence(root / "grades", records)
    roster = [e for e in evidence if e.student not in REORDERED and e.student != RETRAINED]
    pairs = similarity.compare(roster) + [
        similarity.compare([copy, other])[0] for copy in evidence if copy not in roster for other in roster
    ]
    scores = {
        r["student"]: {"score": r["score"], "exact_match": r["metrics"].get("exact_match")} for r in records
    }
    rows = []
    print(f"\n{'pair':50} {'kind':40} {'ident':>5} {'weights r':>9} {'O':>5} {'E':>7} {'z':>7}  flagged")
    for pair in pairs:
        row = {key: pair[key] for key in similarity.COLUMNS}
        row["kind"] = kind(pair["student_a"], pair["student_b"])
        rows.append(row)
        r = "" if pair["weight_similarity"] is None else f"{pair['weight_similarity']:.3f}"
        print(
            f"{pair['student_a'] + ' / ' + pair['student_b']:50} {row['kind']:40} "
            f"{str(pair['identical_weights']):>5} {r:>9} {pair['shared_mistakes']:>5} "
            f"{pair['expected_shared_mistakes']:>7.1f} {pair['shared_mistakes_z']:>7.1f}  {pair['flagged']}"
        )
    independent = [r for r in rows if r["kind"].startswith("independent")]
    trained_further = [r for r in rows if r["kind"] == "copy trained further"]
    distilled = next(r for r in rows if r["kind"].startswith("distilled"))
    against_original = {
        r["student_b"] if r["student_a"] == "seed-1" else r["student_a"]: r
        for r in rows
        if "seed-1" in (r["student_a"], r["student_b"]) and r["kind"] in COPIES.values()
    }
    for name, copy in reordered.items():
        copy.update(
            {
                key: against_original[name][key]
                for key in ("identical_weights", "weight_similarity", "flagged")
            }
        )
    retrained = {key: against_original[RETRAINED][key] for key in ("weight_similarity", "flagged")}
    must_flag = [r for r in rows if r["kind"] in MUST_FLAG]
    report = {
        "models": scores,
        "training_seconds": seconds,
        "pairs": rows,
        "similarity_seconds": round(compare_seconds, 3),
        "largest_independent_weight_similarity": max(r["weight_similarity"] for r in independent),
        "smallest_copy_weight_similarity": min(r["weight_similarity"] for r in trained_further),
        "smallest_reordered_weight_similarity": min(
            against_original[name]["weight_similarity"]
            for name in REORDERED
            if COPIES[name] == "reordered copy"
        ),
        "reordered_copies": reordered,
        "reordered_and_retrained": retrained,
        "largest_independent_z": max(
            r["shared_mistakes_z"]
            for r in independent  # within the class
            if {r["student_a"], r["student_b"]} <= {e.student for e in roster}
        ),
        "distilled_copy": {
            key: distilled[key]
            for key in (
                "weight_similarity",
                "shared_mistakes",
                "expected_shared_mistakes",
                "shared_mistakes_z",
                "flagged",
            )
        },
        "thresholds": {
            "weight_similarity": similarity.WEIGHT_THRESHOLD,
            "shared_mistakes_z": similarity.MISTAKES_Z,
        },
        "minutes": round((time.perf_counter() - started) / 60, 1),
    }
    checks = {
        "no independent pair flagged": not any(r["flagged"] for r in independent),
        "every copy of seed 1 flagged": all(r["flagged"] for r in must_flag),
    }
    print(
        f"\nindependent: weight similarity at most {report['largest_independent_weight_similarity']:.3f}, z "
        f"at most "
        f"{report['largest_independent_z']:.1f}; copies trained further: weight similarity at least "
        f"{report['smallest_copy_weight_similarity']:.3f}; reordered copies: "
        + ", ".join(
            f"{name} (noise {c['noise']:g}, outputs within {c['largest_output_difference']:.1e}) "
            f"{c['weight_similarity']:.3f}"
            for name, c in reordered.items()
        )
        + f"; reordered and retrained: {retrained['weight_similarity']:.3f} (flagged: "
        f"{retrained['flagged']}); "
        f"the distilled copy: {distilled['shared_mistakes']} shared wrong answers, "
        f"{distilled['expected_shared_mistakes']:.1f} expected, z {distilled['shared_mistakes_z']:.1f}; "
        f"thresholds {report['thresholds']}"
    )
    print(f"checks: {checks}")
    config = {
        "config": replace(CONFIG, **QUICK).__dict__ if args.quick else CONFIG.__dict__,
        "independent": list(INDEPENDENT),
        "more_epochs": list(MORE_EPOCHS),
        "reordered": REORDERED,
    }
    if args.quick:  # not the figures of record
        out = root / "similarity_calibration.json"
        out.write_text(
            json.dumps(
                {
                    "benchmark": "similarity_calibration",
                    "config": config,
                    "report": report,
                    "checks": checks,
                    "machine": device_description(),
                    "command": "python benchmarks/similarity_calibration.py --quick",
                },
                indent=2,
                default=float,
            )
            + "\n"
        )
        print(f"wrote {out}")
    else:
        write_results("similarity_calibration", config, report, checks, device_description())


if __name__ == "__main__":
    main()
