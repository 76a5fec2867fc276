"""Model similarity (autograder.similarity): copies are flagged, independent models are not, and nothing of it
reaches a student."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from autograder import similarity
from autograder.claims import check_weights
from autograder.similarity import Evidence, SharedMistakes, compare, weight_similarity
from autograder.weights import (
    MAX_MATRICES,
    Matrix,
    block_shape,
    fingerprint,
    matrices,
    pack,
    sample_positions,
)
from tests.conftest import REPO_ROOT, without_feedback_examples


def _similarity_rows(grades: Path) -> dict[frozenset, dict]:
    with open(grades / "similarity.csv", encoding="utf-8", newline="") as handle:
        return {frozenset((row["student_a"], row["student_b"])): row for row in csv.DictReader(handle)}


# ---- the measures, on arrays and answers made here ----


def test_the_fingerprint_ignores_names_order_and_hidden_unit_order_but_not_values():
    rng = np.random.default_rng(0)
    kernel, recurrent, bias = rng.normal(size=(8, 16)), rng.normal(size=(16, 16)), np.zeros(16)
    permutation = rng.permutation(16)
    same = fingerprint([kernel, recurrent, bias])
    assert fingerprint([bias, recurrent, kernel]) == same  # another layer order
    assert fingerprint([kernel[:, permutation], recurrent[permutation][:, permutation], bias]) == same
    assert (
        fingerprint([kernel.astype(np.float64), recurrent, -0.0 * np.ones(16)]) == same
    )  # file's dtype, -0.0
    nudged = kernel.copy()
    nudged[3, 4] += 1e-3
    assert fingerprint([nudged, recurrent, bias]) != same
    assert fingerprint([kernel, recurrent]) != same


def _evidence(name: str, arrays: list[np.ndarray], answers: list[str] = (), right=()) -> Evidence:
    kept = [Matrix.from_json(m) for m in matrices(arrays)]  # as the grader reads the reader's answer
    return Evidence(
        name,
        fingerprint(arrays) if arrays else None,
        kept,
        [str(i) for i in range(len(answers))],
        list(answers),
        np.asarray(right, dtype=bool),
    )


def test_weight_similarity_is_near_one_for_a_nudged_copy_near_zero_for_another_draw_and_none_without_shared_shapes():
    rng = np.random.default_rng(1)
    model = [rng.normal(size=(32, 64)), rng.normal(size=(64, 64)), rng.normal(size=(64, 10)), np.zeros(10)]
    nudged = [a + 0.3 * rng.normal(size=a.shape) for a in model]
    other = [rng.normal(size=a.shape) for a in model]
    wider = [rng.normal(size=(32, 96)), rng.normal(size=(96, 96)), rng.normal(size=(96, 10)), np.zeros(10)]
    a, b, c, d = (_evidence(n, m) for n, m in zip("abcd", (model, nudged, other, wider)))
    assert weight_similarity(a, b)[0] > 0.9 and weight_similarity(a, b)[1] == 3
    assert abs(weight_similarity(a, c)[0]) < 0.2
    assert weight_similarity(a, d) == (None, 0)


def test_weight_similarity_survives_sign_flips_and_an_added_layer():
    rng = np.random.default_rng(2)
    model = [rng.normal(size=(32, 64)), rng.normal(size=(64, 64)), rng.normal(size=(64, 10))]
    flipped = [-model[0], model[1], -model[2]]  # the same function, other signs
    grown = [*model, rng.normal(size=(10, 10))]  # a layer added on top
    a, b, c = (_evidence(n, m) for n, m in zip("abc", (model, flipped, grown)))
    assert weight_similarity(a, b)[0] > 0.99
    assert weight_similarity(a, c) == (1.0, 3)
    pairs = compare([a, c])
    assert (
        pairs[0]["flagged"]
        and pairs[0]["architecture"] == "different"
        and "near-identical" in pairs[0]["why"]
    )


# ---- a copy with its hidden units reordered ----


def _small_model(seed: int):
    """A small random Keras model: characters -> embedding (16) -> LSTM (32) -> tanh layer (32) -> 10
    scores."""
    import keras

    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(40, 16),
            keras.layers.LSTM(32),
            keras.layers.Dense(32, activation="tanh"),
            keras.layers.Dense(10),
        ]
    )


def _reordered(model, seed: int, noise: float = 1e-6):
    """``model``'s function with its hidden units in another order, plus ``noise``: each permutation reorders
    one layer's units (its kernel's columns, its bias; an LSTM's four gates alike) and the next layer's
    inputs."""
    import keras

    rng = np.random.default_rng(seed)
    embedding, kernel, recurrent, bias, hidden, hidden_bias, out, out_bias = model.get_weights()
    e, h, d = rng.permutation(16), rng.permutation(32), rng.permutation(32)  # embedding, LSTM and tanh units
    gates = np.concatenate([g * 32 + h for g in range(4)])  # h within each of i, f, c, o
    weights = [
        embedding[:, e],
        kernel[e][:, gates],
        recurrent[h][:, gates],
        bias[gates],
        hidden[h][:, d],
        hidden_bias[d],
        out[d],
        out_bias,
    ]
    copy = keras.models.clone_model(model)
    copy.set_weights([w + noise * rng.standard_normal(w.shape).astype(w.dtype) for w in weights])
    return copy


def _read_back(model, path: Path) -> dict:
    """What the grader has of ``model`` saved: the weights reader's answer, through JSON, checked."""
    from autograder.weights import read

    model.save(path)
    return check_weights(json.loads(json.dumps(read(str(path)))))


