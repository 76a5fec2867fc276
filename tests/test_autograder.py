"""The autograder: hostile bundles each get their status and message, real bundles get graded end to end."""

import csv
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder.allowlist import check_config, graph_classes
from autograder.batch import bundle_task, grade_folder
from autograder.hidden import load_hidden_set, make_hidden_set
from autograder.reports import csv_cell, markdown_text
from autograder.rubric import RubricError, load_rubric
from autograder.sandbox import available_isolation, clean_stale_folders
from labs.common.errors import InputError
from labs.common.submission import export
from tests.conftest import REPO_ROOT, without_feedback_examples

SECRET = "a-course-secret-0123456789abcdef"


def run_autograder(*args: str, cwd: Path = REPO_ROOT):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _rubric(tmp_path: Path, task: str, **limits) -> Path:
    """The default rubric of ``task`` with some limits changed or added (tests keep timeouts short)."""
    text = (REPO_ROOT / "autograder" / "rubrics" / f"{task}.toml").read_text(encoding="utf-8")
    for key, value in limits.items():
        if re.search(rf"(?m)^{key} = ", text):
            text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        else:
            text = text.replace("[limits]\n", f"[limits]\n{key} = {value}\n", 1)
    path = tmp_path / f"{task}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("secret") / "secret.txt"
    path.write_text(SECRET)
    return path


# ---- static checks (no TensorFlow) ----


def _layer(class_name, module="keras.layers", registered=None):
    return {"class_name": class_name, "module": module, "registered_name": registered, "config": {}}


def test_allowlist_accepts_keras_layers_and_refuses_code_and_foreign_modules():
    model = {
        "class_name": "Functional",
        "module": "keras.src.models.functional",
        "config": {
            "layers": [
                _layer("Embedding"),
                _layer("LSTM"),
                _layer("AdditiveAttention"),
                {"class_name": "__keras_tensor__", "module": None},
            ]
        },
    }
    assert check_config(model).allowed
    model["config"]["layers"].append(_layer("Lambda"))
    assert "'Lambda'" in check_config(model).message and not check_config(model).allowed
    model["config"]["layers"][-1] = _layer("system", module="os")
    assert "from the module 'os'" in check_config(model).message
    model["config"]["layers"][-1] = _layer(
        "KeyValueAttention", "homework.kv_attention", "attention_lab>KeyValueAttention"
    )
    assert "this task allows no custom objects" in check_config(model).message
    allowed = ("attention_lab>KeyValueAttention",)
    assert "no custom_layers.py" in check_config(model, allowed_custom=allowed).message
    assert check_config(model, allowed_custom=allowed, custom_layers_present=True).allowed


def test_the_config_check_holds_no_path_per_object():
    """A config.json under 256 kB whose first key is 115,000 characters long over 60,000 objects: the check
    wrote each object's whole path, 7 GB in the grader's own process (a hostile review). Paths are now
    written only for the object a message names, each key cut short."""
    import tracemalloc

    key = "k" * 20_000
    config = {
        key: [{"class_name": "__tensor__", "module": None}] * 10_000,
        "class_name": "Functional",
        "module": "keras",
    }
    tracemalloc.start()
    try:
        verdict = check_config(config)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert verdict.allowed and peak < 20_000_000, peak  # written out, the paths alone were 200 MB
    config[key].append({"class_name": "Lambda", "module": "keras.layers"})
    message = check_config(config).message
    assert f"'Lambda' at config.{'k' * 40}…[10000]" in message and len(message) < 300, message


def test_a_lookup_layer_that_reads_its_vocabulary_from_a_file_is_never_loaded(tmp_path):
    """Keras' StringLookup, IntegerLookup and TextVectorization take a file path for their vocabulary and read
    it as the model loads: a config.json written by hand could name the hidden set's targets (readable where
    the grader runs unisolated). A vocabulary saved as a list stays allowed."""
    import keras

    (tmp_path / "targets.txt").write_text("Somchai\nJaidee\n", encoding="utf-8")
    assert keras.layers.StringLookup.from_config(
        {
            **keras.layers.StringLookup(vocabulary=["x"]).get_config(),
            "vocabulary": str(tmp_path / "targets.txt"),
        }
    ).get_vocabulary()[1:] == ["Somchai", "Jaidee"]  # what Keras does with a path: reads the file
    for layer in (
        keras.layers.StringLookup(vocabulary=["a", "b"]),
        keras.layers.IntegerLookup(vocabulary=[1, 2]),
        keras.layers.TextVectorization(vocabulary=["a", "b"]),
    ):
        model = _model_config(keras.Sequential([keras.Input((1,), dtype=layer.dtype or "string"), layer]))
        assert check_config(model).allowed
        [config] = [c for c in model["config"]["layers"] if c["class_name"] == type(layer).__name__]
        config["config"]["vocabulary"] = "/grading/hidden/targets.csv"
        verdict = check_config(model)
        assert not verdict.allowed and "reads its vocabulary from a file" in verdict.message, verdict.message
        assert "'/grading/hidden/targets.csv'" in verdict.message


def _model_config(model) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        model.save(Path(folder) / "m.keras")
        with zipfile.ZipFile(Path(folder) / "m.keras") as archive:
            return json.loads(archive.read("config.json"))


def test_the_architecture_is_read_from_the_real_layer_graph_not_from_decoys():
    from labs.date_translation.config import DateTranslationConfig

    model, _ = _lab2_model()
    assert {"Bidirectional", "LSTM", "AdditiveAttention", "Dense"} <= check_config(
        _model_config(model)
    ).classes
    baseline, _ = _lab2_model(DateTranslationConfig.tiny(attention="none"))
    config = _decoyed(_model_config(baseline))
    assert check_config(config).allowed and "AdditiveAttention" not in check_config(config).classes
    deep = {"class_name": "Functional", "config": {"layers": []}}
    for _ in range(300):
        deep = {"class_name": "Sequential", "module": "keras", "config": {"layers": [deep]}}
    with pytest.raises(ValueError, match="nested more than"):
        check_config(deep)


def run_with_timeout(work, seconds: float):
    """``work()``, or a failure once it has run ``seconds`` (in a daemon thread: a walk that hangs fails the
    test instead of holding the whole run)."""
    done = {}

    def target():
        try:
            done["value"] = work()
        except BaseException as error:
            done["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in done:
        raise done["error"]
    return done["value"]


def _reference(name: str, node: int, tensor: int) -> dict:
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [name, node, tensor]}}


def test_the_layer_graph_is_walked_once_however_often_a_config_refers_to_it():
    """A hostile config.json of 15 kB: 21 nested models, each using the one inside it through 4 references
    that all reach the whole next level. Walked afresh for each reference, that was 4^20 walks, in the grader's
    own process, before any sandbox: the batch hung and ignored SIGTERM. Each nested model's outputs are now
    read once per walk; a graph with more references than a model has is malformed."""
    fan, depth = 4, 21
    model = {"class_name": "Dense", "module": "keras.layers", "name": "m", "config": {"name": "m"}}
    for _ in range(depth):
        concatenate = {
            "class_name": "Concatenate",
            "module": "keras.layers",
            "name": "c",
            "config": {"name": "c"},
            "inbound_nodes": [{"args": [[_reference("m", 1, i) for i in range(fan)]], "kwargs": {}}],
        }
        model = {
            "class_name": "Functional",
            "module": "keras.src.models.functional",
            "name": "m",
            "config": {"name": "m", "layers": [model, concatenate], "output_layers": [["c", 0, 0]] * fan},
            "inbound_nodes": [],
        }
    assert len(json.dumps(model)) < 20_000
    verdict = run_with_timeout(lambda: check_config(model), seconds=60)  # was: hours
    assert verdict.allowed and verdict.classes == {"Functional", "Concatenate", "Dense"}

    # One layer reached through 3,000 tensors, each of whose walks reads back through 3,000 references: nine
    # million steps within the config's size limit, and no model of Keras'.
    wide = [_reference("x", 0, 0)] * 3000
    layers = [
        {"class_name": "Dense", "module": "keras.layers", "name": "x", "config": {}, "inbound_nodes": []},
        {
            "class_name": "Add",
            "module": "keras.layers",
            "name": "a",
            "config": {},
            "inbound_nodes": [{"args": [wide], "kwargs": {}}],
        },
    ]
    config = {
        "class_name": "Functional",
        "config": {"layers": layers, "output_layers": [["a", 0, i] for i in range(3000)]},
    }
    with pytest.raises(ValueError, match="more than 100,000 layer references"):
        run_with_timeout(lambda: graph_classes(config, tuple(range(3000))), seconds=60)


