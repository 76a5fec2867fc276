"""The student version of the homework, and the submission bundle students export."""

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from labs.common.errors import InputError
from labs.common.submission import export
from tests.conftest import REPO_ROOT, run_cli
from tools.colab import NOTEBOOKS, Repository, read_kit_repository
from tools.notebooks import build
from tools.release import release_homework, strip_solutions

SOLVED = """def area(r):
    # the area of a circle
    ### BEGIN SOLUTION
    ### TODO: return the area of a circle of radius r
    ### HINT: math.pi * r ** 2
    return math.pi * r ** 2
    ### END SOLUTION
"""


def test_a_solution_block_becomes_its_todo_a_hint_and_a_raise():
    result = strip_solutions(SOLVED, "homework/area.py")
    assert result.blocks == 1 and result.solution == ["return math.pi * r ** 2"]
    assert result.text == (
        "def area(r):\n    # the area of a circle\n"
        "    # TODO: return the area of a circle of radius r\n    # Hint: math.pi * r ** 2\n"
        "    raise NotImplementedError('TODO: return the area of a circle of radius r "
        "(homework/area.py)')\n"
    )
    namespace = {}
    exec(result.text, namespace)
    with pytest.raises(NotImplementedError, match="TODO: return the area"):
        namespace["area"](1.0)


@pytest.mark.parametrize(
    "text,problem",
    [
        (
            SOLVED.replace("    ### TODO: return the area of a circle of radius r\n", ""),
            "has no '### TODO: ...' line",
        ),
        (SOLVED.replace("    ### END SOLUTION\n", ""), "never closed"),
        (SOLVED + "    ### END SOLUTION\n", "outside a solution block"),
        (
            SOLVED.replace("    return math.pi", "    ### BEGIN SOLUTION\n    return math.pi"),
            "starts inside the block",
        ),
    ],
)
def test_malformed_markers_are_reported_with_file_and_line(text, problem):
    with pytest.raises(InputError, match=problem) as error:
        strip_solutions(text, "homework/area.py")
    assert str(error.value).startswith("homework/area.py:")


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "student-kit"
    return release_homework(
        out, log=lambda line: None, colab=Repository("course-org/kit-student", "fall-2026")
    )


def test_release_strips_every_solution_and_keeps_no_secrets(released):
    out = released.out
    assert released.stripped == {"homework/kv_attention.py": 4}
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {
        "labs/cli.py",
        "autograder/hidden.py",
        "homework/kv_attention.py",
        "homework/hw3_1_thai_name_transliteration.ipynb",
        "homework/selftest_reference.json",
        "datasets/thai-names/test.csv",
        "requirements.txt",
    } <= files
    assert not [
        f for f in files if f.startswith(("tests/", "benchmarks/", "runs/", ".git/")) or f.endswith(".keras")
    ]
    student = (out / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    assert "ops.matmul(weights, values)" not in student and "BEGIN SOLUTION" not in student
    assert student.count("raise NotImplementedError('TODO: ") == 4


def test_release_leaves_the_graders_hidden_words_out_of_every_file(released):
    import re

    from labs.name_transliteration.corpus import DICTIONARY
    from labs.name_transliteration.data import HIDDEN, vocabularies, word_group

    table = REPO_ROOT / "datasets" / "thai-names" / "romanization.csv"
    hidden = {
        line.split(",")[0]
        for line in table.read_text(encoding="utf-8").splitlines()[1:]
        if word_group(line.split(",")[0]) == HIDDEN and line.split(",")[1] != DICTIONARY
    }
    assert len(hidden) > 300
    released_table = released.out / "datasets" / "thai-names" / "romanization.csv"
    assert len(released_table.read_text(encoding="utf-8").splitlines()) == len(
        table.read_text(encoding="utf-8").splitlines()
    ) - len(hidden)
    for path in released.out.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".csv", ".json", ".txt"):
            assert not hidden & set(re.findall(r"[\u0e00-\u0e7f]+", path.read_text(encoding="utf-8"))), path
    assert vocabularies(released_table) == vocabularies(table)  # students' models read the same vocabulary
    result = run_cli(
        "data",
        "thai-names",
        "--n",
        "10",
        "--split",
        "hidden",
        "--out",
        str(released.out / "h.csv"),
        cwd=released.out,
    )
    assert result.returncode == 2 and "no hidden words" in result.stderr


def test_released_notebooks_open_in_colab_from_the_student_repository(released):
    readme = (released.out / "README.md").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        assert (
            f"https://colab.research.google.com/github/course-org/kit-student/blob/fall-2026/{notebook}"
            in readme
        )
        source = (released.out / notebook).with_suffix(".py")
        assert read_kit_repository(source.read_text(encoding="utf-8")) == Repository(
            "course-org/kit-student", "fall-2026"
        )
        cells = [c.source for c in nbformat.read(released.out / notebook, as_version=4).cells]
        built = nbformat.reads(build(source.read_text(encoding="utf-8")), as_version=4)
        assert cells == [c.source for c in built.cells], (
            f"{notebook} is not what the builder makes of its source"
        )


