"""The grading core's steps: what a failure part-way keeps, what a re-run reuses, what an interrupt stops."""

import dataclasses
import os
import time

import pytest

import autograder.batch
import autograder.grade
from autograder.batch import grade_folder
from autograder.grade import HiddenSet, grade_bundle, public_examples
from autograder.hidden import load_hidden_set, make_hidden_set
from autograder.rubric import load_rubric
from tests.conftest import REPO_ROOT

LAB2_BUNDLE = REPO_ROOT / "tests" / "fixtures" / "lab2-bundle-kit-0.1.0.zip"


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    root = tmp_path_factory.mktemp("private")
    (root / "secret.txt").write_text("a-course-secret-for-the-grading-core")
    make_hidden_set("date-translation", root / "secret.txt", root / "hidden", n=20)
    return root / "hidden"


def _grade_lab2_bundle(hidden, **options) -> dict:
    """The record of the kit's lab-2 bundle, graded on ``hidden`` with ``options`` (grade_bundle's)."""
    inputs, targets, manifest = load_hidden_set(hidden, "date-translation")
    return grade_bundle(
        LAB2_BUNDLE,
        load_rubric(task="date-translation"),
        HiddenSet(hidden, inputs, targets, manifest),
        **options,
    )


def test_a_grader_failure_part_way_keeps_the_architecture_points_and_the_notes(hidden, monkeypatch):
    """The grader's own mistake after the weights were read: the bundle keeps what it earned so far."""

    def broken(*args, **kwargs):
        raise RuntimeError("the grader's own bug")

    monkeypatch.setattr(autograder.grade, "run_child", broken)
    record = _grade_lab2_bundle(hidden, entry_id="someone-else")
    assert record["status"] == "error"
    assert "could not handle this bundle (RuntimeError)" in record["message"]
    # its AdditiveAttention and its parameter count, read before the failure
    assert record["lines"][0]["points"] == 10 and record["parameters"]
    assert any("meta.json names student" in note for note in record["notes"])


@pytest.mark.parametrize("scored_run", ["ok", "error"])
def test_no_code_of_a_bundle_runs_after_its_run_on_the_hidden_inputs(hidden, monkeypatch, scored_run):
    """The public examples' run, whose words a student reads, comes first. Run after the scored run, it was
    a hostile layer's way out: the scored run read one byte of chosen pages of a large shared file for the
    1-bits of the hidden names, and the later run saw which pages were cached and raised them in its error
    message (page cache and keyrings outlive a process)."""
    real_run, runs = autograder.grade.run_child, []

    def recording(files, job, *args, **kwargs):
        runs.append("scored" if job.get("sources") else "public")
        outcome = real_run(files, job, *args, **kwargs)
        if runs[-1] == "scored" and scored_run == "error":
            outcome = dataclasses.replace(outcome, status="error", message="LEAK the hidden names", data={})
        return outcome

    monkeypatch.setattr(autograder.grade, "run_child", recording)
    record = _grade_lab2_bundle(hidden, examples=public_examples("date-translation"))
    assert runs == ["public", "scored"]
    assert record["status"] == ("graded" if scored_run == "ok" else "error"), record["message"]
    assert "LEAK" not in record["message"] and len(record["examples"]) == (4 if scored_run == "ok" else 0)


def test_a_re_run_reuses_a_refused_bundle_instead_of_grading_it_again(hidden, tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "6500000004.zip").write_bytes(b"not a zip at all")
    rubric, out = load_rubric(task="date-translation"), tmp_path / "grades"
    first = grade_folder(tmp_path / "subs", rubric, hidden, out, progress=False)[0]
    assert first["status"] == "malformed"
    feedback = out / "feedback" / "6500000004.md"
    written = feedback.stat().st_mtime_ns
    time.sleep(0.05)
    again = grade_folder(tmp_path / "subs", rubric, hidden, out, progress=False)[0]
    assert again["status"] == "malformed" and feedback.stat().st_mtime_ns == written  # reused, not rewritten
    forced = grade_folder(tmp_path / "subs", rubric, hidden, out, progress=False, force=True)[0]
    assert forced["status"] == "malformed" and feedback.stat().st_mtime_ns != written


def test_an_interrupt_grades_no_more_of_the_queue(hidden, tmp_path, monkeypatch):
    """Ctrl-C while the first record is kept: the queued bundles are not graded; the gradebook is written."""
    (tmp_path / "subs").mkdir()
    for i in range(8):
        (tmp_path / "subs" / f"650000000{i}.zip").write_bytes(b"not a zip")
    graded, real_grade_one = [], autograder.batch._grade_one

    def slow_grade_one(batch, index):
        graded.append(index)
        time.sleep(0.2)
        return real_grade_one(batch, index)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(autograder.batch, "_grade_one", slow_grade_one)
    monkeypatch.setattr(autograder.batch, "_write_student_files", interrupted)
    out = tmp_path / "grades"
    with pytest.raises(KeyboardInterrupt):
        grade_folder(
            tmp_path / "subs", load_rubric(task="date-translation"), hidden, out, progress=False, jobs=1
        )
    assert len(graded) <= 2  # the one kept, and at most the one already running
    assert os.path.isfile(out / "gradebook.csv")