def test_a_second_output_earns_no_architecture_points():
    """Decoding reads the first output; attention computed only for a second one is a decoy."""
    import keras

    source, target_in = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    states = keras.layers.LSTM(8, return_sequences=True)(keras.layers.Embedding(20, 4)(target_in))
    probabilities = keras.layers.Dense(15, activation="softmax")(states)
    memory = keras.layers.Embedding(20, 8)(source)
    decoy = keras.layers.AdditiveAttention()([states, memory])
    classes = check_config(_model_config(keras.Model([source, target_in], [probabilities, decoy]))).classes
    assert "LSTM" in classes and "AdditiveAttention" not in classes
    # The same inside a nested model: an output of the decoder that the model never uses is a decoy too.
    y, h = keras.Input((None,), dtype="int32", name="y"), keras.Input((None, 8), name="h")
    s = keras.layers.LSTM(8, return_sequences=True)(keras.layers.Embedding(20, 8)(y))
    decoder = keras.Model(
        {"y": y, "h": h},
        {"p": keras.layers.Dense(15, activation="softmax")(s), "z": keras.layers.AdditiveAttention()([s, h])},
        name="decoder",
    )
    nested = keras.Model([source, target_in], decoder({"y": target_in, "h": memory})["p"])
    classes = check_config(_model_config(nested)).classes
    assert "LSTM" in classes and "AdditiveAttention" not in classes


def test_a_parameter_count_too_large_for_a_float_does_not_stop_the_batch(tmp_path, secret_file, monkeypatch):
    import autograder.grade

    model, vocabs = _lab2_model()
    export(model, vocabs, task="date-translation", student_id="x", out=tmp_path / "subs" / "x.zip")
    monkeypatch.setattr(
        autograder.grade,
        "read_weights",  # as if the check slipped
        lambda *args: {"parameters": 10**400, "fingerprint": None, "matrices": []},
    )
    records = _graded_without_examples(tmp_path, "date-translation", secret_file)
    assert records["x"]["status"] == "error" and (tmp_path / "grades" / "gradebook.csv").is_file()


@pytest.mark.parametrize("step", ["weights", "scoring"])
def test_a_step_that_a_neighbour_may_have_slowed_is_a_timeout_that_is_graded_again_alone(
    tmp_path, secret_file, monkeypatch, step
):
    """Out of time reading the weights, or scoring the outputs, was no ``timeout``: the weights went uncounted
    (the architecture's points lost, the status ``graded``) and the scoring was an ``error``, neither graded
    again alone, though a bundle beside it may have slowed either (autograder.batch.AGAIN_ALONE)."""
    import autograder.grade
    import autograder.sandbox
    from autograder.batch import AGAIN_ALONE
    from autograder.scoring import ScoringTimeout
    from autograder.status import TIMEOUT

    model, vocabs = _lab2_model()
    export(model, vocabs, task="date-translation", student_id="x", out=tmp_path / "subs" / "x.zip")
    if step == "weights":
        contain = autograder.sandbox._contain

        def slow_reader(command, *args, **kwargs):
            run = contain(command, *args, **kwargs)
            if "autograder.weights" in command:  # as if stopped at its 60 s
                run.status, run.code = TIMEOUT, None
            return run

        monkeypatch.setattr(autograder.sandbox, "_contain", slow_reader)
        said = "reading the weights in model.keras (no code of the model runs) took longer than"
    else:

        def slow_scoring(*args, **kwargs):
            raise ScoringTimeout

        monkeypatch.setattr(autograder.grade, "compute_metrics", slow_scoring)
        said = "scoring the model's outputs took longer than 60 s"
    record = _graded_without_examples(tmp_path, "date-translation", secret_file)["x"]
    assert record["status"] == TIMEOUT and TIMEOUT in AGAIN_ALONE and record["message"].startswith(said), (
        record
    )


def _graded_without_examples(tmp_path: Path, task: str, secret_file: Path) -> dict[str, dict]:
    """Grade ``tmp_path/subs`` against a hidden set of 20 rows, without the feedback's examples run: the
    records by student."""
    make_hidden_set(task, secret_file, tmp_path / "hidden", n=20)
    with without_feedback_examples():
        graded = grade_folder(
            tmp_path / "subs",
            load_rubric(task=task),
            tmp_path / "hidden",
            tmp_path / "grades",
            progress=False,
        )
    return {r["student"]: r for r in graded}


def test_a_language_model_is_scored_on_distributions_from_the_prefix_alone(tmp_path, secret_file):
    """Keras layers alone (no custom code) can cheat the cross-entropy while the samples stay the same: scale
    the softmax (sampling divides by the sum), or look ahead in the teacher-forced text (shift the next input
    back and add it to the logits: at sampling's last position there is none). The grader reads distributions
    only, each from a run on the prefix before the letter alone."""
    import keras
    import numpy as np

    from autograder.batch import check_bundle
    from labs.date_generation.config import DateGenerationConfig
    from labs.date_generation.data import vocabularies
    from labs.date_generation.model import build_model

    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    V = len(vocabs["target"])
    honest = build_model(DateGenerationConfig.tiny(), V)
    tokens = keras.Input(shape=(None,), dtype="int32", name="tokens")
    # p / ||p||: each value in [0, 1], the true letter's larger than its probability
    louder = keras.Model(tokens, keras.layers.UnitNormalization(axis=-1)(honest(tokens)), name="date_lstm")
    # softmax(logits + 30 * onehot(the next input)): the letter to predict, read from the input
    states, *_ = honest.get_layer("rnn")(honest.get_layer("embedding")(tokens))
    logits = keras.layers.Dense(V, name="logits")(states)  # (batch, T, V)
    ahead = keras.layers.Embedding(V, V, name="ahead", trainable=False)(tokens)  # (batch, T, V)
    # position t: input t + 1
    ahead = keras.layers.ZeroPadding1D((0, 1))(keras.layers.Cropping1D((1, 0))(ahead))
    peeker = keras.Model(
        tokens, keras.layers.Softmax()(keras.layers.Add()([logits, ahead])), name="date_lstm"
    )
    peeker.get_layer("logits").set_weights(honest.get_layer("next_char").get_weights())
    boost = 30 * np.eye(V, dtype="float32")
    boost[0] = 0
    peeker.get_layer("ahead").set_weights([boost])
    for name, model in (("honest", honest), ("louder", louder), ("peeker", peeker)):
        export(model, vocabs, task="date-generation", student_id=name, out=tmp_path / "subs" / f"{name}.zip")
    records = _graded_without_examples(tmp_path, "date-generation", secret_file)
    assert records["honest"]["status"] == "graded", records["honest"]["message"]
    assert records["louder"]["status"] == "wrong-signature" and not records["louder"]["metrics"]
    assert records["louder"]["score"] < records["honest"]["score"]
    checked = check_bundle(tmp_path / "subs" / "louder.zip")  # the student's own check says why
    assert checked["status"] == "wrong-signature" and "must be a softmax" in checked["message"], checked
    # Run on the prefix alone, the peeker is the honest model: the same samples, the same cross-entropy.
    assert records["peeker"]["status"] == "graded", records["peeker"]["message"]
    assert records["peeker"]["metrics"] == pytest.approx(records["honest"]["metrics"], abs=1e-5)
    assert records["honest"]["metrics"]["cross_entropy_gap"] > 0


