"""The task registry: every part of the kit knows a lab through it, and a new lab is a package and one
entry."""

import ast
import json
import os
import re
from pathlib import Path

import pytest

from autograder.batch import check_bundle, grade_folder
from autograder.hidden import make_hidden_set
from autograder.rubric import load_rubric
from labs import tasks
from labs.common.files import write_csv
from tests.conftest import REPO_ROOT
from tests.test_autograder import SECRET


@pytest.mark.parametrize("task", tasks.all_tasks(), ids=lambda t: t.name)
def test_every_task_declares_what_the_kit_needs(task):
    rubric = load_rubric(task=task.name)
    assert {metric.name for metric in rubric.metrics} <= set(task.metric_names)
    assert set(task.vocabularies()) == set(task.vocabulary_names)
    assert all((task.dataset.path / f"{split}.csv").is_file() for split in task.dataset.sizes)
    config = task.config
    # make demo trains on less than the default and tests on less still: fewer examples seen in all (a
    # default may take fewer epochs of more data, as lab 2's does)
    budget = [c.epochs * c.train_size for c in (config.tiny(), config.demo(), config())]
    assert budget == sorted(budget), budget
    for ref in (task.train, task.load, task.decode, task.grading_metrics, task.hidden_rows, task.showcase):
        assert callable(ref.resolve()), ref
    if task.attention_view:
        tasks.Ref(task.attention_view).resolve()


def test_no_task_is_named_outside_the_registry():
    """Outside each lab's task.py, code knows a task through the registry: no name written out, no
    comparison."""
    names = set(tasks.names())
    offenders = []
    for folder, subfolders, files in os.walk(REPO_ROOT):
        # The kit's code: not the tests, the benchmarks, the venv or hidden folders, nor runs/, where other
        # tests write and delete files meanwhile.
        skipped = {"runs", "__pycache__"} | ({"tests", "benchmarks"} if Path(folder) == REPO_ROOT else set())
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in skipped)
        for name in sorted(f for f in files if f.endswith(".py") and f != "task.py"):
            path = Path(folder) / name
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in names:
                    offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert offenders == []


def test_a_new_task_is_one_package_and_one_registry_entry(tmp_path, no_feedback_examples):
    from labs import cli
    from tests.toy_task.lab import COLUMNS, generate
    from tests.toy_task.task import make_task

    task = make_task(tmp_path / "datasets")
    task.dataset.path.mkdir(parents=True)
    for split, n in task.dataset.sizes.items():
        write_csv(task.dataset.path / f"{split}.csv", COLUMNS, generate(n, 1, split))
    tasks.register(task)
    try:
        assert "toy-reversal" in tasks.names()
        assert cli.main(["train", "toy-reversal", "--tiny", "--quiet", "--out", str(tmp_path / "run")]) == 0
        assert (
            cli.main(
                [
                    "export",
                    "--model",
                    str(tmp_path / "run"),
                    "--student-id",
                    "toy",
                    "--out",
                    str(tmp_path / "submissions" / "toy.zip"),
                ]
            )
            == 0
        )
        rubric = load_rubric(task=task.name)
        checked = check_bundle(tmp_path / "submissions" / "toy.zip", rubric)
        assert checked["status"] == "graded", checked["message"]
        assert checked["lines"][1]["label"] == "exact match, on the public dev set"
        (tmp_path / "secret.txt").write_text(SECRET)
        make_hidden_set(task.name, tmp_path / "secret.txt", tmp_path / "hidden")
        record = grade_folder(
            tmp_path / "submissions", rubric, tmp_path / "hidden", tmp_path / "grades", progress=False
        )[0]
        assert record["status"] == "graded" and record["lines"][0]["points"] == 10, record["message"]
        assert re.fullmatch(r"uses LSTM; [\d,]+ parameters", record["lines"][0]["shown"])
    finally:
        tasks.unregister(task.name)


def test_the_cli_exports_a_run_as_the_python_function_does(tmp_path, cli):
    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.train import train

    train(DateTranslationConfig.tiny(), out_dir=tmp_path / "run", verbose=0)  # the folder `train` writes
    exported = cli(
        "export",
        "--model",
        str(tmp_path / "run"),
        "--student-id",
        "6512345678",
        "--out",
        str(tmp_path / "submission.zip"),
    )
    assert exported.returncode == 0, exported.stderr
    assert "python -m autograder check" in exported.stdout
    assert "as a --tiny run does" in exported.stdout and "default seed" not in exported.stdout
    checked = re.sub(r"\s+", " ", cli_autograder("check", str(tmp_path / "submission.zip")).stdout)
    assert "status: graded" in checked and "on the first 1,000 rows of the public dev set" in checked
    assert "10 / 10 required architecture: uses AdditiveAttention; " in checked  # not a bare parameter count
    # A real-sized run (as its metrics.json says) with the default seed: the note asks for a seed of one's own
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    metrics["config"]["train_size"] = DateTranslationConfig().train_size
    (tmp_path / "run" / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    real = cli(
        "export", "--model", str(tmp_path / "run"), "--student-id", "s1", "--out", str(tmp_path / "r.zip")
    )
    assert real.returncode == 0, real.stderr
    assert "--tiny" not in real.stdout and "used the default seed" in real.stdout
    assert "train with --seed of your own" in real.stdout
    for args, message in (
        (["--model", str(tmp_path / "nothing")], "no folder"),  # a typo in the path
        (["--model", str(tmp_path)], "is not a run folder"),  # a folder, but no run's
        (
            ["--model", str(tmp_path / "run"), "--student-id", "bad id"],
            "must start with a letter or a digit and hold 1 to 64",
        ),
        (["--model", str(tmp_path / "run"), "--task", "date-generation"], "holds a date-translation"),
    ):
        argv = [
            "export",
            "--out",
            str(tmp_path / "x.zip"),
            *(["--student-id", "s1"] if "--student-id" not in args else []),
            *args,
        ]
        bad = cli(*argv)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, (
            bad.stderr
        )
    assert not (tmp_path / "x.zip").exists()


def cli_autograder(*args):
    from tests.test_autograder import run_autograder

    return run_autograder(*args)