def test_a_copy_with_its_hidden_units_reordered_is_flagged_near_identical_and_other_seeds_are_not(tmp_path):
    models = {"original": _small_model(0), "other-1": _small_model(1), "other-2": _small_model(2)}
    models["copy"] = _reordered(models["original"], seed=3)
    inputs = np.random.default_rng(0).integers(1, 40, size=(8, 12))
    outputs = {name: model.predict(inputs, verbose=0) for name, model in models.items()}
    assert np.abs(outputs["copy"] - outputs["original"]).max() < 1e-4  # the same function
    in_memory = [_evidence(name, model.get_weights()) for name, model in models.items()]
    read_back = []
    for name, model in models.items():
        weights = _read_back(model, tmp_path / f"{name}.keras")
        read_back.append(
            Evidence(name, weights["fingerprint"], weights["matrices"], [], [], np.zeros(0, dtype=bool))
        )
    for evidence in (in_memory, read_back):
        pairs = {frozenset((p["student_a"], p["student_b"])): p for p in compare(evidence)}
        copied = pairs.pop(frozenset(("original", "copy")))
        assert copied["flagged"] and not copied["identical_weights"] and "near-identical" in copied["why"]
        assert copied["weight_similarity"] > 0.99 and copied["matrices_compared"] == 5
        assert not any(p["flagged"] for p in pairs.values())
        assert max(p["weight_similarity"] for p in pairs.values()) < similarity.WEIGHT_THRESHOLD / 2


def test_the_evidence_files_keep_what_aligns_hidden_units(tmp_path):
    models = {"original": _small_model(0), "other": _small_model(1)}
    models["copy"] = _reordered(models["original"], seed=4)
    records = []
    for name, model in models.items():
        records.append({"student": name, "bundle_sha256": name * 8, "status": "graded", "parameters": 1})
        similarity.save_evidence(tmp_path, records[-1], _read_back(model, tmp_path / f"{name}.keras"), None)
    assert (
        max(similarity.evidence_path(tmp_path, name).stat().st_size for name in models) < 50_000
    )  # 5 matrices
    similarity.write_similarity(tmp_path, records)
    rows = _similarity_rows(tmp_path)
    assert rows[frozenset(("original", "copy"))]["flagged"] == "yes"
    assert "near-identical" in rows[frozenset(("original", "copy"))]["why"]
    assert (
        rows[frozenset(("original", "other"))]["flagged"]
        == rows[frozenset(("copy", "other"))]["flagged"]
        == "no"
    )