def _decoyed(config: dict) -> dict:
    """A config with an AdditiveAttention that computes nothing: a top-level object and a layer nothing
    feeds."""
    decoy = {
        "class_name": "AdditiveAttention",
        "module": "keras.layers",
        "registered_name": None,
        "config": {"name": "decoy", "use_scale": True, "dropout": 0.0},
        "name": "decoy",
        "inbound_nodes": [],
    }
    config["decoy"] = dict(decoy)
    config["config"]["layers"].append(decoy)
    return config


# ---- rubrics ----


def test_default_rubrics_load_and_give_partial_credit():
    rubric = load_rubric(task="name-transliteration")
    assert rubric.max_score == 100 and rubric.custom_layers == ("attention_lab>KeyValueAttention",)
    cer = next(m for m in rubric.metrics if m.name == "cer_unseen")
    assert (cer.points_for(0.03), cer.points_for(0.05), cer.points_for(0.5)) == (20, 16, 0)
    for task in ("date-generation", "date-translation"):
        assert load_rubric(task=task).max_score == 100


def test_a_broken_rubric_names_the_file_and_field(tmp_path):
    with pytest.raises(RubricError, match="unknown metric 'bleu'"):
        load_rubric(_rubric(tmp_path, "date-translation", name='"bleu"'))
    with pytest.raises(RubricError, match="is a rubric for date-translation, not date-generation"):
        load_rubric(_rubric(tmp_path, "date-translation"), "date-generation")


# ---- hidden sets ----


def test_hidden_set_is_deterministic_and_disjoint_from_the_public_splits(tmp_path, secret_file):
    first = make_hidden_set("name-transliteration", secret_file, tmp_path / "a", n=200)
    again = make_hidden_set("name-transliteration", secret_file, tmp_path / "b", n=200)
    assert first == again
    assert (tmp_path / "a" / "targets.csv").read_bytes() == (tmp_path / "b" / "targets.csv").read_bytes()
    inputs, targets, _ = load_hidden_set(tmp_path / "a", "name-transliteration")
    public = {
        r["source"]
        for split in ("train", "dev", "test")
        for r in csv.DictReader(
            open(REPO_ROOT / "datasets" / "thai-names" / f"{split}.csv", encoding="utf-8")
        )
    }
    assert not {r["source"] for r in inputs} & public
    assert sorted({t["stratum"] for t in targets}) == ["seen", "unseen"]
    assert "target" not in (tmp_path / "a" / "inputs.csv").read_text(encoding="utf-8").splitlines()[0]
    other = tmp_path / "other.txt"
    other.write_text("another-secret-fedcba9876543210")
    make_hidden_set("name-transliteration", other, tmp_path / "c", n=200)
    assert (tmp_path / "c" / "inputs.csv").read_bytes() != (tmp_path / "a" / "inputs.csv").read_bytes()
    (tmp_path / "a" / "targets.csv").write_text("id,target\n")
    with pytest.raises(InputError, match="has changed since the hidden set was made"):
        load_hidden_set(tmp_path / "a", "name-transliteration")


def test_the_homework_hidden_set_asks_for_words_whose_spellings_no_student_file_holds(tmp_path, secret_file):
    from labs.name_transliteration.data import HIDDEN, word_group

    make_hidden_set("name-transliteration", secret_file, tmp_path / "h", n=200)
    _, targets, _ = load_hidden_set(tmp_path / "h", "name-transliteration")
    unseen_words = {
        w
        for t in targets
        if t["stratum"] == "unseen"
        for w in t["source"].split(" ")
        if word_group(w) != "seen"
    }
    assert unseen_words and {word_group(w) for w in unseen_words} == {HIDDEN}
    public = "".join(
        (REPO_ROOT / "datasets" / "thai-names" / f"{split}.csv").read_text(encoding="utf-8")
        for split in ("train", "dev", "test")
    )
    assert not {w for w in re.findall(r"[\u0e00-\u0e7f]+", public)} & unseen_words


def test_a_killed_graders_leftovers_are_removed_at_the_next_start(tmp_path):
    import tempfile

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    stale = Path(tempfile.mkdtemp(prefix=f"attention-lab-{dead.pid}-"))
    (stale / "in").mkdir()
    (stale / "in" / "job.json").write_text("{}")
    (stale / "in").chmod(0o555)
    alive = Path(tempfile.mkdtemp(prefix=f"attention-lab-{os.getppid()}-"))  # a grader that still runs
    planted = Path(tempfile.mkdtemp(prefix=f"attention-lab-{dead.pid}-"))  # a child's look-alike
    (planted / "in").symlink_to(tmp_path / "target")
    (tmp_path / "target").write_text("the grader must not chmod this")
    (tmp_path / "target").chmod(0o600)
    if os.geteuid() == 0:
        os.chown(planted, 54321, 54321, follow_symlinks=False)
    try:
        clean_stale_folders()  # (a grader in another test process may clean it first: make test runs two)
        assert not stale.exists() and alive.exists()
        assert oct((tmp_path / "target").stat().st_mode & 0o777) == "0o600"
        assert planted.exists() == (os.geteuid() == 0)  # not the grader's own: left alone
    finally:
        subprocess.run(["rm", "-rf", str(stale), str(alive), str(planted)], check=False)


