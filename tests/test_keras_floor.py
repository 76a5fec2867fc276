"""The grader's Keras floor: grading refuses an older Keras in one line; make and Gradescope install the
floor."""

import zipfile

import pytest

from autograder import keras_floor
from autograder.__main__ import main
from autograder.gradescope import package
from autograder.hidden import make_hidden_set
from autograder.rubric import load_rubric
from labs.common.errors import InputError
from tests.conftest import REPO_ROOT

FIX = 'pip install -U "keras>=3.15"'


@pytest.fixture
def colab_keras(monkeypatch):
    """Pretend the installed Keras is Colab's 3.13.2 (students' requirements allow it, the grader does
    not)."""
    monkeypatch.setattr(keras_floor, "installed_keras", lambda: "3.13.2")


@pytest.mark.parametrize("command", ["grade", "gradescope-run"])
def test_grading_refuses_a_keras_below_the_floor_in_one_line_that_names_the_fix(
    command, colab_keras, tmp_path, capsys
):
    args = {
        "grade": [
            "grade",
            str(tmp_path),
            "--task",
            "date-translation",
            "--hidden",
            str(tmp_path / "hidden"),
            "--out",
            str(tmp_path / "out"),
        ],
        "gradescope-run": [
            "gradescope-run",
            "--task",
            "date-translation",
            "--hidden",
            str(tmp_path / "hidden"),
            "--rubric",
            "rubric.toml",
            "--submission",
            str(tmp_path),
            "--results",
            str(tmp_path / "results.json"),
        ],
    }[command]
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0]
    assert "Keras 3.15 or newer" in lines[0] and "Keras 3.13.2" in lines[0] and lines[0].endswith(FIX)
    assert not (tmp_path / "out").exists() and not (tmp_path / "results.json").exists()  # nothing was graded


def test_a_student_checks_their_own_bundle_on_colabs_keras(colab_keras, tmp_path, capsys):
    assert main(["check", str(tmp_path / "submission.zip")]) == 2
    error = capsys.readouterr().err
    assert (
        "no bundle at" in error and "keras" not in error.lower()
    )  # past the floor: the bundle is what is missing


@pytest.mark.parametrize(
    "version,allowed",
    [
        ("3.13.2", False),
        ("2.15.0", False),
        ("3.9.0", False),
        ("3.14.0", False),
        ("3.15.0", True),
        ("3.15.0rc1", True),
        ("3.15.1", True),
        ("4.0.0", True),
        ("nightly", False),
    ],
)
def test_the_floor_is_3_15(version, allowed):
    if allowed:
        assert keras_floor.check_keras(version) == version
    else:
        with pytest.raises(InputError, match=r"has Keras .*; run: pip install -U \"keras>=3.15\"$"):
            keras_floor.check_keras(version)


def test_no_keras_at_all_is_explained(monkeypatch):
    monkeypatch.setattr(keras_floor, "installed_keras", lambda: None)
    with pytest.raises(
        InputError, match=r"Keras, which is not installed here; run: pip install -U \"keras>=3.15\""
    ):
        keras_floor.check_keras()


def test_the_kits_own_grader_environment_is_above_the_floor():
    keras_floor.check_keras()  # the .venv that `make` builds


def test_make_installs_the_floor():
    lines = [
        line.split("#")[0].strip() for line in (REPO_ROOT / "requirements-dev.txt").read_text().splitlines()
    ]
    assert keras_floor.REQUIREMENT in lines


def test_the_gradescope_package_installs_the_floor(tmp_path):
    (tmp_path / "secret.txt").write_text("a-course-secret-0123456789abcdef")
    make_hidden_set("date-translation", tmp_path / "secret.txt", tmp_path / "hidden", n=50)
    out = package(
        "date-translation",
        tmp_path / "hidden",
        tmp_path / "autograder.zip",
        load_rubric(task="date-translation"),
    )
    with zipfile.ZipFile(out) as archive:
        setup = archive.read("setup.sh").decode()
    assert '.venv/bin/pip install -r requirements.txt "keras>=3.15"' in setup