def test_evidence_kept_by_an_older_grader_is_not_compared_on_weights_but_its_answers_are(tmp_path):
    weights = [np.random.default_rng(0).normal(size=(32, 64))]
    answers = {"items": ["a", "b"], "answers": ["x", "y"], "right": [True, False]}
    records = [
        {"student": name, "bundle_sha256": name * 8, "status": "graded", "parameters": 2048}
        for name in ("new", "old")
    ]
    similarity.save_evidence(
        tmp_path,
        records[0],
        {"fingerprint": fingerprint(weights), "matrices": [Matrix.of(weights[0])]},
        answers,
    )
    sample = weights[0].ravel()[sample_positions((32, 64))]
    (tmp_path / "similarity" / "old.json").write_text(
        json.dumps(
            {  # as the grader before EVIDENCE_FORMAT wrote it
                "student": "old",
                "bundle_sha256": "old" * 8,
                "fingerprint": fingerprint(weights),
                "matrices": [{"shape": [32, 64], "sample": pack(sample)}],
                **answers,
            }
        )
    )
    pair = similarity.write_similarity(tmp_path, records)[0]
    assert (
        pair["identical_weights"] is None
        and pair["weight_similarity"] is None
        and pair["shared_mistakes"] == 1
    )
    row = _similarity_rows(tmp_path)[frozenset(("new", "old"))]
    assert row["flagged"] == "not compared" and "weights of old kept by an older grader" in row["why"]


def test_matrices_are_sampled_at_the_same_positions_for_the_same_shape():
    assert np.array_equal(sample_positions((300, 40)), sample_positions((300, 40)))
    assert len(sample_positions((300, 40))) == 512 and len(sample_positions((10, 10))) == 100
    assert matrices([np.zeros((4, 4)), np.zeros(100)]) == []  # too small, and not a matrix


def _class(n_models: int, n_items: int, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Independent models: each errs on items by their difficulty, picking among a few plausible wrong
    answers."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(0.5, 4, size=n_items)
    skill = rng.uniform(0.5, 1.5, size=n_models)
    right = [rng.random(n_items) > np.clip(difficulty * s, 0, 1) for s in skill]
    answers = [
        np.where(r, "ok", np.char.add("wrong-", rng.integers(0, 3, size=n_items).astype(str))) for r in right
    ]
    return answers, right


def test_independent_models_share_no_more_mistakes_than_the_class_predicts():
    answers, right = _class(20, 1000)
    models = [_evidence(f"s{k}", [], list(a), r) for k, (a, r) in enumerate(zip(answers, right))]
    pairs = compare(models)
    assert len(pairs) == 190 and not any(p["flagged"] for p in pairs)
    assert max(p["shared_mistakes_z"] for p in pairs) < similarity.MISTAKES_Z


def test_a_model_that_copies_anothers_answers_is_flagged_by_its_shared_mistakes():
    answers, right = _class(21, 1000)
    changed = np.random.default_rng(5).random(1000) < 0.3  # a third of its answers its own (model 20's)
    copied = np.where(changed, answers[20], answers[0])
    models = [_evidence(f"s{k}", [], list(a), r) for k, (a, r) in enumerate(zip(answers[:20], right[:20]))]
    models.append(_evidence("copy", [], list(copied), np.where(changed, right[20], right[0])))
    flagged = [p for p in compare(models) if p["flagged"]]
    assert [(p["student_a"], p["student_b"]) for p in flagged] == [("s0", "copy")]
    assert (
        "identical wrong answers" in flagged[0]["why"] and len(flagged[0]["examples"]) == similarity.EXAMPLES
    )


@pytest.mark.parametrize("n_models", [2, 3, 5])
def test_a_small_batch_of_independent_models_with_a_common_wrong_answer_is_not_flagged(n_models):
    rng = np.random.default_rng(n_models)
    common = rng.random(2000) < 0.15  # items where most models give the same wrong answer
    models = []
    for k in range(n_models):
        right = ~(common & (rng.random(2000) < 0.9)) & (rng.random(2000) > 0.02)
        answers = np.where(
            right, "ok", np.where(common, "the usual mistake", rng.integers(0, 50, 2000).astype(str))
        )
        models.append(_evidence(f"s{k}", [], list(answers), right))
    pairs = compare(models)
    assert not any(p["flagged"] for p in pairs)
    assert all(p["shared_mistakes"] > 100 for p in pairs)  # they do share many: the figures are reported


def test_shared_mistakes_leave_the_pair_out_of_what_the_class_predicts():
    answers, right = _class(6, 400, seed=3)
    mistakes = SharedMistakes(
        [_evidence(f"s{k}", [], list(a), r) for k, (a, r) in enumerate(zip(answers, right))]
    )
    # By hand, for s0 and s1: the others' wrong answers per item, and their pairs that agree.
    others = [2, 3, 4, 5]
    agree = pairs_ = 0
    for i in range(400):
        wrong = [answers[m][i] for m in others if not right[m][i]]
        agree += sum(wrong.count(w) * (wrong.count(w) - 1) / 2 for w in set(wrong))
        pairs_ += len(wrong) * (len(wrong) - 1) / 2
    result = mistakes.compare("s0", "s1")
    assert result["observed"] == sum(
        1 for i in range(400) if not right[0][i] and not right[1][i] and answers[0][i] == answers[1][i]
    )
    wrong, agree_ = mistakes.wrong, mistakes.agree
    w_o = mistakes.wrong_count - wrong[0] - wrong[1]
    s_o = (
        mistakes.agreeing_pairs
        - wrong[0] * (agree_[0] - 1)
        - wrong[1] * (agree_[1] - 1 - (wrong[0] & wrong[1] & (mistakes.answer[0] == mistakes.answer[1])))
    )
    assert s_o.sum() == agree and (w_o * (w_o - 1) / 2).sum() == pairs_


# ---- what the weights reader says is checked ----


def _keras_file(path: Path, extra=None) -> Path:
    """A small saved model; ``extra(h5file)`` adds to its weights file what a hostile student might."""

    import h5py
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(16, name="one"), keras.layers.Dense(3, name="two")]
    )
    model.save(path)
    if extra is not None:
        with zipfile.ZipFile(path) as archive:
            files = {name: archive.read(name) for name in archive.namelist()}
        buffer = io.BytesIO(files["model.weights.h5"])
        with h5py.File(buffer, "a") as weights:
            extra(weights)
        files["model.weights.h5"] = buffer.getvalue()
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in files.items():
                archive.writestr(name, data)
    return path


