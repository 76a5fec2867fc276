"""``python -m autograder check``, the students' last step before handing in (and ``check_bundle``, which the
homework's notebook calls): it says what it checked, refuses another lab's bundle, exits non-zero for every
bundle it would not grade, and shows what a student reads cleanly, rates as the labs print them.

The bundles are the ones kit 0.1.0 exported (``tests/fixtures``), so nothing is trained here."""

import html
import json
import re
import signal
import zipfile

import pytest

from autograder import batch
from autograder.__main__ import main
from autograder.batch import check_bundle
from autograder.claims import checked_failure
from autograder.reports import gradescope_results, markdown_text, write_gradebook, write_student_files
from autograder.rubric import load_rubric
from labs import tasks
from tests.test_autograder import FIXTURES, _zip_with, run_autograder

LAB2 = FIXTURES / "lab2-bundle-kit-0.1.0.zip"
HOMEWORK = FIXTURES / "homework-bundle-kit-0.1.0.zip"
# What the student kit's kv_attention.py raises until the first TODO is written (tools/release.py).
TODO = (
    "TODO: compute keys (batch, S, key_dim), values (batch, S, value_dim) and q (batch, T, key_dim) "
    "(homework/kv_attention.py)"
)


@pytest.fixture(scope="module")
def unwritten_layer(tmp_path_factory):
    """The homework bundle with the layer of the student kit, its first TODO not written: Keras cannot load
    it."""
    with zipfile.ZipFile(HOMEWORK) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    layer = files["custom_layers.py"].decode("utf-8")
    solved = "        keys = ops.matmul(memory, self.key_kernel)"
    assert solved in layer
    files["custom_layers.py"] = layer.replace(
        solved, f"        raise NotImplementedError({TODO!r})", 1
    ).encode()
    return _zip_with(tmp_path_factory.mktemp("unwritten") / "submission.zip", files)


def test_the_first_line_names_the_task_and_a_matching_task_is_graded():
    checked = run_autograder("check", str(LAB2), "--task", "date-translation")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    first = checked.stdout.splitlines()[0]
    assert first.startswith(
        f"Checking {LAB2}: a date-translation bundle "
        f"({tasks.get('date-translation').title}), against its rubric on the public dev set"
    ), first
    assert "status: graded" in checked.stdout
    # Lab 2 prints exact match as a percentage; so does the check.
    assert re.search(
        r"exact match, all 40 formats, on the first 1,000 rows of the public dev set: \d+\.\d\d%$",
        checked.stdout,
        re.MULTILINE,
    ), checked.stdout


def test_a_bundle_of_another_lab_fails_in_one_line_without_grading():
    checked = run_autograder("check", str(LAB2), "--task", "name-transliteration")
    assert checked.returncode == 1
    assert checked.stdout == ""  # not graded: nothing checked, no score
    lines = checked.stderr.splitlines()
    assert len(lines) == 1, checked.stderr
    assert lines[0].startswith(
        "python -m autograder: error: lab2-bundle-kit-0.1.0.zip is a date-translation bundle "
        f"({tasks.get('date-translation').title}), not a name-transliteration one"
    ), lines[0]


def test_a_file_name_with_terminal_escapes_is_printed_as_plain_text(tmp_path):
    """An instructor checks a student's file: its name's escapes (the window's title, erase the line) were
    printed to the terminal as they were."""
    hostile = tmp_path / "hw\x1b]0;owned\x07\x1b[2K.zip"
    hostile.write_bytes(LAB2.read_bytes())
    checked = run_autograder("check", str(hostile), "--task", "name-transliteration")
    missing = run_autograder("check", str(tmp_path / "gone\x1b[2J.zip"))
    assert checked.returncode == 1 and missing.returncode == 2
    for said in (checked.stderr, missing.stderr):
        assert "\x1b" not in said and "\x07" not in said and "<U+001B>" in said, said
    assert "hw<U+001B>]0;owned<U+0007><U+001B>[2K.zip is a date-translation bundle" in checked.stderr


def test_check_bundle_with_a_task_refuses_another_labs_bundle_without_running_it():
    # The notebook's call where the run is lab 2's: the rubric follows the run, the task is the assignment's.
    record = check_bundle(LAB2, load_rubric(task="date-translation"), task="name-transliteration")
    assert record["status"] == "wrong-task"
    assert (
        record["task"] == "name-transliteration"
        and record["max_score"] == load_rubric(task="name-transliteration").max_score
    )
    assert (
        "date-translation bundle" in record["message"]
        and "not a name-transliteration one" in record["message"]
    )
    assert "\n" not in record["message"]
    assert record["score"] == 0 and record["sandbox_seconds"] is None  # never run
    assert (
        check_bundle(LAB2, task="name-transliteration")["status"] == "wrong-task"
    )  # no rubric: the task's own