def test_the_sandboxed_run_starts_keras_without_pandas_and_matplotlib_yet_a_layer_may_import_them():
    script = (
        "import sys\n"
        "from autograder.child import KERAS_EXTRAS, _import_keras\n"
        "keras = _import_keras()\n"
        "assert hasattr(keras.saving, 'load_model')\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in KERAS_EXTRAS))\n"
        "import matplotlib.pyplot, pandas\n"
        "print(pandas.DataFrame({'a': [1]}).shape)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == ["[]", "(1, 1)"]


def test_a_terminated_grader_removes_its_temporary_folders(tmp_path, secret_file):
    import signal
    import tempfile
    import time

    model, vocabs = _lab2_model()
    export(model, vocabs, task="date-translation", student_id="x", out=tmp_path / "subs" / "x.zip")
    make_hidden_set("date-translation", secret_file, tmp_path / "hidden", n=50)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    grader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(tmp_path / "subs"),
            "--task",
            "date-translation",
            "--hidden",
            str(tmp_path / "hidden"),
            "--out",
            str(tmp_path / "g"),
            "--quiet",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ours = lambda: list(Path(tempfile.gettempdir()).glob(f"attention-lab-{grader.pid}-*"))  # noqa: E731
    deadline = time.monotonic() + 120
    while not ours() and grader.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours(), "the grader never started a sandbox"
    grader.send_signal(signal.SIGTERM)
    _, stderr = grader.communicate(timeout=120)
    assert grader.returncode == 128 + signal.SIGTERM and "Traceback" not in stderr  # 143: a shell reads TERM
    assert stderr.strip().splitlines()[-1] == (
        "python -m autograder: interrupted; what was graded before the stop is kept: run it again to go on"
    )
    assert ours() == []


def test_hidden_set_refuses_a_short_secret(tmp_path):
    (tmp_path / "s.txt").write_text("1234")
    result = run_autograder(
        "hidden-set",
        "--task",
        "date-translation",
        "--seed-file",
        str(tmp_path / "s.txt"),
        "--out",
        str(tmp_path / "h"),
    )
    assert result.returncode == 2 and "use at least 16 random characters" in result.stderr
    assert not (tmp_path / "h").exists()
    (tmp_path / "s.txt").write_text(SECRET)
    made = run_autograder(
        "hidden-set",
        "--task",
        "date-generation",
        "--seed-file",
        str(tmp_path / "s.txt"),
        "--out",
        str(tmp_path / "h"),
    )
    assert made.returncode == 0 and "wrote a hidden set of" in made.stdout, made.stderr
    assert "can rebuild" not in made.stderr  # dates have no unseen words to rebuild
    assert load_hidden_set(tmp_path / "h", "date-generation")[0]


# ---- bundles, hostile and honest ----

TINY_CONFIGS = {
    "date-translation": ("labs.date_translation", "DateTranslationConfig"),
    "name-transliteration": ("labs.name_transliteration", "NameTransliterationConfig"),
}


def tiny_model_and_hidden_set(task: str, root: Path, n: int = 20):
    """``root/secret.txt``, a hidden set of ``n`` rows in ``root/hidden``, and ``task``'s tiny model (seed 0)
    with its vocabularies: what a test needs to grade bundles of its own making."""
    import importlib

    import keras

    package, config = TINY_CONFIGS[task]
    (root / "secret.txt").write_text(SECRET)
    make_hidden_set(task, root / "secret.txt", root / "hidden", n=n)
    keras.utils.set_random_seed(0)
    vocabs = importlib.import_module(f"{package}.data").vocabularies()
    build_model = importlib.import_module(f"{package}.model").build_model
    tiny = getattr(importlib.import_module(f"{package}.config"), config).tiny()
    return build_model(tiny, len(vocabs["source"]), len(vocabs["target"])), vocabs


def _lab2_model(config=None):
    import keras

    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.data import vocabularies
    from labs.date_translation.model import build_model

    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    return build_model(
        config or DateTranslationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"])
    ), vocabs


def _zip_with(
    path: Path, entries: dict[str, bytes], symlink: str | None = None, stored: bool = False
) -> Path:
    with zipfile.ZipFile(
        path, "w", compression=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    ) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def _bundle_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _replace_in_model(files: dict[str, bytes], change, raw: bytes | None = None) -> dict[str, bytes]:
    """The bundle with its model.keras's config.json passed through ``change`` (or replaced by ``raw``)."""
    source = zipfile.ZipFile(io.BytesIO(files["model.keras"]))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "config.json":
                data = raw if raw is not None else json.dumps(change(json.loads(data))).encode()
            target.writestr(name, data)
    return {**files, "model.keras": buffer.getvalue()}


def _model_file(root: Path, config: dict, like: bytes, name: str) -> bytes:
    """A model.keras holding ``config`` and the weights of a model saved with it (``like`` gives metadata)."""
    from labs.date_translation.config import DateTranslationConfig

    model, _ = _lab2_model(DateTranslationConfig.tiny(attention="none"))
    model.save(root / f"{name}.keras")
    weights = zipfile.ZipFile(root / f"{name}.keras").read("model.weights.h5")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        target.writestr("metadata.json", zipfile.ZipFile(io.BytesIO(like)).read("metadata.json"))
        target.writestr("config.json", json.dumps(config))
        target.writestr("model.weights.h5", weights)
    return buffer.getvalue()


def _entry_offsets(path: Path, name: str) -> tuple[int, int]:
    """Where ``name``'s local header and central-directory header start in the zip at ``path``."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(name).header_offset
    central = next(
        i
        for i in range(len(data))
        if data.startswith(b"PK\x01\x02", i) and data[i + 46 : i + 46 + len(name)] == name.encode()
    )
    return local, central


def _patch_header(path: Path, name: str, *, flag_bits: int = 0, method: int | None = None) -> None:
    """Set ``name``'s general-purpose flags or compression method in both of its headers."""
    data = bytearray(path.read_bytes())
    local, central = _entry_offsets(path, name)
    for offset, flags_at, method_at in ((local, 6, 8), (central, 8, 10)):
        data[offset + flags_at] |= flag_bits
        if method is not None:
            data[offset + method_at : offset + method_at + 2] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))


def _corrupt(path: Path, name: str) -> None:
    """Flip a byte of ``name``'s compressed data: its CRC no longer matches."""
    data = bytearray(path.read_bytes())
    local, _ = _entry_offsets(path, name)
    start = (
        local
        + 30
        + int.from_bytes(data[local + 26 : local + 28], "little")
        + int.from_bytes(data[local + 28 : local + 30], "little")
    )
    data[start + 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def lab2_submissions(tmp_path_factory):
    """A folder of lab 2 submissions: one honest bundle and one of each kind of trouble."""
    import keras

    from labs.date_translation.config import DateTranslationConfig

    root = tmp_path_factory.mktemp("lab2")
    subs = root / "submissions"
    subs.mkdir()
    model, vocabs = _lab2_model()
    export(model, vocabs, task="date-translation", student_id="honest", out=subs / "honest.zip")
    export(model, vocabs, task="date-translation", student_id="folder", out=subs / "as-a-folder")
    good = _bundle_files(subs / "as-a-folder")

    inputs = keras.Input((None,), dtype="int32")
    lambda_model = keras.Model(
        inputs, keras.layers.Lambda(lambda x: keras.ops.cast(x, "float32") * 2)(inputs)
    )
    lambda_model.save(root / "lambda.keras")
    _zip_with(subs / "lambda.zip", {**good, "model.keras": (root / "lambda.keras").read_bytes()})

    def foreign(config):
        config["config"]["layers"][3]["module"] = "os"
        config["config"]["layers"][3]["class_name"] = "system"
        return config

    _zip_with(subs / "foreign-module.zip", _replace_in_model(good, foreign))
    _zip_with(subs / "traversal.zip", {**good, "../escaped.txt": b"gotcha"})
    _zip_with(subs / "symlink.zip", good, symlink="vocab-link.json")
    _zip_with(subs / "zip-bomb.zip", {**good, "predictions.csv": b"\0" * 50_000_000})

    model.save(root / "model.h5")
    _zip_with(subs / "h5-renamed.zip", {**good, "model.keras": (root / "model.h5").read_bytes()})

    language_model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(20, 4),
            keras.layers.LSTM(4, return_sequences=True),
            keras.layers.Dense(len(vocabs["target"]), activation="softmax"),
        ]
    )
    language_model.save(root / "lm.keras")
    _zip_with(subs / "wrong-signature.zip", {**good, "model.keras": (root / "lm.keras").read_bytes()})

    broken, _ = _lab2_model()
    kernel = broken.get_layer("decoder").get_layer("W_o").kernel
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))
    broken.save(root / "nan.keras")
    _zip_with(subs / "nan-output.zip", {**good, "model.keras": (root / "nan.keras").read_bytes()})
    (subs / "empty").mkdir()

    # Bundles that used to stop the whole batch, and entries that used to get no row.
    deep = b"[" * 100_000 + b"]" * 100_000
    _zip_with(subs / "deep-config.zip", _replace_in_model(good, lambda c: c, raw=deep))
    _zip_with(subs / "deep-meta.zip", {**good, "meta.json": deep}, stored=True)
    _zip_with(subs / "bad-crc.zip", good)
    _corrupt(subs / "bad-crc.zip", "vocab.json")
    _zip_with(subs / "encrypted.zip", good)
    _patch_header(subs / "encrypted.zip", "vocab.json", flag_bits=0x1)
    _zip_with(subs / "odd-compression.zip", good)
    _patch_header(subs / "odd-compression.zip", "vocab.json", method=99)
    _zip_with(subs / "no-directory.zip", good)
    (subs / "no-directory.zip").write_bytes((subs / "no-directory.zip").read_bytes()[:-30])
    _zip_with(subs / "long-name.zip", {**good, "a" * 300: b"x"})
    (subs / "link-to-zero.zip").symlink_to("/dev/zero")
    os.mkfifo(subs / "a-fifo.zip")
    (subs / "notes.txt").write_text("not a bundle")
    _zip_with(
        subs / "decoy.zip",
        {
            **good,
            "model.keras": _model_file(
                root,
                _decoyed(_model_config(_lab2_model(DateTranslationConfig.tiny(attention="none"))[0])),
                good["model.keras"],
                "baseline",
            ),
        },
    )
    export(model, vocabs, task="date-translation", student_id="someone-else", out=subs / "mismatch.zip")
    export(model, vocabs, task="date-translation", student_id="dotted", out=subs / ".dotted.zip")
    for name in (
        '=HYPERLINK("evil.example")&A1.zip',
        "สมชาย.zip",
        "สมหญิง.zip",
        "Alice.zip",
        "alice.zip",
        "\u202egiz.exe\u200b.zip",
    ):
        (subs / name).write_bytes(b"not a zip")
    (subs / "submission_metadata.yml").write_text("gradescope's index, not a submission\n")

    def surrogate(config):  # a class name no UTF-8 file can hold, which Keras repeats in its error
        config["config"]["layers"][1]["class_name"] = "\udcff"
        return config

    _zip_with(subs / "surrogate.zip", _replace_in_model(good, surrogate))
    (subs / os.fsdecode(b"caf\xe9.zip")).write_bytes(b"not a zip")  # a name that is not UTF-8
    return root


