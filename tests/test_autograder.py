"""The autograder: hostile bundles each get their status and message, real bundles get graded end to end."""

import csv
import io
import json
import re
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder.allowlist import check_config
from autograder.batch import grade_folder
from autograder.hidden import load_hidden_set, make_hidden_set
from autograder.rubric import RubricError, load_rubric
from autograder.sandbox import isolation_available
from labs.common.errors import InputError
from labs.common.submission import export
from tests.conftest import REPO_ROOT

SECRET = "a-course-secret-0123456789abcdef"


def run_autograder(*args: str, cwd: Path = REPO_ROOT):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _rubric(tmp_path: Path, task: str, **limits) -> Path:
    """The default rubric of ``task`` with some limits changed (tests keep timeouts short)."""
    text = (REPO_ROOT / "autograder" / "rubrics" / f"{task}.toml").read_text(encoding="utf-8")
    for key, value in limits.items():
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
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
    model = {"class_name": "Functional", "module": "keras.src.models.functional",
             "config": {"layers": [_layer("Embedding"), _layer("LSTM"), _layer("AdditiveAttention"),
                                   {"class_name": "__keras_tensor__", "module": None}]}}
    verdict = check_config(model)
    assert verdict.allowed and {"LSTM", "AdditiveAttention"} <= verdict.classes
    model["config"]["layers"].append(_layer("Lambda"))
    assert "'Lambda'" in check_config(model).message and not check_config(model).allowed
    model["config"]["layers"][-1] = _layer("system", module="os")
    assert "from the module 'os'" in check_config(model).message
    model["config"]["layers"][-1] = _layer("KeyValueAttention", "homework.kv_attention", "attention_lab>KeyValueAttention")
    assert "this task allows no custom objects" in check_config(model).message
    allowed = ("attention_lab>KeyValueAttention",)
    assert "no custom_layers.py" in check_config(model, allowed_custom=allowed).message
    assert check_config(model, allowed_custom=allowed, custom_layers_present=True).allowed


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
    public = {r["source"] for split in ("train", "dev", "test")
              for r in csv.DictReader(open(REPO_ROOT / "datasets" / "thai-names" / f"{split}.csv", encoding="utf-8"))}
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


def test_hidden_set_refuses_a_short_secret(tmp_path):
    (tmp_path / "s.txt").write_text("1234")
    result = run_autograder("hidden-set", "--task", "date-translation", "--seed-file", str(tmp_path / "s.txt"),
                            "--out", str(tmp_path / "h"))
    assert result.returncode == 2 and "use at least 16 random characters" in result.stderr
    assert not (tmp_path / "h").exists()


# ---- bundles, hostile and honest ----

def _lab2_model():
    import keras

    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.data import vocabularies
    from labs.date_translation.model import build_model

    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    return build_model(DateTranslationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"])), vocabs


def _zip_with(path: Path, entries: dict[str, bytes], symlink: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def _bundle_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _replace_in_model(files: dict[str, bytes], change) -> dict[str, bytes]:
    """The bundle with its model.keras's config.json passed through ``change``."""
    source = zipfile.ZipFile(io.BytesIO(files["model.keras"]))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "config.json":
                data = json.dumps(change(json.loads(data))).encode()
            target.writestr(name, data)
    return {**files, "model.keras": buffer.getvalue()}


@pytest.fixture(scope="module")
def lab2_submissions(tmp_path_factory):
    """A folder of lab 2 submissions: one honest bundle and one of each kind of trouble."""
    import keras

    root = tmp_path_factory.mktemp("lab2")
    subs = root / "submissions"
    subs.mkdir()
    model, vocabs = _lab2_model()
    export(model, vocabs, task="date-translation", student_id="honest", out=subs / "honest.zip")
    export(model, vocabs, task="date-translation", student_id="folder", out=subs / "as-a-folder")
    good = _bundle_files(subs / "as-a-folder")

    inputs = keras.Input((None,), dtype="int32")
    lambda_model = keras.Model(inputs, keras.layers.Lambda(lambda x: keras.ops.cast(x, "float32") * 2)(inputs))
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

    language_model = keras.Sequential([keras.Input((None,), dtype="int32"), keras.layers.Embedding(20, 4),
                                       keras.layers.LSTM(4, return_sequences=True),
                                       keras.layers.Dense(len(vocabs["target"]), activation="softmax")])
    language_model.save(root / "lm.keras")
    _zip_with(subs / "wrong-signature.zip", {**good, "model.keras": (root / "lm.keras").read_bytes()})

    broken, _ = _lab2_model()
    kernel = broken.get_layer("next_char").kernel
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))
    broken.save(root / "nan.keras")
    _zip_with(subs / "nan-output.zip", {**good, "model.keras": (root / "nan.keras").read_bytes()})
    (subs / "empty").mkdir()
    return root


