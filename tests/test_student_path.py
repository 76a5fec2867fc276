"""The student's path from a trained model to a bundle: export checks before it writes, keeps an earlier
bundle on failure, refuses a layer file that changed since training; training survives an interruption; the
command line is quiet and logs one line per epoch when piped."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import keras
import numpy as np
import pytest

from labs import tasks
from labs.common.errors import InputError
from labs.common.submission import export, layer_sha256
from labs.name_transliteration.config import NameTransliterationConfig
from labs.name_transliteration.train import load_trained, train
from labs.name_transliteration.transliterate import transliterate
from tests.conftest import REPO_ROOT, run_cli

LAYER = REPO_ROOT / "homework" / "kv_attention.py"
TASK = "name-transliteration"


@pytest.fixture(scope="module")
def tiny_run():
    return train(NameTransliterationConfig.tiny(), verbose=0)


def _export(run, out, **kwargs):
    return export(run.model, run.vocabs, task=TASK, student_id="6512345678", out=out, device="CPU", **kwargs)


def test_a_run_records_the_layer_file_it_was_trained_with(tiny_run):
    assert tiny_run.layer_sha256 == layer_sha256(LAYER)


def test_export_refuses_a_layer_file_that_changed_since_training_and_keeps_the_earlier_bundle(
    tiny_run, tmp_path
):
    bundle = _export(tiny_run, tmp_path / "submission.zip", trained_with=tiny_run.layer_sha256)
    before = bundle.read_bytes()
    edited = tmp_path / "kv_attention.py"
    edited.write_text(
        LAYER.read_text(encoding="utf-8").replace(
            "scores = scores / ops.sqrt(ops.cast(self.key_dim, scores.dtype))", "pass"
        ),
        encoding="utf-8",
    )
    with pytest.raises(
        InputError,
        match="changed since this model was trained and now fails the self-test .*dot score matches the reference",
    ) as error:
        _export(tiny_run, bundle, layer_module=edited, trained_with=tiny_run.layer_sha256, overwrite=True)
    assert "or fix it (python -m labs selftest homework) and train again" in str(error.value)
    assert bundle.read_bytes() == before
    # Without the recorded hash, the self-test still stands between the edited file and a bundle.
    with pytest.raises(InputError, match="the self-test fails .*dot score matches the reference"):
        _export(tiny_run, bundle, layer_module=edited, overwrite=True)
    assert bundle.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kv_attention.py", "submission.zip"]


def test_a_comment_added_after_training_does_not_change_the_code_export_checks(tiny_run, tmp_path):
    commented = tmp_path / "kv_attention.py"
    commented.write_text(
        LAYER.read_text(encoding="utf-8") + "\n# my notes: done, 24 November\n", encoding="utf-8"
    )
    assert layer_sha256(commented) == tiny_run.layer_sha256
    bundle = _export(
        tiny_run, tmp_path / "submission.zip", layer_module=commented, trained_with=tiny_run.layer_sha256
    )
    with zipfile.ZipFile(bundle) as archive:
        assert archive.read("custom_layers.py") == commented.read_bytes()


def test_export_runs_the_graders_import_audit_before_writing(tiny_run, tmp_path):
    refused = tmp_path / "kv_attention.py"
    refused.write_text(
        LAYER.read_text(encoding="utf-8").replace(
            "from keras import ops\n", "from keras import ops\nimport tensorflow as tf\n"
        ),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="imports 'tensorflow' .*the grader would refuse the bundle"):
        _export(tiny_run, tmp_path / "submission.zip", layer_module=refused)
    assert not (tmp_path / "submission.zip").exists()


def test_export_refuses_a_model_whose_outputs_are_not_numbers(tiny_run, tmp_path):
    weights = tiny_run.model.get_weights()
    try:
        tiny_run.model.set_weights(
            [np.full_like(w, np.nan) if i == len(weights) - 1 else w for i, w in enumerate(weights)]
        )
        with pytest.raises(InputError, match="hold NaN or inf"):
            _export(tiny_run, tmp_path / "submission.zip")
    finally:
        tiny_run.model.set_weights(weights)
    assert list(tmp_path.iterdir()) == []


def test_overwrite_replaces_a_bundle_folder_whole(tiny_run, tmp_path):
    folder = tmp_path / "bundle"
    _export(tiny_run, folder, predictions=[{"source": "ก", "prediction": "K"}])
    assert (folder / "predictions.csv").is_file()
    with pytest.raises(InputError, match="already exists"):
        _export(tiny_run, folder)
    _export(tiny_run, folder, overwrite=True)
    assert sorted(p.name for p in folder.iterdir()) == [
        "custom_layers.py",
        "meta.json",
        "model.keras",
        "vocab.json",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["bundle"]


def test_overwrite_never_replaces_a_folder_that_is_not_a_bundle(tiny_run, tmp_path):
    """`--out homework --overwrite` (or runs/, or a folder of notes) must not take the student's own files
    with it: only an earlier bundle is replaced, from the function and from the command line alike."""
    homework = tmp_path / "homework"
    homework.mkdir()
    (homework / "kv_attention.py").write_text("# my layer\n")
    bundle_like = tmp_path / "notes"  # a bundle's meta.json beside a file of the student's own
    bundle_like.mkdir()
    (bundle_like / "meta.json").write_text("{}")
    (bundle_like / "notes.txt").write_text("important")
    for folder in (homework, bundle_like):
        before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
        with pytest.raises(InputError, match="not a submission bundle.*never replaces"):
            _export(tiny_run, folder, overwrite=True)
        assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before
    train(NameTransliterationConfig.tiny(), out_dir=tmp_path / "run", verbose=0)
    refused = run_cli(
        "export", "--model", str(tmp_path / "run"), "--student-id", "6512345678", "--out", str(homework),
        "--overwrite",
    )  # fmt: skip
    assert refused.returncode != 0 and "not a submission bundle" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert (homework / "kv_attention.py").read_text() == "# my layer\n"
    folder = run_cli("export", "--model", str(tmp_path / "run"), "--student-id", "6512345678", "--out",
                     str(tmp_path / "sub"))  # fmt: skip
    assert folder.returncode == 0 and (tmp_path / "sub" / "meta.json").is_file(), folder.stderr
    assert f"the file to hand in is a .zip: export again with --out {tmp_path / 'sub'}.zip" in folder.stdout


def _quiet_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL")}
    return env


# `python -m labs ARGS` as a terminal's foreground job starts it: Ctrl-C raises KeyboardInterrupt. A
# process inherits an ignored SIGINT, and Python keeps it ignored: `make test &` from a script (a shell
# without job control) would otherwise start this test's training deaf to the signal it sends.
AS_A_FOREGROUND_JOB = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('labs', run_name='__main__', alter_sys=True)"
)


@contextlib.contextmanager
def in_a_terminal(*command: str):
    """``python -m labs COMMAND`` as a terminal's foreground job (Ctrl-C raises KeyboardInterrupt), its output
    piped; killed on the way out if it still runs (a training that did not stop is not left running)."""
    process = subprocess.Popen(
        [sys.executable, "-c", AS_A_FOREGROUND_JOB, *command],
        cwd=REPO_ROOT,
        env=_quiet_env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_an_interrupted_training_keeps_its_last_whole_epoch_and_exports_it(tmp_path):
    out = tmp_path / "names"
    # far more epochs than the poll below can miss on a loaded machine; --score: a --tiny run with another flag
    # is still one, for export's note
    command = ["train", TASK, "--tiny", "--epochs", "400", "--score", "additive", "--out", str(out)]
    with in_a_terminal(*command) as process:
        deadline = time.monotonic() + 240
        while not (out / "metrics.json").is_file() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)  # what Ctrl-C does
        stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout + stderr
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    done = metrics["epochs_done"]
    assert 1 <= done < 400 and len(metrics["loss_nats_per_char"]["train"]) == done
    assert f"holds the model of epoch {done} of 400" in stdout
    assert "Traceback" not in stderr

    exported = run_cli(
        "export", "--model", str(out), "--student-id", "6512345678", "--out", str(tmp_path / "submission.zip")
    )
    assert exported.returncode == 0, exported.stderr
    assert f"this run stopped after epoch {done} of 400" in exported.stdout
    assert "trained on 1,000 examples, as a --tiny run does" in exported.stdout
    assert (
        "default seed" not in exported.stdout
    )  # a tiny run is no model to hand in: the seed's note would be noise
    checked = subprocess.run(
        [sys.executable, "-m", "autograder", "check", str(tmp_path / "submission.zip"), "--task", TASK],
        cwd=REPO_ROOT,
        env=_quiet_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_ctrl_c_while_an_epoch_is_saved_waits_for_the_save_then_stops(tmp_path):
    """Ctrl-C that lands as the run folder is written (matplotlib drawing the curve) came out of the C code as
    "ValueError: Invalid affine transformation matrix": a traceback, and a folder half written. It is held
    until the save ends, then stops training as any Ctrl-C does."""
    import tensorflow as tf

    from labs.common.training import fit

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    rows = tf.data.Dataset.from_tensor_slices((np.zeros((32, 4), "float32"), np.zeros(32, "int32"))).batch(8)
    saved = []

    def each_epoch(history, seconds):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the save
        time.sleep(0.2)  # a handler that raises would have raised by now
        saved.append(len(history["train"]))

    history, _ = fit(
        model,
        rows,
        rows,
        NameTransliterationConfig(epochs=5),
        description="a toy",
        verbose=0,
        each_epoch=each_epoch,
    )
    assert saved == [1] and len(history["train"]) == 1  # the save finished; no epoch began after it
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C works again as before


def test_a_training_stopped_before_its_first_epoch_ended_leaves_no_folder_behind(tmp_path):
    out = tmp_path / "runs" / "names"  # neither folder is there yet
    command = ["train", TASK, "--tiny", "--train-size", "60000", "--seed", "7", "--out", str(out)]
    with in_a_terminal(*command) as process:
        first = process.stdout.readline()  # "Training the ...": the first epoch starts
        assert first.startswith("Training the"), first
        assert not out.parent.exists()  # the run folder comes with the first whole epoch
        process.send_signal(signal.SIGINT)  # Ctrl-C while the first epoch runs
        stdout, stderr = process.communicate(timeout=120)
        stdout = first + stdout
    # (On a loaded machine the signal may come before the first batch, which says nothing of a model to keep.)
    assert process.returncode == 130 and "no partial file was left behind" in stderr, stdout + stderr
    assert not (tmp_path / "runs").exists(), list(tmp_path.rglob("*"))


@pytest.mark.parametrize("task", [t.name for t in tasks.all_tasks()])
def test_train_stopped_before_its_first_epoch_leaves_no_folder_behind_in_python_too(
    task, tmp_path, monkeypatch
):
    # The notebook's path: the lab's train() itself, stopped (the notebook's stop button) in the first epoch.
    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(keras.Model, "fit", stopped)
    lab = tasks.get(task)
    with pytest.raises(KeyboardInterrupt):
        lab.train(lab.config.tiny(), out_dir=tmp_path / "runs" / "first", verbose=0)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()  # a folder that was there before the run stays, empty as it was
    with pytest.raises(KeyboardInterrupt):
        lab.train(lab.config.tiny(), out_dir=tmp_path / "kept", verbose=0)
    assert [p.name for p in tmp_path.rglob("*")] == ["kept"]


def test_a_run_folder_that_cannot_be_made_is_refused_before_training(tmp_path):
    (tmp_path / "runs").write_text("a file, not a folder", encoding="utf-8")
    with pytest.raises(InputError, match="cannot create the folder"):
        train(NameTransliterationConfig.tiny(), out_dir=tmp_path / "runs" / "names", verbose=0)
    assert (tmp_path / "runs").read_text(encoding="utf-8") == "a file, not a folder"


def test_a_run_folder_loads_as_the_run_that_training_returned(tmp_path):
    # The notebook's TRAIN = False: a model trained in a terminal, used by the cells below training.
    trained = train(NameTransliterationConfig.tiny(seed=3), out_dir=tmp_path / "names", verbose=0)
    loaded = load_trained(tmp_path / "names")
    assert (loaded.task, loaded.config, loaded.layer_sha256) == (TASK, trained.config, trained.layer_sha256)
    for name in ("train", "validation"):  # metrics.json keeps 6 decimals
        assert loaded.history[name] == pytest.approx(trained.history[name], abs=1e-6)
    assert loaded.unit == trained.unit and loaded.epochs_done == trained.epochs_done == 1
    assert loaded.summary().split(" in ")[0] == trained.summary().split(" in ")[0]  # "Trained 1 epoch"
    names = ["สมชาย ใจดี", "ปวีณา รัตนพงศ์"]
    assert [r.output for r in transliterate(loaded.model, loaded.vocabs, names, beam=3)] == [
        r.output for r in transliterate(trained.model, trained.vocabs, names, beam=3)
    ]
    with pytest.raises(InputError, match="set TRAIN = True"):
        load_trained(tmp_path / "nothing-here")
    (tmp_path / "names" / "metrics.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="no record of its training"):
        load_trained(tmp_path / "names")


def test_cli_export_of_a_run_whose_layer_changed_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "names"
    train(NameTransliterationConfig.tiny(), out_dir=out, verbose=0)  # the run folder that `train` writes
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["layer_sha256"] == layer_sha256(LAYER)
    metrics["layer_sha256"] = "0" * 64  # as if kv_attention.py had been edited since
    (out / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    result = run_cli(
        "export", "--model", str(out), "--student-id", "6512345678", "--out", str(tmp_path / "s.zip")
    )
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1
        and "homework/kv_attention.py changed since this model was trained" in result.stderr
    )
    assert not (tmp_path / "s.zip").exists()


NOISE = ("E0000", "W0000", "I0000", "cuInit", "oneDNN", "absl", "rebuild TensorFlow", "cuda")


def test_commands_print_no_tensorflow_start_up_noise_unless_asked(tmp_path):
    quiet = subprocess.run(
        [sys.executable, "-m", "labs", "selftest", "homework"],
        cwd=REPO_ROOT,
        env=_quiet_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert not [word for word in NOISE if word in quiet.stderr], quiet.stderr
    # The same command with --verbose shows what TensorFlow says at start-up (on any machine: at least its
    # oneDNN or CPU-feature lines), so the check above is not passing for want of anything to hide.
    verbose = subprocess.run(
        [sys.executable, "-m", "labs", "--verbose", "selftest", "homework"],
        cwd=REPO_ROOT,
        env=_quiet_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verbose.returncode == 0 and [word for word in NOISE if word in verbose.stderr], verbose.stderr


def test_training_says_what_it_replaces_and_a_tiny_run_never_replaces_a_trained_model(tmp_path):
    # An earlier run folder, as a real training leaves it (the model's bytes do not matter here).
    names = tmp_path / "runs" / "names"
    names.mkdir(parents=True)
    (names / "model.keras").write_bytes(b"the model to hand in")
    (names / "metrics.json").write_text(
        json.dumps({"config": {"train_size": 100_000, "seed": 5678}, "epochs_done": 6}), encoding="utf-8"
    )
    before = {p.name: p.read_bytes() for p in names.iterdir()}
    for tiny in (["--tiny"], ["--tiny", "--seed", "5678", "--epochs", "3"]):  # from the command line
        refused = run_cli("train", TASK, *tiny, "--out", str(names))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stderr.strip().count("\n") == 0 and "Traceback" not in refused.stderr
        assert "holds a model trained on 100,000 examples" in refused.stderr
        assert "give the smoke run a folder of its own (--out runs/tiny)" in refused.stderr
    with pytest.raises(InputError, match="learns next to nothing"):  # and from Python (the notebook's path)
        train(NameTransliterationConfig.tiny(), out_dir=names, verbose=0)
    assert {p.name: p.read_bytes() for p in names.iterdir()} == before

    # A bigger run may replace it, and says so; without --seed it says whose seed it trains with.
    bigger = run_cli("train", TASK, "--tiny", "--train-size", "1001", "--quiet", "--out", str(names))
    assert bigger.returncode == 0, bigger.stdout + bigger.stderr
    assert f"note: {names} already holds a model (6 epochs, seed 5678); this run replaces it" in bigger.stdout
    assert "note: no --seed: this run uses the default seed (1)" in bigger.stdout
    assert (names / "model.keras").read_bytes() != before["model.keras"]
    again = NameTransliterationConfig(seed=5678).replacing(names)  # what the next run would print
    assert again.startswith(f"note: {names} already holds a model (1 epoch, seed 1);"), again
    assert NameTransliterationConfig().replacing(tmp_path / "runs" / "new") is None
    assert (
        run_cli("train", TASK, "--tiny", "--out", str(names)).returncode == 2
    )  # 1,001 examples: no tiny run
    smoke = run_cli("train", TASK, "--tiny", "--quiet", "--out", str(tmp_path / "runs" / "tiny"))
    assert smoke.returncode == 0 and "note: a --tiny run (1,000 examples) is a smoke test" in smoke.stdout
    assert "default seed" not in smoke.stdout  # one note is enough


def test_piped_training_logs_one_line_per_epoch(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "labs",
            "train",
            TASK,
            "--tiny",
            "--epochs",
            "2",
            "--out",
            str(tmp_path / "names"),
        ],
        cwd=REPO_ROOT,
        env=_quiet_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    epochs = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in epochs] == ["epoch 1/2", "epoch 2/2"]
    assert "validation loss" in epochs[0] and "accuracy" in epochs[0] and epochs[0].endswith(" s)")
    assert "\x1b" not in result.stdout and "\r" not in result.stdout and "\b" not in result.stdout
    assert len(result.stdout.splitlines()) < 12, result.stdout