EXPECTED_LAB2 = {  # entry name -> (status, a phrase of the message)
    "honest.zip": ("graded", ""),
    "as-a-folder": ("graded", ""),
    "lambda.zip": ("disallowed", "'Lambda'"),
    "foreign-module.zip": ("disallowed", "from the module 'os'"),
    "traversal.zip": ("unsafe", "path traversal"),
    "symlink.zip": ("unsafe", "symbolic link"),
    "zip-bomb.zip": ("unsafe", "zip bomb"),
    "h5-renamed.zip": ("malformed", "HDF5"),
    "wrong-signature.zip": ("wrong-signature", "[source (batch, S), target_in (batch, T)]"),
    "nan-output.zip": ("nan-output", "NaN"),
    "empty": ("malformed", "empty"),
    "deep-config.zip": ("malformed", "nested too deeply"),
    "deep-meta.zip": ("malformed", "nested too deeply"),
    "bad-crc.zip": ("malformed", "vocab.json cannot be read"),
    "encrypted.zip": ("malformed", "vocab.json cannot be read"),
    "odd-compression.zip": ("malformed", "vocab.json cannot be read"),
    "no-directory.zip": ("malformed", "not a readable zip file"),
    "long-name.zip": ("unsafe", "no file system should hold"),
    "link-to-zero.zip": ("unsafe", "symbolic link"),
    "a-fifo.zip": ("malformed", "neither a folder nor a zip file"),
    "notes.txt": ("malformed", "not a readable zip file"),
    "decoy.zip": ("graded", ""),
    "mismatch.zip": ("graded", ""),
    ".dotted.zip": ("graded", ""),
    '=HYPERLINK("evil.example")&A1.zip': ("malformed", "not a readable zip file"),
    "สมชาย.zip": ("malformed", "not a readable zip file"),
    "สมหญิง.zip": ("malformed", "not a readable zip file"),
    "Alice.zip": ("malformed", "not a readable zip file"),
    "alice.zip": ("malformed", "not a readable zip file"),
    "surrogate.zip": ("load-failed", "Keras could not load"),
    "caf\ufffd.zip": ("malformed", "not a readable zip file"),
    "<U+202E>giz.exe<U+200B>.zip": ("malformed", "not a readable zip file"),  # a name that reads reversed
}


@pytest.fixture(scope="module")
def lab2_graded(lab2_submissions, secret_file, tmp_path_factory):
    root = lab2_submissions
    make_hidden_set("date-translation", secret_file, root / "hidden", n=200)
    rubric = load_rubric(_rubric(tmp_path_factory.mktemp("rubric"), "date-translation", wall_seconds=120))
    records = grade_folder(
        root / "submissions", rubric, root / "hidden", root / "grades", jobs=2, progress=False
    )
    return root, rubric, {r["student"]: r for r in records}


def test_every_bundle_gets_its_status_and_the_batch_completes(lab2_graded):
    root, _, records = lab2_graded
    by_entry = {r["bundle"]: r for r in records.values()}
    assert set(by_entry) == set(EXPECTED_LAB2)  # every entry has its row (Gradescope's index has none)
    for entry, (status, phrase) in EXPECTED_LAB2.items():
        assert by_entry[entry]["status"] == status, (entry, by_entry[entry]["message"])
        assert phrase in by_entry[entry]["message"], (entry, by_entry[entry]["message"])
    assert not (root / "escaped.txt").exists() and not (root / "submissions" / "escaped.txt").exists()
    # a refused bundle still gets the architecture points its (readable) config earns
    assert by_entry["nan-output.zip"]["score"] == 10 and by_entry["lambda.zip"]["score"] == 0
    decoy = by_entry["decoy.zip"]["lines"][0]
    assert decoy["points"] == 0 and "no AdditiveAttention" in decoy["message"]  # the decoys compute nothing
    assert {r["isolation"] for r in records.values()} == {available_isolation()}


def test_student_ids_stay_distinct_and_meta_json_is_checked_against_the_entry(lab2_graded):
    _, _, records = lab2_graded
    ids = {r["bundle"]: r["student"] for r in records.values()}
    assert len(set(ids.values())) == len(ids)
    assert len({i.casefold() for i in ids.values()}) == len(ids)  # case-insensitive file systems too
    assert ids["Alice.zip"] == "Alice" and ids["alice.zip"].startswith("alice+")
    assert ids["สมชาย.zip"].startswith("student-") and ids["สมชาย.zip"] != ids["สมหญิง.zip"]
    assert re.fullmatch(r"[A-Za-z0-9._-]+", ids['=HYPERLINK("evil.example")&A1.zip'])
    assert ids[".dotted.zip"].startswith("dotted-")
    assert records[ids["mismatch.zip"]]["notes"] == [
        "meta.json names student 'someone-else'; the submission is 'mismatch'"
    ]
    assert records[ids["honest.zip"]]["notes"] == []


def test_no_entry_can_be_named_into_another_entrys_id():
    """``x-2`` beside two ``x`` (a folder and a zip) once took the second ``x``'s de-duplicated id and swapped
    rows; every entry now keeps an id its own name gives, and a de-duplicated id is one no name gives."""
    from autograder.batch import _unique_ids
    from autograder.grade import student_id_for
    from autograder.lms import Entry

    def ids_of(names: list[str]) -> dict[Path, str]:
        entries = [Path(name) for name in sorted(names)]
        ids = _unique_ids([Entry(path, student_id_for(path), "folder") for path in entries])
        return {path: ids[index] for index, path in enumerate(entries)}

    for names in (["x", "x-2.zip", "x.zip"], ["x", "x.zip", "x-2"], ["X.zip", "x-2", "x.zip", "x-3.zip"]):
        ids = ids_of(names)
        assert len({i.casefold() for i in ids.values()}) == len(names)
        for entry in ids:  # the entry its own name names keeps that id; the others are marked apart
            plain = student_id_for(entry)
            assert ids[entry] == plain or (ids[entry].startswith(plain + "+") and "+" not in plain)
        assert ids[Path("x-2" + (".zip" if "x-2.zip" in names else ""))] == "x-2"
        again = ids_of([*names, "x-4.zip", "x.ZIP"])  # more entries: ids stand
        assert all(again[entry] == ids[entry] for entry in ids)


