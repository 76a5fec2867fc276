"""The instructor's own hidden words: `hidden-set --words FILE` builds the unseen names from a private
list."""

import hashlib
import os
import subprocess
import sys

import pytest

from autograder.batch import grade_folder
from autograder.hidden import load_hidden_set, make_hidden_set
from autograder.rubric import load_rubric
from labs.name_transliteration.data import load_lexicon, word_group
from tests.conftest import REPO_ROOT

TASK = "name-transliteration"
SECRET = "a-course-secret-0123456789abcdef"
# Thai words in no file of the kit (checked below), one with the instructor's own spellings.
PRIVATE = ["กระจ่างศรี", "ทองประกาย", "เมฆขาว", "ดวงแข", "ใบเตยหอม", "ทะเลดาว", "ภูผาทอง", "ลมหนาว"]
WORD_LIST = "# names from past rosters\n" + "\n".join(PRIVATE) + "\nขวัญฟ้า,Kwanfa|khwanfa\n"
KNOWN = ["สมชาย", "ใจดี"]  # in the training data: left out, with a note


def run_autograder(*args: str):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def hidden_set_command(tmp_path, secret_file, *options: str, task: str = TASK):
    """``hidden-set`` for ``task`` with 40 rows into ``tmp_path / "h"``: the finished process."""
    return run_autograder(
        "hidden-set",
        "--task",
        task,
        "--seed-file",
        str(secret_file),
        "--out",
        str(tmp_path / "h"),
        "--n",
        "40",
        *options,
    )


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("secret") / "secret.txt"
    path.write_text(SECRET)
    return path