def test_released_layer_imports_and_its_first_call_raises_the_first_todo(released):
    spec = importlib.util.spec_from_file_location(
        "student_kv_attention", released.out / "homework" / "kv_attention.py"
    )
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        layer = module.KeyValueAttention(4)
        with pytest.raises(NotImplementedError, match=r"TODO: compute keys .* \(homework/kv_attention.py\)"):
            layer(np.zeros((1, 2, 3), "float32"), np.zeros((1, 4, 5), "float32"))
    finally:
        importlib.reload(importlib.import_module("homework.kv_attention"))  # the real layer, registered again


def test_released_selftest_fails_and_says_what_to_write(released):
    result = run_cli("selftest", "homework", cwd=released.out)
    assert result.returncode == 1
    from labs.name_transliteration.selftest import CHECKS

    # The import audit passes (the TODO file imports only keras); every other check waits for the TODOs.
    assert (
        "not written yet: TODO: compute keys" in result.stdout
        and f"1 of {len(CHECKS)} checks passed" in result.stdout
    )


def test_the_released_command_line_has_no_instructor_tooling(released):
    assert not (released.out / "tools").exists()
    env = {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH"
    }  # the student kit alone, as a student has it
    result = subprocess.run(
        [sys.executable, "-m", "labs", "--help"],
        cwd=released.out,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    commands = set(re.search(r"\{([a-z,-]+)\}", result.stdout).group(1).split(","))
    assert {"train", "selftest", "export", "translate", "evaluate"} <= commands
    assert not commands & {"release", "demo", "colab-links", "notebooks"}, commands


def test_the_released_gitignore_is_the_students_and_keeps_their_runs_and_bundles_out_of_git(released):
    """The kit's own .gitignore: nothing of the instructor's (private files, GPU batches of the benchmarks,
    which the kit does not have), and git ignores what a student makes."""
    ignored = (released.out / ".gitignore").read_text(encoding="utf-8")
    assert "instructor" not in ignored.lower() and "gpu-work" not in ignored and "benchmarks" not in ignored
    made = ["runs/names/model.keras", "submission.zip", "homework/__pycache__/kv_attention.cpython-311.pyc"]
    kept = ["homework/kv_attention.py", "README.md"]
    subprocess.run(["git", "init", "-q", str(released.out)], check=True, timeout=60)
    try:
        result = subprocess.run(
            ["git", "-C", str(released.out), "check-ignore", "--no-index", *made, *kept],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(released.out / ".git")
    assert result.stdout.split() == made


def test_training_an_unfinished_layer_stops_at_the_self_test_in_one_line(released, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "labs",
            "train",
            "name-transliteration",
            "--tiny",
            "--out",
            str(tmp_path / "run"),
        ],
        cwd=released.out,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert (
        "your layer fails the self-test" in result.stderr
        and "not written yet: TODO: compute keys" in result.stderr
    )
    assert not (tmp_path / "run").exists()  # no empty run folder left to puzzle over


def test_a_layer_file_that_imports_tensorflow_fails_the_self_test_on_the_graders_rule(released):
    layer = released.out / "homework" / "kv_attention.py"
    todo = layer.read_text(encoding="utf-8")
    try:  # `from tensorflow import keras` even breaks the import: the rule is still what the student reads
        layer.write_text(
            todo.replace("import keras\n", "from tensorflow import keras\n", 1), encoding="utf-8"
        )
        result = run_cli("selftest", "homework", cwd=released.out)
    finally:
        layer.write_text(todo, encoding="utf-8")
    assert result.returncode == 1
    assert "imports 'tensorflow' (line" in result.stdout and "may import only keras" in result.stdout
    assert (
        f"0 of {len(__import__('labs.name_transliteration.selftest', fromlist=['CHECKS']).CHECKS)} checks "
        f"passed" in result.stdout
    )


def test_released_notebook_runs_up_to_the_first_todo_and_stops_there(released, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_TINY", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    folder = released.out / "homework"
    notebook = nbformat.read(folder / "hw3_1_thai_name_transliteration.ipynb", as_version=4)
    with pytest.raises(CellExecutionError, match="not written yet: TODO: compute keys"):
        NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
        ).execute()
    outputs = "\n".join(
        o.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for o in cell.get("outputs", [])
    )
    assert "Running on the" in outputs and "trained in" not in outputs


def test_release_leaves_out_weights_secrets_and_hidden_sets(tmp_path):
    from tools.release import _excluded

    for path in (
        "runs/x/model.keras",
        "homework/model.h5",
        "hidden/lab2/inputs.csv",
        "grading/targets.csv",
        "secret.txt",
        "homework/.ipynb_checkpoints/x.ipynb",
        "labs/__pycache__/cli.cpython-311.pyc",
    ):
        assert _excluded(Path(path)), path
    for path in (
        "autograder/hidden.py",
        "labs/cli.py",
        "datasets/thai-names/test.csv",
        "homework/kv_attention.py",
    ):
        assert not _excluded(Path(path)), path


def test_release_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "old.txt").write_text("x")
    result = run_cli("release", "homework", "--out", str(tmp_path))
    assert result.returncode == 2 and "is not an empty folder" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["old.txt"]


# ---- submission bundles ----


@pytest.fixture(scope="module")
def homework_model():
    import keras

    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    return build_model(NameTransliterationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"])), vocabs


def test_export_writes_a_zip_bundle_that_loads_with_only_its_own_layer_module(homework_model, tmp_path):
    model, vocabs = homework_model
    bundle = export(
        model,
        vocabs,
        task="name-transliteration",
        student_id="6512345678",
        out=tmp_path / "sub.zip",
        predictions=[{"source": "สมชาย ใจดี", "prediction": "Somchai Jaidee"}],
        device="CPU",
    )
    with zipfile.ZipFile(bundle) as archive:
        assert sorted(archive.namelist()) == [
            "custom_layers.py",
            "meta.json",
            "model.keras",
            "predictions.csv",
            "vocab.json",
        ]
        archive.extractall(tmp_path / "unzipped")
        meta = json.loads(archive.read("meta.json"))
    assert meta["student_id"] == "6512345678" and meta["task"] == "name-transliteration"
    assert {"python", "tensorflow", "keras", "attention_lab"} <= set(meta["libraries"])
    assert (tmp_path / "unzipped" / "custom_layers.py").read_bytes() == (
        REPO_ROOT / "homework" / "kv_attention.py"
    ).read_bytes()
    # What the grader does: a fresh process that knows nothing of the kit imports custom_layers.py, then
    # loads.
    script = (
        "import importlib.util, sys, numpy as np, keras\n"
        "spec = importlib.util.spec_from_file_location('custom_layers', 'custom_layers.py')\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "model = keras.saving.load_model('model.keras', safe_mode=True)\n"
        "print(model.predict_on_batch([np.array([[5, 6, 7]]), np.array([[1, 4]])]).shape)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    loaded = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path / "unzipped",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.strip().endswith(f"(1, 2, {len(vocabs['target'])})")


def test_a_trained_model_keras_cannot_read_back_is_exported_whole_for_the_grader_to_judge(tmp_path):
    """Export leaves a trained model's optimizer state and compile settings out by reading the saved model back;
    a model Keras will not read back (here a Lambda layer, which the grader refuses) is exported whole, as
    before, not stopped by a traceback: the grader's check names what it refuses."""
    import keras

    from autograder.allowlist import check_config
    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.data import vocabularies as date_vocabularies
    from labs.date_translation.model import build_model as build_translator

    vocabs = date_vocabularies()
    plain = build_translator(DateTranslationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"]))
    lambda_model = keras.Model(plain.inputs, keras.layers.Lambda(lambda p: p * 1.0)(plain.outputs[0]))
    configs = {}
    for name, model in (("plain", plain), ("lambda", lambda_model)):
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.optimizer.build(model.trainable_variables)
        with contextlib.ExitStack() as stack:
            if name == "lambda":  # the student is told, and how to check the bundle
                stack.enter_context(
                    pytest.warns(UserWarning, match="saved whole.*python -m autograder check")
                )
            bundle = export(model, vocabs, task="date-translation", student_id=name, out=tmp_path / name)
        with zipfile.ZipFile(bundle / "model.keras") as saved:
            configs[name] = json.loads(saved.read("config.json"))
    assert not configs["plain"].get("compile_config")
    assert configs["lambda"]["compile_config"]["loss"] == "sparse_categorical_crossentropy"  # saved whole
    verdict = check_config(configs["lambda"])
    assert not verdict.allowed and "'Lambda'" in verdict.message


def test_export_rejects_mistakes_before_writing_anything(homework_model, tmp_path):
    model, vocabs = homework_model
    with pytest.raises(InputError, match="student_id '../x' must start with a letter or a digit"):
        export(model, vocabs, task="name-transliteration", student_id="../x", out=tmp_path / "a")
    with pytest.raises(InputError, match="YOUR_ID is the README's placeholder: put your university id"):
        export(model, vocabs, task="name-transliteration", student_id="YOUR_ID", out=tmp_path / "a")
    with pytest.raises(InputError, match="unknown task 'names'"):
        export(model, vocabs, task="names", student_id="s1", out=tmp_path / "a")
    with pytest.raises(InputError, match="does not accept the date-generation inputs"):
        export(
            model, {"target": vocabs["target"]}, task="date-generation", student_id="s1", out=tmp_path / "a"
        )
    with pytest.raises(InputError, match="carries no custom layers"):
        export(
            model,
            vocabs,
            task="date-translation",
            student_id="s1",
            out=tmp_path / "a",
            layer_module=REPO_ROOT / "homework" / "kv_attention.py",
        )
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("x")
    with pytest.raises(InputError, match="not a submission bundle"):  # with or without overwrite
        export(model, vocabs, task="name-transliteration", student_id="s1", out=tmp_path / "taken")
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "meta.json").write_text("{}")
    with pytest.raises(InputError, match="already exists"):  # an earlier bundle: replaced only if asked
        export(model, vocabs, task="name-transliteration", student_id="s1", out=tmp_path / "bundle")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle", "taken"]