def test_a_bundle_that_is_not_a_bundle_exits_non_zero(tmp_path):
    (tmp_path / "submission.zip").write_bytes(b"not a zip")
    checked = run_autograder("check", str(tmp_path / "submission.zip"), "--task", "date-translation")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "as a date-translation bundle (" in checked.stdout.splitlines()[0]
    assert "it has no readable meta.json naming its task)" in checked.stdout.splitlines()[0]
    assert "status: malformed" in checked.stdout
    assert " / " not in "\n".join(checked.stdout.splitlines()[2:-1]), (
        "a bundle that never ran gets no rubric lines"
    )
    assert checked.stdout.splitlines()[-1].startswith("score on the public dev set: 0 / ")


def test_a_hand_zipped_bundle_is_told_what_it_lacks_what_was_left_out_and_the_command_that_writes_one(
    tmp_path,
):
    # A student zips the run folder and the layer by hand: no meta.json, and kv_attention.py under its own name.
    with zipfile.ZipFile(HOMEWORK) as archive:
        files = {name: archive.read(name) for name in ("model.keras", "vocab.json")}
    files["kv_attention.py"] = b"# the layer"
    files["training_curve.png"] = b"png"
    record = check_bundle(_zip_with(tmp_path / "by-hand.zip", files), task="name-transliteration")
    assert record["status"] == "malformed"
    message = record["message"]
    assert "lacks meta.json (found: model.keras, vocab.json;" in message, message
    assert "left out: 'kv_attention.py', 'training_curve.png'" in message, message
    assert "a layer module travels as custom_layers.py" in message
    assert "python -m labs export --model RUN_FOLDER --student-id YOUR_ID --out submission.zip" in message
    assert "labs.common.submission" not in message  # the command a student runs, not a function of the kit


def test_a_hand_zip_of_the_run_folder_and_the_layer_is_told_that_its_files_sit_in_folders(tmp_path):
    with zipfile.ZipFile(HOMEWORK) as archive:
        files = {f"runs/names/{name}": archive.read(name) for name in ("model.keras", "vocab.json")}
    files["homework/kv_attention.py"] = b"# the layer"
    record = check_bundle(_zip_with(tmp_path / "by-hand.zip", files), task="name-transliteration")
    assert record["status"] == "malformed"
    assert (
        "'runs/names/model.keras', 'runs/names/vocab.json' sit in folders of their own" in record["message"]
    )


def test_an_empty_file_is_called_empty(tmp_path):
    (tmp_path / "submission.zip").write_bytes(b"")  # a download or a copy that went wrong
    record = check_bundle(tmp_path / "submission.zip", task="name-transliteration")
    assert record["status"] == "malformed"
    assert record["message"].startswith(
        "submission.zip is empty (0 bytes); export it with python -m labs export"
    )


def test_a_layer_that_raises_fails_to_load_and_its_own_error_is_what_the_student_reads(unwritten_layer):
    checked = run_autograder("check", str(unwritten_layer))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    status = next(line for line in checked.stdout.splitlines() if line.startswith("status: "))
    assert status.startswith(
        "status: load-failed: Keras could not load model.keras: KeyValueAttention.call() raised "
        f"NotImplementedError: {TODO} (custom_layers.py, line "
    ), status
    assert "\x1b" not in checked.stdout and "[1m" not in checked.stdout and "[0m" not in checked.stdout
    assert "Arguments received" not in checked.stdout and "…" not in status