def test_invisible_and_bidi_characters_are_shown_escaped_in_every_report(lab2_graded):
    """A bundle named with U+202E (its name displays reversed) and a zero-width space: every report writes
    them as <U+202E> and <U+200B>, and none holds such a character raw."""
    root, _, records = lab2_graded
    grades = root / "grades"
    hidden = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
    reports = [
        grades / "gradebook.csv",
        grades / "class-report.html",
        *sorted((grades / "feedback").glob("*.*")),
    ]
    for path in reports:
        if path.suffix in (".csv", ".html", ".md"):
            assert not hidden.search(path.read_text(encoding="utf-8")), path
    # The class report names bundles where it lists the slowest: one named so, and a similarity example so.
    from autograder.class_report import class_report_html
    from autograder.similarity import THRESHOLDS

    rubric = lab2_graded[1]
    shown = [
        dict(r, bundle="\u202egiz.exe\u200b.zip", sandbox_seconds=999.0) if r["student"] == "honest" else r
        for r in records.values()
    ]
    pair = {
        "student_a": "honest",
        "student_b": "decoy",
        "flagged": True,
        "why": "identical weights\u202e",
        "identical_weights": True,
        "architecture": "same",
        "weight_similarity": 1.0,
        "matrices_compared": 3,
        "shared_mistakes": None,
        "expected_shared_mistakes": None,
        "shared_mistakes_z": None,
        "examples": [{"source": "\u2066x", "output": "y\u200d"}],
    }
    page = class_report_html(shown, rubric, [pair], THRESHOLDS)
    assert not hidden.search(page) and "&lt;U+202E&gt;giz.exe&lt;U+200B&gt;.zip" in page
    with open(grades / "gradebook.csv", encoding="utf-8") as handle:
        assert "<U+202E>giz.exe<U+200B>.zip" in {row["bundle"] for row in csv.DictReader(handle)}


def test_a_message_is_one_short_line_cut_before_an_escape_it_would_split():
    from autograder.claims import clean_message

    text = "/srv/kit/labs/x.py line 3:\n" + "a" * 40 + "\u202e" + "b" * 10
    assert clean_message(text) == "…/x.py line 3: " + "a" * 40 + "<U+202E>" + "b" * 10
    for limit in range(56, 66):  # each cut that lands inside '<U+202E>' drops all of it
        cut = clean_message(text, limit)
        assert len(cut) <= limit and cut.endswith("…")
        assert cut[:-1].endswith("a" * 40) or cut[:-1].endswith("<U+202E>") or cut[-2] == "b", cut


def test_what_a_student_reads_of_the_scored_run_is_coarse(lab2_graded):
    """The scored run held the hidden inputs and its code chose how long it ran, what memory it held and what
    timing it reported: a student's results file keeps whole seconds, memory in 10 MB steps and no timing of
    the child's own (a hostile layer packed a hidden name into those two floats); the instructor's record keeps
    them all."""
    root, _, records = lab2_graded
    honest = records["honest"]
    assert set(honest["child_seconds"]) == {"load", "predict"} and honest["sandbox_seconds"] > 0
    for student, record in records.items():
        shown = json.loads((root / "grades" / "results" / f"{student}.json").read_text(encoding="utf-8"))
        view = shown["extra_data"]["attention_lab"]
        assert "child_seconds" not in view, student
        if record["sandbox_seconds"] is not None:
            assert view["sandbox_seconds"] == round(record["sandbox_seconds"]) == shown["execution_time"]
            assert isinstance(view["sandbox_seconds"], int) and isinstance(view["sandbox_cpu_seconds"], int)
            assert (
                view["peak_memory_mb"] % 10 == 0
                and abs(view["peak_memory_mb"] - record["peak_memory_mb"]) <= 5
            )
        assert {k: v for k, v in view.items() if "seconds" not in k and k != "peak_memory_mb"} == {
            k: v for k, v in record.items() if "seconds" not in k and k != "peak_memory_mb"
        }


def test_a_gradebook_cell_stays_text_in_a_spreadsheet_that_splits_lines_at_semicolons():
    """Excel in a language with decimal commas splits a CSV line at ``;``: a student's file name
    ``a;=1+1;b.zip`` in the bundle column became a cell ``=1+1`` there."""
    assert csv_cell("a;=1+1;b.zip") == "a;'=1+1;b.zip"
    assert csv_cell("x;  @SUM(A1)") == "x;  '@SUM(A1)" and csv_cell("=1;+2") == "'=1;'+2"
    assert csv_cell("-0.25") == "-0.25" and csv_cell("a; b") == "a; b"


def test_grader_log_entries_are_one_plain_line_each_and_tracebacks_read_as_no_entry():
    """A message or an exception that holds what a bundle said (terminal escapes, a line break and a forged
    entry after it) stays inside its own entry of grader.log."""
    import io
    import logging

    from autograder.batch import PlainLog

    forged = "x\n2026-01-01 00:00:00,000 bob.zip: regraded 100/100 \x1b[1A\x1b[2K\x1b]0;t\x07"
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(PlainLog("%(asctime)s %(message)s"))
    logger = logging.getLogger("test-plain-log")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("said: %s", forged)
        try:
            raise RuntimeError(forged)
        except RuntimeError:
            logger.exception("grading %s", "a.zip")
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    entries = [line for line in lines if not line.startswith("  | ")]
    assert len(entries) == 2 and "said: x<U+000A>2026-01-01" in entries[0] and "grading a.zip" in entries[1]
    assert any("regraded 100/100" in line for line in lines if line.startswith("  | "))


def test_a_students_words_in_markdown_feedback_are_text_never_math_or_markup():
    assert markdown_text("$x$ <b>*y*</b>") == "\\$x\\$ &lt;b&gt;\\*y\\*&lt;/b&gt;"