def test_a_dataset_that_is_not_numbers_neither_hides_the_fingerprint_nor_the_count(tmp_path):
    from autograder.weights import read

    plain = read(str(_keras_file(tmp_path / "plain.keras")))
    noted = read(str(_keras_file(tmp_path / "noted.keras", lambda w: w.create_dataset("note", data="hello"))))
    # the 5 bytes of "hello" count as the two 4-byte numbers they would fill (data beside the model's numbers)
    assert plain["parameters"] == 4 * 16 + 16 + 16 * 3 + 3 and noted["parameters"] == plain["parameters"] + 2
    text = read(
        str(_keras_file(tmp_path / "text.keras", lambda w: w.create_dataset("text", data="x" * 400_000)))
    )
    assert text["parameters"] == plain["parameters"] + 100_000  # a string's length, not its 8-byte reference
    assert noted["fingerprint"] == plain["fingerprint"] is not None and len(noted["matrices"]) == 1


def test_a_dataset_of_huge_sub_arrays_is_counted_not_read(tmp_path):
    from autograder.weights import MAX_READ, read

    def hide(weights):  # two elements on paper, each of 30 million floats: compressed, it is a small file
        weights.create_dataset(
            "hidden", shape=(2,), dtype=np.dtype((np.float32, (30_000_000,))), compression="gzip"
        )

    answer = read(str(_keras_file(tmp_path / "hidden.keras", hide)))
    assert answer["parameters"] > MAX_READ and answer["parameters"] >= 60_000_000
    assert answer["fingerprint"] is None and answer["matrices"] == []


@pytest.mark.parametrize(
    "answer",
    [
        {"parameters": 10, "fingerprint": "not hex", "matrices": []},
        {
            "parameters": 10,
            "fingerprint": None,
            "matrices": [{"shape": [8, 8], "sample": "AAAA"}],
        },  # too short
        {
            "parameters": 10,
            "fingerprint": None,
            "matrices": [{"shape": [8, 8], "sample": pack(np.full(64, np.nan))}],
        },
        {"parameters": 10, "fingerprint": None, "matrices": [{"shape": [2**40, 8], "sample": ""}]},
        {"parameters": True, "fingerprint": None, "matrices": "many"},
    ],
)
def test_a_weights_answer_of_the_wrong_shape_is_dropped(answer):
    checked = check_weights(answer)
    assert checked["matrices"] == [] and checked["fingerprint"] is None
    assert checked["parameters"] in (None, 10)


