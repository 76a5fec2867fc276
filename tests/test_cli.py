"""The command line as users meet it: outputs, same bytes for the same seed, one-line errors."""

import os
import subprocess
import sys

import pytest

from labs.common.files import read_csv
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(
    "name,columns",
    [
        ("iso-dates", ["date"]),
        ("date-pairs", ["source", "target", "format_id", "locale"]),
        ("thai-names", ["source", "target", "alternatives", "gender", "stratum"]),
    ],
)
def test_data_command_writes_csv_and_same_seed_gives_same_bytes(cli, tmp_path, name, columns):
    first, second, other = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    for path, seed in ((first, "5"), (second, "5"), (other, "6")):
        result = cli("data", name, "--n", "300", "--seed", seed, "--out", str(path))
        assert result.returncode == 0, result.stderr
    rows = read_csv(first)
    assert len(rows) == 300 and list(rows[0]) == columns
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv", "c.csv"]  # no temp files left


def test_date_pairs_options(cli, tmp_path):
    out = tmp_path / "th.csv"
    result = cli(
        "data",
        "date-pairs",
        "--n",
        "200",
        "--out",
        str(out),
        "--split",
        "test",
        "--locale",
        "th_TH",
        "--format",
        "th_medium_be2,th_digits_short_be2",
    )
    assert result.returncode == 0, result.stderr
    assert {r["format_id"] for r in read_csv(out)} == {"th_medium_be2", "th_digits_short_be2"}


def test_iso_dates_range_options(cli, tmp_path):
    out = tmp_path / "feb.csv"
    assert (
        cli(
            "data",
            "iso-dates",
            "--n",
            "100",
            "--start",
            "2020-02-01",
            "--end",
            "2020-02-29",
            "--out",
            str(out),
        ).returncode
        == 0
    )
    assert {r["date"][:8] for r in read_csv(out)} == {"2020-02-"}