def test_gradebook_leaderboard_feedback_and_gradescope_results(lab2_graded):
    root, rubric, records = lab2_graded
    grades = root / "grades"
    with open(grades / "gradebook.csv", encoding="utf-8") as handle:
        book = list(csv.DictReader(handle))
    assert [r["student"] for r in book] == sorted(records)
    assert set(book[0]) >= {
        "student",
        "score",
        "max_score",
        "exact_match",
        "status",
        "message",
        "isolation",
        "notes",
    }
    formula = next(r for r in book if "HYPERLINK" in r["bundle"])
    assert formula["bundle"].startswith("'=")  # a spreadsheet shows it as text
    with open(grades / "leaderboard.csv", encoding="utf-8") as handle:
        graded = {r["student"] for r in records.values() if r["status"] == "graded"}
        assert {r["student"] for r in csv.DictReader(handle)} == graded
    for student in records:
        result = json.loads((grades / "results" / f"{student}.json").read_text(encoding="utf-8"))
        assert isinstance(result["score"], (int, float)) and result["score"] == records[student]["score"]
        assert isinstance(result["execution_time"], int)  # whole seconds: a coarse channel, not a fine one
        assert result["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        for test in result["tests"]:
            assert {"name", "score", "max_score", "output"} <= set(test) and 0 <= test["score"] <= test[
                "max_score"
            ]
            assert test["status"] in ("passed", "failed")
        assert sum(t["max_score"] for t in result["tests"]) == rubric.max_score
        assert all({"name", "value"} <= set(entry) for entry in result["leaderboard"])
        assert (grades / "feedback" / f"{student}.md").is_file() and (
            grades / "feedback" / f"{student}.html"
        ).is_file()
    honest = (grades / "feedback" / "honest.md").read_text(encoding="utf-8")
    assert "## Examples from the public dev set" in honest and "honest-example-1.png" in honest
    assert "data:image/png;base64," in (grades / "feedback" / "honest.html").read_text(encoding="utf-8")
    assert "Lambda layers and custom modules are not loaded" in (grades / "feedback" / "lambda.md").read_text(
        encoding="utf-8"
    )


def test_a_rerun_resumes_and_grading_again_gives_the_same_scores(
    lab2_graded, monkeypatch, tmp_path, no_feedback_examples, capsys
):  # the batch's fixture ran the public examples; the runs here need not
    import autograder.batch
    import autograder.grade

    root, rubric, records = lab2_graded
    runs = []
    real_run_child = autograder.grade.run_child

    def run_child(
        files, job, *args, **kwargs
    ):  # counts the runs on the hidden set (not the public examples')
        runs.extend([1] if job.get("sources") else [])
        return real_run_child(files, job, *args, **kwargs)

    monkeypatch.setattr(autograder.grade, "run_child", run_child)
    again = grade_folder(
        root / "submissions", rubric, root / "hidden", root / "grades", jobs=2, progress=False
    )
    assert {r["student"]: r["score"] for r in again} == {s: r["score"] for s, r in records.items()}
    assert runs == []  # nothing was run again: every result came from results/
    kept = sum(bool(r.get("bundle_sha256")) for r in records.values())  # one with no bundle: written anew
    assert f"{kept} of {len(records)} submission(s) were graded before" in capsys.readouterr().err
    # --force, then a fixed grader, on three of the batch's bundles with the results the whole batch left: one
    # graded, one whose hidden run fails, one refused before it runs. Each of the two runs both sandboxed
    # bundles again and gives every bundle the same score.
    picked = ("honest.zip", "nan-output.zip", "lambda.zip")
    subset, grades = tmp_path / "submissions", tmp_path / "grades"
    subset.mkdir()
    for name in picked:
        shutil.copyfile(root / "submissions" / name, subset / name)
    shutil.copytree(root / "grades", grades)
    expected = {r["student"]: r["score"] for r in records.values() if r["bundle"] in picked}
    sandboxed = {s for s in expected if records[s]["sandbox_seconds"] is not None}
    assert len(expected) == 3 and len(sandboxed) == 2
    resumed = grade_folder(subset, rubric, root / "hidden", grades, jobs=2, progress=False)
    assert {r["student"]: r["score"] for r in resumed} == expected and runs == []
    forced = grade_folder(subset, rubric, root / "hidden", grades, jobs=2, force=True, progress=False)
    assert {r["student"]: r["score"] for r in forced} == expected
    assert len(runs) == 2  # --force ran both again
    after = grade_folder(subset, rubric, root / "hidden", grades, jobs=2, progress=False)
    assert {r["student"]: r["score"] for r in after} == expected and len(runs) == 2  # and resumes after it
    # A fixed grader (here: other code, as grader_digest sees it) grades again without --force.
    runs.clear()
    monkeypatch.setattr(autograder.batch, "grader_digest", lambda: "0" * 64)
    fixed = grade_folder(subset, rubric, root / "hidden", grades, jobs=2, progress=False)
    assert {r["student"]: r["score"] for r in fixed} == expected
    assert len(runs) == 2 and {r["grader_sha256"] for r in fixed} == {"0" * 64}


def test_gradescope_package_runs_one_submission(tmp_path, secret_file):
    model, vocabs = _lab2_model()
    make_hidden_set("date-translation", secret_file, tmp_path / "hidden", n=100)
    packaged = run_autograder(
        "gradescope",
        "--task",
        "date-translation",
        "--hidden",
        str(tmp_path / "hidden"),
        "--out",
        str(tmp_path / "autograder.zip"),
    )
    assert packaged.returncode == 0, packaged.stderr
    assert (tmp_path / "autograder.zip").stat().st_mode & 0o077 == 0  # it holds the answers: private to you
    inside = run_autograder(  # a kit the course may push to GitHub
        "gradescope", "--task", "date-translation", "--hidden", str(tmp_path / "hidden"), "--out", "x.zip"
    )
    assert inside.returncode == 2 and "inside the kit's folder" in inside.stderr
    assert not (REPO_ROOT / "x.zip").exists()
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = set(archive.namelist())
        assert {
            "setup.sh",
            "run_autograder",
            "rubric.toml",
            "hidden/targets.csv",
            "requirements.txt",
            "autograder/child.py",
            "labs/common/decoding.py",
        } <= names
        assert (archive.getinfo("run_autograder").external_attr >> 16) & 0o111
        assert not any(n.endswith(".keras") or "__pycache__" in n for n in names)
    submission = tmp_path / "submission"
    export(model, vocabs, task="date-translation", student_id="gs", out=submission / "submission.zip")
    ran = run_autograder(
        "gradescope-run",
        "--task",
        "date-translation",
        "--hidden",
        str(tmp_path / "hidden"),
        "--rubric",
        str(REPO_ROOT / "autograder" / "rubrics" / "date-translation.toml"),
        "--submission",
        str(submission),
        "--results",
        str(tmp_path / "results.json"),
    )
    assert ran.returncode == 0, ran.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["extra_data"]["attention_lab"]["status"] == "graded" and len(results["tests"]) == 2


def test_check_explains_a_missing_bundle_in_one_line(tmp_path):
    result = run_autograder("check", str(tmp_path / "nothing.zip"))
    assert result.returncode == 2 and "no bundle at" in result.stderr and "Traceback" not in result.stderr


# ---- bundles from an earlier kit ----

FIXTURES = REPO_ROOT / "tests" / "fixtures"


@pytest.mark.parametrize(
    "task,bundle",
    [
        ("date-translation", "lab2-bundle-kit-0.1.0.zip"),
        ("name-transliteration", "homework-bundle-kit-0.1.0.zip"),
    ],
)
def test_a_bundle_exported_by_an_earlier_kit_still_grades(task, bundle, tmp_path, secret_file):
    """Bundles that students exported with kit 0.1.0 (commit 10403d4, before the task registry)."""
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / bundle).write_bytes((FIXTURES / bundle).read_bytes())
    make_hidden_set(task, secret_file, tmp_path / "hidden", n=40)
    record = grade_folder(
        tmp_path / "subs", load_rubric(task=task), tmp_path / "hidden", tmp_path / "grades", progress=False
    )[0]
    assert record["status"] == "graded", record["message"]
    assert record["lines"][0]["points"] == 10 and record["examples"]  # architecture, and feedback shown
    # check finds the task in the old meta.json too (test_check_command checks both bundles)
    assert bundle_task(FIXTURES / bundle) == task


def _with_weights(bundle: Path, out: Path, change) -> Path:
    """A copy of ``bundle`` whose ``model.keras`` weights file ``change(h5file)`` has rewritten."""
    import h5py

    with zipfile.ZipFile(bundle) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(io.BytesIO(files["model.keras"])) as archive:
        model = {name: archive.read(name) for name in archive.namelist()}
    buffer = io.BytesIO(model["model.weights.h5"])
    with h5py.File(buffer, "a") as weights:
        change(weights)
    model["model.weights.h5"] = buffer.getvalue()
    files["model.keras"] = _zip_with(io.BytesIO(), model).getvalue()
    return _zip_with(out, files)


def _hide_behind_links(weights) -> None:
    """Move every variable under ``optimizer/`` and leave a soft link where Keras looks (it loads the
    same)."""
    import h5py

    paths = []
    weights.visititems(lambda name, item: paths.append(name) if isinstance(item, h5py.Dataset) else None)
    for k, path in enumerate(paths):
        weights.move(path, f"optimizer/hidden_{k}")
        weights[path] = h5py.SoftLink(f"/optimizer/hidden_{k}")