EXPECTED_LAB2 = {
    "honest": ("graded", ""), "as-a-folder": ("graded", ""),
    "lambda": ("disallowed", "'Lambda'"),
    "foreign-module": ("disallowed", "from the module 'os'"),
    "traversal": ("unsafe", "path traversal"),
    "symlink": ("unsafe", "symbolic link"),
    "zip-bomb": ("unsafe", "zip bomb"),
    "h5-renamed": ("malformed", "HDF5"),
    "wrong-signature": ("wrong-signature", "[source (batch, S), target_in (batch, T)]"),
    "nan-output": ("nan-output", "NaN"),
    "empty": ("malformed", "empty"),
}


@pytest.fixture(scope="module")
def lab2_graded(lab2_submissions, secret_file, tmp_path_factory):
    root = lab2_submissions
    make_hidden_set("date-translation", secret_file, root / "hidden", n=200)
    rubric = load_rubric(_rubric(tmp_path_factory.mktemp("rubric"), "date-translation", wall_seconds=120))
    records = grade_folder(root / "submissions", rubric, root / "hidden", root / "grades", jobs=2, progress=False)
    return root, rubric, {r["student"]: r for r in records}


def test_every_bundle_gets_its_status_and_the_batch_completes(lab2_graded):
    root, _, records = lab2_graded
    assert set(records) == set(EXPECTED_LAB2)
    for student, (status, phrase) in EXPECTED_LAB2.items():
        assert records[student]["status"] == status, (student, records[student]["message"])
        assert phrase in records[student]["message"], (student, records[student]["message"])
    assert not (root / "escaped.txt").exists() and not (root / "submissions" / "escaped.txt").exists()
    # a refused bundle still gets the architecture points its (readable) config earns
    assert records["nan-output"]["score"] == 10 and records["lambda"]["score"] == 0