def test_feedback_and_gradebook_keep_the_students_error_line_and_no_terminal_escapes(
    unwritten_layer, tmp_path
):
    rubric = load_rubric(task="name-transliteration")
    record = {**check_bundle(unwritten_layer, rubric), "student": "s1"}
    assert record["status"] == "load-failed"
    for folder in ("feedback", "results"):
        (tmp_path / folder).mkdir()
    write_student_files(record, rubric, tmp_path)
    write_gradebook([record], rubric, tmp_path)
    for name in ("feedback/s1.md", "feedback/s1.html", "results/s1.json", "gradebook.csv"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "\x1b" not in text and "\\u001b" not in text and "[1m" not in text, name
    assert markdown_text(TODO) in (tmp_path / "feedback" / "s1.md").read_text(encoding="utf-8")
    assert html.escape(TODO, quote=False) in (tmp_path / "feedback" / "s1.html").read_text(encoding="utf-8")
    assert f"NotImplementedError: {TODO}" in (tmp_path / "gradebook.csv").read_text(encoding="utf-8")


def test_terminal_escapes_from_a_child_never_reach_a_report():
    # The child runs student code, so it may return any text: the grader cleans what it reads.
    assert checked_failure(
        "load-failed", "Keras: \x1b[1mbold\x1b[0m and \x1b]0;a title\x07\x1b[38;5;196mred\x1b[m"
    ) == ("load-failed", "Keras: bold and red")


def test_check_shows_rates_as_percentages_as_the_labs_print_them(monkeypatch, capsys, tmp_path):
    records = []

    def few_rows(*args, **kwargs):  # the command's own check, on 40 dev rows to keep the test short
        records.append(check_bundle(*args, **kwargs, limit=40))
        return records[-1]

    monkeypatch.setattr(batch, "check_bundle", few_rows)
    terminate = signal.getsignal(signal.SIGTERM)
    try:
        code = main(["check", str(HOMEWORK)])
    finally:
        signal.signal(signal.SIGTERM, terminate)
    out = capsys.readouterr().out
    assert code == 0, out
    record = records[0]
    values = {line["name"]: line["value"] for line in record["lines"]}
    assert values["cer_unseen"] > 1  # a kit-0.1.0 tiny model writes long outputs: more than one error a char
    shown = re.search(
        r"character error rate on names with unseen words, .*: (\S+)$", out, re.MULTILINE
    ).group(1)
    assert shown == f"{values['cer_unseen']:.2%}"  # labs/name_transliteration/evaluate.py: CER {cer:.2%}
    for name in ("accuracy_seen", "accuracy_unseen"):
        assert re.search(rf": {re.escape(f'{values[name]:.2%}')}$", out, re.MULTILINE)
    rule = next(line["rule"] for line in record["lines"] if line["name"] == "cer_unseen")
    assert rule.startswith("<= 4.00%: 20, <= 6.00%: 16"), rule
    # Data stays data: the gradebook keeps the number itself; the results JSON, which students read, keeps it
    # as the rubric line shows it (digits below that are a channel from the hidden inputs).
    (tmp_path / "feedback").mkdir()
    (tmp_path / "results").mkdir()
    rubric = load_rubric(task="name-transliteration")
    write_student_files({**record, "student": "s1"}, rubric, tmp_path)
    write_gradebook([{**record, "student": "s1"}], rubric, tmp_path)
    saved = json.loads((tmp_path / "results" / "s1.json").read_text(encoding="utf-8"))["extra_data"][
        "attention_lab"
    ]
    assert saved["metrics"]["cer_unseen"] == round(values["cer_unseen"], 4) != values["cer_unseen"]
    board = gradescope_results({**record, "student": "s1"}, rubric)["leaderboard"]
    assert {e["name"]: e["value"] for e in board}["cer_unseen"] == round(values["cer_unseen"], 4)
    assert f"{values['cer_unseen']:.6f}" in (tmp_path / "gradebook.csv").read_text(encoding="utf-8")
    assert shown in (tmp_path / "feedback" / "s1.md").read_text(encoding="utf-8")


def test_every_metric_that_is_a_fraction_is_a_rate_of_its_task():
    """The registry says which metrics are rates; each is one the task grades, and the labs' headline ones
    are."""
    for task in tasks.all_tasks():
        assert set(task.rates) <= set(task.metric_names), task.name
    assert {"accuracy", "cer", "exact_match"} <= set(tasks.get("name-transliteration").rates)
    assert tasks.get("name-transliteration").show_metric("cer", 0.0337) == "3.37%"
    assert (
        tasks.get("name-transliteration").show_metric("mrr", 0.8312) == "0.8312"
    )  # not a rate: as the lab prints it


def test_the_class_report_shows_rates_as_percentages():
    from autograder.class_report import class_report_html
    from tests.test_class_report import THRESHOLDS, fabricated_class

    rubric = load_rubric(task="name-transliteration")
    page = class_report_html(fabricated_class(rubric), rubric, [], THRESHOLDS)
    assert re.search(r"values: mean \d+\.\d\d%, median \d+\.\d\d%", page)
    assert not re.search(r"values: mean 0\.\d{4}", page)