@pytest.fixture
def word_list(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text(WORD_LIST, encoding="utf-8")
    return path


def test_the_test_words_are_new_to_the_kit():
    assert not set(PRIVATE + ["ขวัญฟ้า"]) & set(load_lexicon().words)
    assert set(KNOWN) <= set(load_lexicon().words)


def test_the_unseen_names_come_from_the_private_words_and_none_from_the_hidden_pool(
    tmp_path, secret_file, word_list
):
    manifest = make_hidden_set(TASK, secret_file, tmp_path / "h", n=60, words=word_list)
    inputs, targets, _ = load_hidden_set(tmp_path / "h", TASK)
    private = set(PRIVATE) | {"ขวัญฟ้า"}
    by_stratum = {s: [t for t in targets if t["stratum"] == s] for s in ("seen", "unseen")}
    assert len(by_stratum["seen"]) == len(by_stratum["unseen"]) == 30
    for row in by_stratum["unseen"]:
        words = row["source"].split(" ")
        assert set(words) & private, row
        assert all(w in private or word_group(w) == "seen" for w in words), row  # no hidden-pool word
    assert not {w for row in by_stratum["seen"] for w in row["source"].split(" ")} & private
    assert len({w for row in by_stratum["unseen"] for w in row["source"].split(" ")} & private) == len(
        private
    )
    # A line's own spellings are the accepted ones, written as the kit writes them; the others are the kit's.
    kwanfa = next(row for row in by_stratum["unseen"] if row["source"].endswith(" ขวัญฟ้า"))
    assert {kwanfa["target"], *kwanfa["alternatives"].split("|")} >= {
        kwanfa["target"].split(" ")[0] + " Kwanfa",
        kwanfa["target"].split(" ")[0] + " Khwanfa",
    }
    assert any(row["target"].startswith("Krajangsri ") for row in by_stratum["unseen"])
    # The manifest names the list by its SHA-256, never by its words.
    assert manifest["private_words_sha256"] == hashlib.sha256(word_list.read_bytes()).hexdigest()
    assert not any(w in (tmp_path / "h" / "manifest.json").read_text(encoding="utf-8") for w in private)


def test_the_same_seed_and_word_list_give_the_same_bytes(tmp_path, secret_file, word_list):
    for out in ("a", "b"):
        make_hidden_set(TASK, secret_file, tmp_path / out, n=40, words=word_list)
    for name in ("inputs.csv", "targets.csv", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    other = tmp_path / "other.txt"
    other.write_text(WORD_LIST.replace("ลมหนาว\n", ""), encoding="utf-8")
    make_hidden_set(TASK, secret_file, tmp_path / "c", n=40, words=other)
    assert (tmp_path / "c" / "targets.csv").read_bytes() != (tmp_path / "a" / "targets.csv").read_bytes()
    default = make_hidden_set(TASK, secret_file, tmp_path / "d", n=40)
    assert "private_words_sha256" not in default


def test_the_romanize_commands_csv_is_a_word_list_with_the_same_spellings(tmp_path, secret_file):
    """A plain list, and what `python -m labs romanize --file` prints for it, give the same set."""
    from labs.common.files import write_csv
    from labs.name_transliteration.romanization import ROMANIZE_COLUMNS, romanize_table_or_live

    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(PRIVATE) + "\n", encoding="utf-8")
    write_csv(
        tmp_path / "spelled.csv", ROMANIZE_COLUMNS, romanize_table_or_live(PRIVATE, load_lexicon().words)
    )
    make_hidden_set(TASK, secret_file, tmp_path / "a", n=40, words=plain)
    make_hidden_set(TASK, secret_file, tmp_path / "b", n=40, words=tmp_path / "spelled.csv")
    assert (tmp_path / "a" / "targets.csv").read_bytes() == (tmp_path / "b" / "targets.csv").read_bytes()


def test_words_the_kit_already_knows_are_left_out_with_a_note(tmp_path, secret_file):
    words = tmp_path / "words.txt"
    words.write_text("\n".join(KNOWN) + "\n" + WORD_LIST, encoding="utf-8")
    made = hidden_set_command(tmp_path, secret_file, "--words", str(words))
    assert made.returncode == 0, made.stderr
    assert "note: left out 2 of the 11 words" in made.stderr and "not unseen" in made.stderr
    assert "unseen words from" in made.stdout
    assert "can rebuild" not in made.stderr  # private words: no note about the default pool
    _, targets, _ = load_hidden_set(tmp_path / "h", TASK)
    assert not {w for t in targets if t["stratum"] == "unseen" for w in t["source"].split(" ")} & set(KNOWN)


def test_a_hidden_set_without_private_words_says_that_students_can_rebuild_its_unseen_words(
    tmp_path, secret_file
):
    made = hidden_set_command(tmp_path, secret_file)
    assert made.returncode == 0 and "wrote a hidden set of 40 rows" in made.stdout, made.stderr
    assert "note: the unseen names' words come from the kit's default pool, which a student can rebuild" in (
        made.stderr
    )
    assert "--words FILE" in made.stderr


@pytest.mark.parametrize(
    "text,task,error",
    [
        (None, TASK, "no word list at"),
        ("", TASK, "lists no words"),
        ("# a comment only\n\n", TASK, "lists no words"),
        ("ทองประกาย\nสมชายA\n", TASK, "line 2: 'สมชายA' has 'A', outside the homework's source vocabulary"),
        ("ทองประกาย ลมหนาว\n", TASK, "line 1: 'ทองประกาย ลมหนาว' is not one Thai word"),
        ("ทองประกาย,Tong prakai\n", TASK, "'Tong prakai' is not a spelling the model can write"),
        (
            "\n".join(KNOWN + ["ทองประกาย"]),
            TASK,
            "holds 1 new word(s) (2 more that the kit already knows: สมชาย, ใจดี); 20 unseen "
            "names need at least 2",
        ),
        (WORD_LIST, "date-translation", "--words gives the unseen stratum its words, and date-translation's"),
    ],
)
def test_a_bad_word_list_is_one_line_and_writes_nothing(tmp_path, secret_file, text, task, error):
    words = tmp_path / "words.txt"
    if text is not None:
        words.write_text(text, encoding="utf-8")
    made = hidden_set_command(tmp_path, secret_file, "--words", str(words), task=task)
    assert made.returncode == 2 and error in made.stderr, made.stderr
    assert made.stderr.count("\n") == 1 and "Traceback" not in made.stderr
    assert not (tmp_path / "h").exists() and made.stdout == ""


def test_a_homework_bundle_grades_against_a_private_word_set(
    tmp_path, secret_file, word_list, no_feedback_examples
):
    bundle = "homework-bundle-kit-0.1.0.zip"
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / bundle).write_bytes((REPO_ROOT / "tests" / "fixtures" / bundle).read_bytes())
    make_hidden_set(TASK, secret_file, tmp_path / "hidden", n=40, words=word_list)
    record = grade_folder(
        tmp_path / "subs", load_rubric(task=TASK), tmp_path / "hidden", tmp_path / "grades", progress=False
    )[0]
    assert record["status"] == "graded", record["message"]
    assert {"accuracy_seen", "accuracy_unseen"} <= set(record["metrics"])