@pytest.mark.parametrize(
    "args,message",
    [
        (["data", "iso-dates", "--n", "-3"], "n must be 0 or more, got -3"),
        (["data", "iso-dates", "--n", "1000000000"], "more than the 10,000,000 rows"),
        (["data", "iso-dates", "--n", "ten"], "invalid int value: 'ten'"),
        (
            ["data", "iso-dates", "--n", "5", "--start", "2018-02-30"],
            "--start '2018-02-30' is not a calendar date",
        ),
        (["data", "iso-dates", "--n", "5", "--start", "2020-01-01", "--end", "2019-01-01"], "after end"),
        (
            ["data", "date-pairs", "--n", "5", "--locale", "th_XX"],
            "unknown locale 'th_XX'; choose one of: en_US, en_GB, th_TH",
        ),
        (["data", "date-pairs", "--n", "5", "--format", "d MMM YYY"], "unknown format 'd MMM YYY'"),
        (["data", "date-pairs", "--n", "5", "--split", "validation"], "unknown split 'validation'"),
        (["data", "thai-names", "--n", "5", "--table", "/nonexistent.csv"], "no romanization table"),
        (["data", "cities", "--n", "5"], "invalid choice: 'cities'"),
    ],
)
def test_bad_arguments_give_one_line_and_no_file(cli, tmp_path, args, message):
    out = tmp_path / "out.csv"
    result = cli(*args, "--out", str(out))
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_missing_folder_gives_one_line(cli, tmp_path):
    result = cli("data", "iso-dates", "--n", "5", "--out", str(tmp_path / "no" / "such" / "dir" / "x.csv"))
    assert result.returncode == 2
    assert "does not exist; create it first" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "command",
    [
        ["translate", "สมชาย ใจดี"],
        ["export", "--student-id", "s1", "--out", "{tmp}/x.zip"],
        ["evaluate", "name-transliteration"],
        ["evaluate", "date-translation"],
        ["sample"],
    ],
)
def test_a_run_folder_that_is_not_there_or_is_a_file_gives_one_line(cli, tmp_path, command):
    """A mistyped --model, the bundle given where the run folder belongs, or the folder above the run: what
    it is, in one line, and for the folder above, the runs in it."""
    (tmp_path / "submission.zip").write_bytes(b"PK")
    (tmp_path / "myruns" / "tiny").mkdir(parents=True)
    (tmp_path / "myruns" / "tiny" / "model.keras").write_bytes(b"")
    argv = [part.format(tmp=tmp_path) for part in command]
    above = f"did you mean {str(tmp_path / 'myruns' / 'tiny')!r}?"
    for model, message in (
        ("runs/typo", "no folder"),
        ("submission.zip", "is a file, not a run folder"),
        ("myruns", above),
    ):
        result = cli(*argv, "--model", str(tmp_path / model))
        assert result.returncode == 2 and message in result.stderr, (argv, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "x.zip").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["sample", "--model", "{missing}"],
        ["evaluate", "date-generation", "--model", "{missing}"],
        ["evaluate", "date-translation", "--model", "{run}", "--baseline", "{missing}"],
        ["evaluate", "name-transliteration", "--model", "{missing}"],
        ["translate", "x", "--model", "{missing}"],
    ],
)
def test_a_mistyped_run_folder_is_reported_before_tensorflow_is_imported(tmp_path, command):
    """The path is checked before the command imports TensorFlow: the student waits no seconds for the typo's line."""
    (tmp_path / "run").mkdir()
    argv = [part.format(missing=tmp_path / "typo", run=tmp_path / "run") for part in command]
    probe = (
        "import sys\nfrom labs.cli import main\n"
        f"print('exit', main({argv!r}))\n"
        "print('tensorflow' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.stdout.split() == ["exit", "2", "False"], (result.stdout, result.stderr)
    assert "no folder" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_help_after_a_run_folder_that_is_not_there_is_still_help(cli, tmp_path):
    """A command copied from the README with --help added shows its help, whatever its --model says."""
    result = cli("translate", "--model", str(tmp_path / "runs" / "names"), "x", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m labs translate"), (
        result.stderr
    )


@pytest.mark.parametrize("task", ["date-generation", "date-translation", "name-transliteration"])
def test_training_into_a_file_is_refused_in_one_line_and_leaves_it(cli, tmp_path, task):
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n")
    result = cli("train", task, "--tiny", "--out", str(taken))
    assert result.returncode == 2 and "is a file; give a folder" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and taken.read_text() == "mine\n"


def test_a_refused_training_or_romanization_says_so_before_its_seconds_of_start_up(tmp_path):
    """A bad --out or a word that is not Thai is said before TensorFlow is imported or the name table read."""
    (tmp_path / "notes.txt").write_text("mine\n")
    probe = (
        "import sys; from labs.cli import main; from labs.name_transliteration.data import _load_lexicon; "
        "code = main(sys.argv[1:]); "
        "print(code, 'tensorflow' in sys.modules, _load_lexicon.cache_info().currsize)"
    )
    for args in (
        ["train", "name-transliteration", "--tiny", "--out", str(tmp_path / "notes.txt")],
        ["romanize", "สมชาย", "Somchai"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args],
            cwd=REPO_ROOT,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.split() == ["2", "False", "0"], (args, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_unwritable_location_gives_one_line_even_for_root(cli):
    result = cli("data", "iso-dates", "--n", "5", "--out", "/proc/attention-lab-test.csv")
    assert result.returncode == 2
    assert result.stderr.startswith("python -m labs: error: cannot write '/proc/attention-lab-test.csv'")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_read_only_folder_is_reported_before_any_work(tmp_path, monkeypatch):
    from labs.common.errors import InputError
    from labs.common.files import check_writable

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as a non-root user sees a 0555 folder
    with pytest.raises(InputError, match="is not writable"):
        check_writable(tmp_path / "x.csv")


def test_output_path_that_is_a_folder_is_refused(cli, tmp_path):
    result = cli("data", "iso-dates", "--n", "5", "--out", str(tmp_path))
    assert result.returncode == 2 and "is a folder" in result.stderr


def test_formats_command_lists_every_format(cli):
    from labs.date_translation.formats import FORMATS

    result = cli("formats")
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(FORMATS)
    assert any("27 ม.ค. 2561" in line for line in lines)


def test_show_prints_examples_of_each_dataset(cli):
    result = cli("data", "show", "--n", "2")
    assert result.returncode == 0
    for name in ("iso-dates", "date-pairs", "thai-names"):
        assert name in result.stdout


def test_autograder_without_a_command_lists_what_it_can_do():
    result = subprocess.run(
        [sys.executable, "-m", "autograder"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2 and "the following arguments are required: command" in result.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "autograder", "--help"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    for command in ("hidden-set", "grade", "gradescope", "check"):
        assert command in helped.stdout
    assert "gradescope-run" not in helped.stdout  # internal: what the Gradescope container calls


def test_train_help_describes_each_option_with_its_config_fields_comment():
    """``labs train TASK --help`` says what a flag does, from the comment beside the config's field."""
    import argparse
    import dataclasses

    from labs import cli
    from labs.name_transliteration.config import NameTransliterationConfig

    comments = NameTransliterationConfig.field_comments()
    assert comments["cell"] == "the encoder's and the decoder's RNN"
    assert comments["score"].startswith('"dot" (scaled dot product)')  # a comment after a field(...) call
    assert "epochs" not in comments  # no comment, no made-up help
    parser = argparse.ArgumentParser()
    cli._add_config_flags(parser, NameTransliterationConfig)
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["config_target_dropout"] == (
        "share of the decoder's input letters' embeddings dropped in training (default 0.0)"
    )
    assert helps["config_epochs"] == "(default 6)"
    assert len(comments) >= len(dataclasses.fields(NameTransliterationConfig)) - 4
    parser.format_help()  # a % in a comment must not break argparse's formatting


def test_only_a_run_as_small_as_tinys_gets_the_tiny_note():
    """Export and evaluate say that a --tiny-sized run is a smoke test; a run of the real size gets no note."""
    import dataclasses

    from labs import tasks

    for task in tasks.all_tasks():
        tiny = task.config.tiny()
        note = tiny.tiny_run_note("train for real", run="runs/tiny")
        assert note == (
            f"note: runs/tiny trained on {tiny.train_size:,} examples, as a --tiny run does: a smoke test "
            "that learns next to nothing; train for real"
        )
        assert dataclasses.replace(task.config(), train_size=tiny.train_size).tiny_run_note("x") is not None
        assert dataclasses.replace(tiny, train_size=tiny.train_size + 1).tiny_run_note("x") is None
        assert task.config().tiny_run_note("x") is None and task.config.demo().tiny_run_note("x") is None