def _answer_with(**change) -> dict:
    """The reader's answer for one (32, 64) matrix and one (64, 10), the second's entry changed by
    ``change``."""
    rng = np.random.default_rng(0)
    first, second = matrices([rng.normal(size=(32, 64)), rng.normal(size=(64, 10))])
    return {"parameters": 2688, "fingerprint": None, "matrices": [first, {**second, **change}]}


def test_a_weights_answer_of_the_expected_shape_is_kept_whole():
    checked = check_weights(_answer_with())
    assert [m.shape for m in checked["matrices"]] == [(32, 64), (64, 10)]
    second = checked["matrices"][1]
    assert second.block.shape == block_shape((64, 10)) == (51, 10)  # 51 rows of all 10 columns
    assert second.rows.shape == (51, 8) and second.columns.shape == (10, 8)


@pytest.mark.parametrize(
    "change",
    [
        {"block": pack(np.zeros(10))},  # too few values for a (64, 10) matrix's block
        {"rows": pack(np.full(51 * 8, np.nan))},  # not finite
        {"columns": None},  # missing
        {"columns": 12},  # not text
        {"block": "not base64!"},
        {"shape": [64, 12]},  # the parts of another shape
        {"rows": pack(np.zeros(51 * 8 + 1))},  # one value more than the shape's profiles
    ],
)
def test_a_matrix_whose_block_or_profiles_are_of_the_wrong_shape_is_dropped_with_the_others(change):
    checked = check_weights(_answer_with(**change))
    assert checked["matrices"] == [] and checked["parameters"] == 2688


def test_the_readers_largest_answer_is_kept_whole_and_fits_what_the_sandbox_reads_back():
    from autograder.sandbox import MAX_WEIGHTS_ANSWER_BYTES

    def kept(shape):  # values kept of a matrix of this shape
        (r, c), rows = block_shape(shape), math.prod(shape[:-1])
        return min(512, math.prod(shape)) + r * c + r * min(8, shape[-1]) + c * min(8, rows)

    worst = max(
        (
            (rows, columns)
            for rows in range(1, 600, 3)
            for columns in range(1, 600, 3)
            if rows * columns >= 64
        ),
        key=kept,
    )
    answer = {
        "parameters": 1,
        "fingerprint": "0" * 64,
        "matrices": matrices([np.ones(worst, dtype=np.float32)] * (MAX_MATRICES + 5)),
    }
    assert len(answer["matrices"]) == MAX_MATRICES and len(json.dumps(answer)) < MAX_WEIGHTS_ANSWER_BYTES
    kept = check_weights(answer)["matrices"]
    assert len(kept) == MAX_MATRICES and all(m.block.shape == block_shape(worst) for m in kept)


# ---- real models, graded as a batch ----


def _train(seed: int, epochs: int = 2):
    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.train import train

    return train(DateTranslationConfig.tiny(seed=seed, epochs=epochs), verbose=0)


def _one_more_epoch(run):
    import keras

    from labs.common.pipeline import translation_batches
    from labs.common.training import compile_for_training, fit
    from labs.date_translation.data import sample_pairs

    model = keras.models.clone_model(run.model)
    model.set_weights(run.model.get_weights())
    config = replace(run.config, epochs=1, seed=99)
    batches = translation_batches(
        sample_pairs(config.train_size, 99, split="train"), run.vocabs, config.batch_size, shuffle_seed=99
    )
    compile_for_training(model, config, batches)
    fit(model, batches, batches.take(1), config, verbose=0, description="one more epoch")
    return model