def test_weights_the_reader_cannot_count_earn_no_architecture_points(tmp_path, secret_file):
    """Unreadable weights would otherwise buy the parameter budget's points that the same model, readable and
    over the budget, loses: a declared-huge extra dataset makes the count fail (0 points, said why), soft
    links to datasets outside the model's groups are counted where they are used; the honest bundle keeps its
    points."""
    import h5py

    model, vocabs = _lab2_model()
    honest = export(
        model, vocabs, task="date-translation", student_id="honest", out=tmp_path / "subs" / "honest.zip"
    )
    _with_weights(
        honest,
        tmp_path / "subs" / "huge.zip",
        lambda w: w.create_dataset("layers/extra", shape=(2**40, 2**24), dtype="f4", chunks=(1, 16)),
    )
    _with_weights(honest, tmp_path / "subs" / "linked.zip", _hide_behind_links)
    _with_weights(
        honest,
        tmp_path / "subs" / "external.zip",
        lambda w: w.__setitem__("layers/elsewhere", h5py.ExternalLink("/etc/passwd", "/x")),
    )
    records = _graded_without_examples(tmp_path, "date-translation", secret_file)
    architecture = {student: record["lines"][0] for student, record in records.items()}
    assert architecture["honest"]["points"] == 10 and records["honest"]["parameters"] == model.count_params()
    assert records["linked"]["parameters"] == model.count_params() and architecture["linked"]["points"] == 10
    for student in ("huge", "external"):
        assert records[student]["parameters"] is None and architecture[student]["points"] == 0, records[
            student
        ]
        assert "could not count the parameters" in architecture[student]["message"]
    assert records["huge"]["score"] == records["honest"]["score"] - 10


def test_no_data_rides_outside_the_weights_in_model_keras_or_vocab_json(tmp_path):
    """The parameter count and the similarity check read model.weights.h5; the layer module may carry no data.
    So a model.keras with a file Keras does not write (a table a layer module could np.load), or a vocab.json
    with keys the kit does not write, bytes outside model.keras's files or a config.json as large as data, is
    refused before anything runs; an earlier kit's bundle still opens."""
    from autograder.bundle import BundleError, open_bundle

    fixture = FIXTURES / "homework-bundle-kit-0.1.0.zip"
    with zipfile.ZipFile(fixture) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    (tmp_path / "as-shipped").mkdir()
    assert (
        open_bundle(fixture, tmp_path / "as-shipped", max_bytes=30_000_000).meta["task"]
        == "name-transliteration"
    )

    def smuggled(model_entries: dict, vocab: dict | None = None) -> Path:
        buffer = io.BytesIO()
        with (
            zipfile.ZipFile(io.BytesIO(files["model.keras"])) as source,
            zipfile.ZipFile(buffer, "w") as target,
        ):
            for name in source.namelist():
                target.writestr(name, source.read(name))
            for name, data in model_entries.items():
                target.writestr(name, data)
        entries = {**files, "model.keras": buffer.getvalue()}
        if vocab is not None:
            entries["vocab.json"] = json.dumps({**json.loads(files["vocab.json"]), **vocab}).encode()
        return _zip_with(tmp_path / f"smuggled-{len(list(tmp_path.iterdir()))}.zip", entries)

    vocabularies = json.loads(files["vocab.json"])["vocabularies"]

    def prefixed(data: bytes) -> Path:
        return _zip_with(tmp_path / "prefixed.zip", {**files, "model.keras": data + files["model.keras"]})

    def padded_config(values: list) -> Path:  # a custom layer's config may hold any JSON a layer reads back
        def pad(config):
            config["config"]["layers"][-1]["config"]["table"] = values
            return config

        return _zip_with(tmp_path / "padded.zip", _replace_in_model(files, pad))

    table = io.BytesIO()
    np.save(table, np.ones((300, 300), dtype="float32"))  # 90,000 uncounted weights a layer could np.load
    for path, phrase in (
        (
            smuggled({"table.npy": table.getvalue()}),
            "model.keras holds 1 file(s) Keras does not write ('table.npy')",
        ),
        (smuggled({"assets/x.bin": b"\0" * 64}), "('assets/x.bin')"),
        (
            smuggled({}, {"weights": [0.5] * 1000}),
            "vocab.json holds key(s) the kit does not write ('weights')",
        ),
        (smuggled({}, {"vocabularies": {**vocabularies, "0.5 " * 1000: []}}), "does not write ('0.5 0.5"),
        (prefixed(b"0.5 " * 10_000), "model.keras holds 40,"),  # bytes zipfile skips and np.fromregex reads
        (padded_config([0.5] * 60_000), "the model's config.json is over 256 kB"),
    ):
        work = tmp_path / f"work-{path.stem}"
        work.mkdir()
        with pytest.raises(BundleError, match=re.escape(phrase)) as refused:
            open_bundle(path, work, max_bytes=30_000_000)
        assert refused.value.status == ("too-large" if "over 256 kB" in phrase else "malformed")


def _stored(name: str, value):
    """``value`` written into an HDF5 group as Keras never does, as a change for :func:`_changed_weights`."""
    return lambda weights: weights.create_dataset(name, data=value)


def _changed_weights(tmp_path: Path, change) -> dict:
    """What the weights reader says of the earlier kit's homework model with its weights file ``change``d."""
    import h5py

    from autograder.weights import read

    with zipfile.ZipFile(FIXTURES / "homework-bundle-kit-0.1.0.zip") as archive:
        model_file = archive.read("model.keras")
    with zipfile.ZipFile(io.BytesIO(model_file)) as archive:
        model = {name: archive.read(name) for name in archive.namelist()}
    buffer = io.BytesIO(model["model.weights.h5"])
    with h5py.File(buffer, "a") as weights:
        change(weights)
    model["model.weights.h5"] = buffer.getvalue()
    path = _zip_with(tmp_path / f"model-{len(list(tmp_path.iterdir()))}.keras", model)
    return read(str(path))


def test_data_in_the_weights_file_that_is_no_parameter_counts_as_parameters(tmp_path):
    """A layer can read its own weights file while it loads: whatever that file holds beside the model's
    numbers must count against the parameter budget, or two million floats ride as one "parameter" (a record
    type), or as optimizer state, attributes or bytes, which were not counted at all."""
    honest = _changed_weights(tmp_path, lambda weights: None)["parameters"]
    assert honest == 14_514  # the earlier kit's tiny homework model (model.count_params() when it was saved)

    def attributes(weights):
        for group in ("layers", "optimizer"):  # an HDF5 object takes under 64 kB of attributes
            weights[group].attrs["table"] = np.zeros(15_000, "f4")

    record = np.zeros(1, dtype=[("v", "<f4", (200_000,))])
    for change, extra in (
        (_stored("layers/key_value_attention/vars/t", record), 200_000),  # one element of 200,000 floats
        (_stored("layers/text", np.frombuffer(b"x" * 400_000, dtype="S400000")), 100_000),  # 400 kB of bytes
        (
            _stored("optimizer/vars/table", np.zeros(100_000, "f4")),
            100_000 - 2 * honest - 64,
        ),  # Adam: 2 slots
        (attributes, (120_000 - 65_536) // 4),  # past the 64 kB that count as none
    ):
        assert _changed_weights(tmp_path, change)["parameters"] >= honest + extra
    # Keras' own: a bfloat16 variable (2-byte elements) counts its elements, as model.count_params() does
    bfloat16 = np.zeros(1_000, dtype="V2")
    assert _changed_weights(tmp_path, _stored("layers/b16", bfloat16))["parameters"] == honest + 1_000