def test_gradebook_leaderboard_feedback_and_gradescope_results(lab2_graded):
    root, rubric, records = lab2_graded
    grades = root / "grades"
    with open(grades / "gradebook.csv", encoding="utf-8") as handle:
        book = list(csv.DictReader(handle))
    assert [r["student"] for r in book] == sorted(EXPECTED_LAB2)
    assert set(book[0]) >= {"student", "score", "max_score", "exact_match", "status", "message"}
    with open(grades / "leaderboard.csv", encoding="utf-8") as handle:
        assert {r["student"] for r in csv.DictReader(handle)} == {"honest", "as-a-folder"}
    for student in EXPECTED_LAB2:
        result = json.loads((grades / "results" / f"{student}.json").read_text(encoding="utf-8"))
        assert isinstance(result["score"], (int, float)) and result["score"] == records[student]["score"]
        assert result["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        for test in result["tests"]:
            assert {"name", "score", "max_score", "output"} <= set(test) and 0 <= test["score"] <= test["max_score"]
            assert test["status"] in ("passed", "failed")
        assert sum(t["max_score"] for t in result["tests"]) == rubric.max_score
        assert all({"name", "value"} <= set(entry) for entry in result["leaderboard"])
        assert (grades / "feedback" / f"{student}.md").is_file() and (grades / "feedback" / f"{student}.html").is_file()
    honest = (grades / "feedback" / "honest.md").read_text(encoding="utf-8")
    assert "## Examples from the public dev set" in honest and "honest-example-1.png" in honest
    assert "data:image/png;base64," in (grades / "feedback" / "honest.html").read_text(encoding="utf-8")
    assert "Lambda layers and custom modules are not loaded" in (grades / "feedback" / "lambda.md").read_text(encoding="utf-8")


def test_a_rerun_resumes_and_grading_again_gives_the_same_scores(lab2_graded, monkeypatch):
    import autograder.grade

    root, rubric, records = lab2_graded
    runs = []
    real_run_child = autograder.grade.run_child
    monkeypatch.setattr(autograder.grade, "run_child", lambda *a, **k: runs.append(1) or real_run_child(*a, **k))
    again = grade_folder(root / "submissions", rubric, root / "hidden", root / "grades", jobs=2, progress=False)
    assert {r["student"]: r["score"] for r in again} == {s: r["score"] for s, r in records.items()}
    assert runs == []   # nothing was run again: every result came from results/
    forced = grade_folder(root / "submissions", rubric, root / "hidden", root / "grades", jobs=2, force=True,
                          progress=False)
    assert {r["student"]: r["score"] for r in forced} == {s: r["score"] for s, r in records.items()}
    sandboxed = [s for s, r in records.items() if r["sandbox_seconds"] is not None]
    assert len(runs) == len(sandboxed) >= 4   # --force ran every bundle that reaches the sandbox again


VANDAL = '''

import pathlib
escaped = []
try:
    pathlib.Path({targets!r}).read_text()
    escaped.append("read the hidden targets")
except OSError:
    pass
for path in {writes!r}:
    try:
        pathlib.Path(path).write_text("vandal was here")
        escaped.append("wrote " + path)
    except OSError:
        pass
if escaped:
    raise RuntimeError("ESCAPED: " + "; ".join(escaped))
'''


def _vandal_writes(root: Path) -> list[Path]:
    """Places outside its folder where a submission must not write: the grader's folders and the kit."""
    return [root / "vandal.txt", root / "submissions" / "honest" / "vandal.txt", REPO_ROOT / f"vandal-{root.name}.txt"]


@pytest.fixture(scope="module")
def homework_root(tmp_path_factory, secret_file):
    """Homework bundles whose custom layer sleeps forever or allocates without bound, and an honest one."""
    import keras

    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    root = tmp_path_factory.mktemp("homework")
    subs = root / "submissions"
    subs.mkdir()
    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    model = build_model(NameTransliterationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"]))
    export(model, vocabs, task="name-transliteration", student_id="honest", out=subs / "honest")
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    for name, trap in (("sleeper", "import time\n        time.sleep(10 ** 6)\n"),
                       ("hog", "hoard = []\n        while True:\n            hoard.append(bytearray(10 ** 8))\n")):
        folder = subs / name
        export(model, vocabs, task="name-transliteration", student_id=name, out=folder)
        (folder / "custom_layers.py").write_text(
            layer.replace("    def call(self, query, memory, memory_mask=None, return_attention_scores=False):\n",
                          "    def call(self, query, memory, memory_mask=None, return_attention_scores=False):\n        "
                          + trap), encoding="utf-8")
    vandal = subs / "vandal"   # an honest layer, but its module first reaches for what it must not touch
    export(model, vocabs, task="name-transliteration", student_id="vandal", out=vandal)
    (vandal / "custom_layers.py").write_text(layer + VANDAL.format(targets=str(root / "hidden" / "targets.csv"),
                                                                   writes=[str(p) for p in _vandal_writes(root)]),
                                             encoding="utf-8")
    borrower = subs / "borrower"   # brings no layer of its own: imports the instructor's solution
    export(model, vocabs, task="name-transliteration", student_id="borrower", out=borrower)
    (borrower / "custom_layers.py").write_text("from homework.kv_attention import KeyValueAttention\n")
    no_layers = subs / "no-layer-module"
    export(model, vocabs, task="name-transliteration", student_id="x", out=no_layers)
    (no_layers / "custom_layers.py").unlink()
    make_hidden_set("name-transliteration", secret_file, root / "hidden", n=100)
    return root


def test_a_sleeping_layer_times_out_a_hungry_one_runs_out_of_memory_a_borrowed_one_fails(homework_root, tmp_path):
    rubric = load_rubric(_rubric(tmp_path, "name-transliteration", wall_seconds=40, memory_mb=3072))
    records = {r["student"]: r for r in grade_folder(homework_root / "submissions", rubric, homework_root / "hidden",
                                                     tmp_path / "grades", jobs=2, progress=False)}
    assert records["honest"]["status"] == "graded"
    assert records["sleeper"]["status"] == "timeout" and "longer than 40 s" in records["sleeper"]["message"]
    assert records["hog"]["status"] == "out-of-memory", records["hog"]["message"]
    assert records["borrower"]["status"] == "load-failed"
    assert "custom_layers.py failed to import" in records["borrower"]["message"]
    assert records["no-layer-module"]["status"] == "disallowed"
    assert "no custom_layers.py" in records["no-layer-module"]["message"]
    written = [p for p in _vandal_writes(homework_root) if p.exists()]
    for path in written:
        path.unlink()
    if isolation_available():   # Linux with user namespaces: hidden targets, read-only everywhere else
        assert records["vandal"]["status"] == "graded", records["vandal"]["message"]
        assert written == []
    else:                       # elsewhere the grader can only say so; the record shows it ran without isolation
        assert records["vandal"]["status"] == "load-failed" and "ESCAPED" in records["vandal"]["message"]
        assert records["vandal"]["isolation"] is False


# ---- the reference models, end to end ----

def test_reference_models_are_graded_end_to_end(tmp_path, secret_file):
    """Tiny trained runs of the three labs, exported as bundles and graded from the command line."""
    from labs.date_generation.config import DateGenerationConfig
    from labs.date_generation.train import train as train_dates
    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.train import train as train_translator
    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.train import train as train_names

    runs = {"date-generation": train_dates(DateGenerationConfig.tiny(), verbose=0),
            "date-translation": train_translator(DateTranslationConfig.tiny(), verbose=0),
            "name-transliteration": train_names(NameTransliterationConfig.tiny(), verbose=0)}
    for task, run in runs.items():
        vocabs = run.vocabs if hasattr(run, "vocabs") else {"target": run.vocab}
        subs = tmp_path / task / "submissions"
        export(run.model, vocabs, task=task, student_id="reference", out=subs / "reference.zip")
        made = run_autograder("hidden-set", "--task", task, "--seed-file", str(secret_file), "--out",
                              str(tmp_path / task / "hidden"), "--n", "100")
        assert made.returncode == 0, made.stderr
        graded = run_autograder("grade", str(subs), "--task", task, "--hidden", str(tmp_path / task / "hidden"),
                                "--out", str(tmp_path / task / "grades"), "--quiet")
        assert graded.returncode == 0, graded.stderr
        assert "1 graded" in graded.stdout
        result = json.loads((tmp_path / task / "grades" / "results" / "reference.json").read_text(encoding="utf-8"))
        assert result["extra_data"]["attention_lab"]["status"] == "graded"
        assert result["tests"][0]["score"] == 10   # the reference architecture earns its points
    checked = run_autograder("check", str(tmp_path / "date-translation" / "submissions" / "reference.zip"))
    assert checked.returncode == 0, checked.stderr
    assert "status: graded" in checked.stdout and "score on the public dev set" in checked.stdout


def test_gradescope_package_runs_one_submission(tmp_path, secret_file):
    model, vocabs = _lab2_model()
    make_hidden_set("date-translation", secret_file, tmp_path / "hidden", n=100)
    packaged = run_autograder("gradescope", "--task", "date-translation", "--hidden", str(tmp_path / "hidden"),
                              "--out", str(tmp_path / "autograder.zip"))
    assert packaged.returncode == 0, packaged.stderr
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = set(archive.namelist())
        assert {"setup.sh", "run_autograder", "rubric.toml", "hidden/targets.csv", "requirements.txt",
                "autograder/child.py", "labs/common/decoding.py"} <= names
        assert (archive.getinfo("run_autograder").external_attr >> 16) & 0o111
        assert not any(n.endswith(".keras") or "__pycache__" in n for n in names)
    submission = tmp_path / "submission"
    export(model, vocabs, task="date-translation", student_id="gs", out=submission / "submission.zip")
    ran = run_autograder("gradescope-run", "--task", "date-translation", "--hidden", str(tmp_path / "hidden"),
                         "--rubric", str(REPO_ROOT / "autograder" / "rubrics" / "date-translation.toml"),
                         "--submission", str(submission), "--results", str(tmp_path / "results.json"))
    assert ran.returncode == 0, ran.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["extra_data"]["attention_lab"]["status"] == "graded" and len(results["tests"]) == 2


def test_check_explains_a_missing_bundle_in_one_line(tmp_path):
    result = run_autograder("check", str(tmp_path / "nothing.zip"))
    assert result.returncode == 2 and "no bundle at" in result.stderr and "Traceback" not in result.stderr