def _with_unreadable_weights(bundle: Path, out: Path) -> Path:
    """A copy of ``bundle`` whose weights file declares a dataset of 2**64 values that Keras never loads: the
    model runs as before, the weights reader gives up (no count, no fingerprint, no matrices)."""
    from tests.test_autograder import _with_weights

    return _with_weights(
        bundle,
        out,
        lambda h5: h5.create_dataset("layers/extra", shape=(2**40, 2**24), dtype="f4", chunks=(1, 16)),
    )


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Five lab-2 bundles: a model, the same file under another id, that model one more epoch, another seed,
    and the first model with its weights made unreadable."""
    from autograder.batch import grade_folder
    from autograder.hidden import make_hidden_set
    from autograder.rubric import load_rubric
    from labs.common.submission import export

    root = tmp_path_factory.mktemp("similarity")
    subs = root / "submissions"
    first, second = _train(1), _train(2)
    export(first.model, first.vocabs, task="date-translation", student_id="ann", out=subs / "ann.zip")
    shutil.copyfile(subs / "ann.zip", subs / "bob.zip")
    export(
        _one_more_epoch(first), first.vocabs, task="date-translation", student_id="cat", out=subs / "cat.zip"
    )
    export(second.model, second.vocabs, task="date-translation", student_id="dan", out=subs / "dan.zip")
    _with_unreadable_weights(subs / "ann.zip", subs / "eve.zip")
    (root / "secret.txt").write_text("similarity-test-secret")
    make_hidden_set("date-translation", root / "secret.txt", root / "hidden", n=60)
    with without_feedback_examples():
        records = grade_folder(
            subs, load_rubric(task="date-translation"), root / "hidden", root / "grades", progress=False
        )
    return root, records


def test_the_same_model_under_two_ids_is_flagged_as_identical(graded_class):
    root, records = graded_class
    assert {r["student"]: r["status"] for r in records} == dict.fromkeys(
        ("ann", "bob", "cat", "dan", "eve"), "graded"
    )
    row = _similarity_rows(root / "grades")[frozenset(("ann", "bob"))]
    assert row["flagged"] == "yes" and row["identical_weights"] == "yes" and "identical weights" in row["why"]


def test_the_same_model_trained_one_more_epoch_is_flagged_as_near_identical(graded_class):
    rows = _similarity_rows(graded_class[0] / "grades")
    for other in ("ann", "bob"):
        row = rows[frozenset((other, "cat"))]
        assert row["flagged"] == "yes" and row["identical_weights"] == "no"
        assert (
            float(row["weight_similarity"]) >= similarity.WEIGHT_THRESHOLD and "near-identical" in row["why"]
        )


def test_models_trained_from_different_seeds_are_not_flagged(graded_class):
    rows = _similarity_rows(graded_class[0] / "grades")
    for other in ("ann", "bob", "cat"):
        row = rows[frozenset((other, "dan"))]
        assert row["flagged"] == "no" and row["why"] == "" and row["architecture"] == "same"
        assert float(row["weight_similarity"]) < similarity.WEIGHT_THRESHOLD


def test_a_model_whose_weights_cannot_be_read_is_listed_as_not_compared_not_cleared(graded_class):
    root, records = graded_class
    assert next(r for r in records if r["student"] == "eve")["parameters"] is None  # yet graded, and it ran
    rows = _similarity_rows(root / "grades")
    for other in ("ann", "bob", "cat", "dan"):
        row = rows[frozenset((other, "eve"))]
        assert row["flagged"] == "not compared" and row["why"] == "not compared: weights of eve unreadable"
        assert row["identical_weights"] == row["weight_similarity"] == row["architecture"] == ""
    assert rows[frozenset(("ann", "dan"))]["flagged"] == "no"
    page = (root / "grades" / "class-report.html").read_text(encoding="utf-8")
    assert (
        "<b>Not compared on weights: 1 model</b>, in 4 pairs" in page
        and "<li>weights of eve unreadable</li>" in page
    )


def test_nothing_of_similarity_reaches_a_student(graded_class):
    root, _ = graded_class
    grades = root / "grades"
    students = {"ann", "bob", "cat", "dan", "eve"}
    for path in [
        *(grades / "results").iterdir(),
        *(grades / "feedback").glob("*.md"),
        *(grades / "feedback").glob("*.html"),
    ]:
        # (bob's and eve's bundles are ann's file: their meta.json names ann, and their feedback says so; that
        # is all)
        text = re.sub(r"meta\S*json names student \S*ann", "", path.read_text(encoding="utf-8"))
        assert "similar" not in text.lower() and '"fingerprint"' not in text and "matrices" not in text
        assert "shared" not in text.lower() and "flagged" not in text.lower()
        assert not any(re.search(rf"\b{other}\b", text) for other in students - {path.name.split(".")[0]})
    evidence = json.loads((grades / "similarity" / "ann.json").read_text(encoding="utf-8"))
    assert len(evidence["answers"]) == 60 and evidence["fingerprint"]


def test_the_similarity_command_compares_the_batch_again_without_running_a_model(graded_class, tmp_path):
    grades = tmp_path / "grades"
    shutil.copytree(graded_class[0] / "grades", grades)
    before = (grades / "similarity.csv").read_bytes()
    (grades / "similarity.csv").unlink()
    (grades / "class-report.html").unlink()
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "similarity", str(grades)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "5 submission(s), 10 pair(s): 3 flagged" in done.stdout
    assert (grades / "similarity.csv").read_bytes() == before and (grades / "class-report.html").is_file()
    (grades / "similarity" / "dan.json").unlink()  # as if graded before the grader kept it
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "similarity", str(grades)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        done.returncode == 0
        and "3 flagged" in done.stdout
        and "1 submission(s) have nothing to compare (dan)" in done.stdout
        and "--force" in done.stdout
    )
    row = _similarity_rows(grades)[frozenset(("ann", "dan"))]  # listed, not left out
    assert row["flagged"] == "not compared" and "weights of dan: no evidence kept" in row["why"]


def test_a_failure_in_the_comparison_keeps_the_grades(graded_class, tmp_path, monkeypatch):
    import autograder.similarity
    from autograder.batch import grade_folder
    from autograder.rubric import load_rubric

    def broken(*args):
        raise RuntimeError("a bug in the comparison")

    monkeypatch.setattr(autograder.similarity, "write_similarity", broken)
    monkeypatch.setattr("autograder.batch.write_similarity", broken)
    root = graded_class[0]
    shutil.copytree(root / "grades", tmp_path / "grades")
    records = grade_folder(
        root / "submissions",
        load_rubric(task="date-translation"),
        root / "hidden",
        tmp_path / "grades",
        progress=False,
    )  # all five cached: only the comparison runs
    assert len(records) == 5 and (tmp_path / "grades" / "gradebook.csv").is_file()
    assert "a bug in the comparison" in (tmp_path / "grades" / "grader.log").read_text(encoding="utf-8")


def test_the_similarity_command_on_a_folder_that_was_not_graded_says_so(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "similarity", str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        done.returncode == 2 and "holds no graded results" in done.stderr and "Traceback" not in done.stderr
    )


def test_a_copied_language_model_is_flagged_by_its_weights_and_its_next_character_guesses(
    tmp_path, no_feedback_examples
):
    from autograder.batch import grade_folder
    from autograder.hidden import make_hidden_set
    from autograder.rubric import load_rubric
    from labs.common.submission import export
    from labs.date_generation.config import DateGenerationConfig
    from labs.date_generation.train import train

    run = train(DateGenerationConfig.tiny(), verbose=0)
    export(run.model, run.vocabs, task="date-generation", student_id="eve", out=tmp_path / "subs" / "eve.zip")
    shutil.copyfile(tmp_path / "subs" / "eve.zip", tmp_path / "subs" / "fay.zip")
    (tmp_path / "secret.txt").write_text("lab-1-similarity-secret")
    make_hidden_set("date-generation", tmp_path / "secret.txt", tmp_path / "hidden", n=50)
    grade_folder(
        tmp_path / "subs",
        load_rubric(task="date-generation"),
        tmp_path / "hidden",
        tmp_path / "grades",
        progress=False,
    )
    row = _similarity_rows(tmp_path / "grades")[frozenset(("eve", "fay"))]
    assert row["flagged"] == "yes" and row["identical_weights"] == "yes"
    evidence = json.loads((tmp_path / "grades" / "similarity" / "eve.json").read_text(encoding="utf-8"))
    assert len(evidence["answers"]) == 50 * 11 and set(evidence["answers"]) <= set("0123456789-") | {
        "</s>",
        "<unk>",
    }
