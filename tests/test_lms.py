"""From the course's LMS and back: Canvas's and Moodle's downloads graded as they come, grades written in the
files their imports take, the late penalty, and Gradescope's leaderboard and visibility."""

import csv
import datetime as dt
import io
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder.batch import grade_folder
from autograder.lms import (
    apply_late,
    canvas_file_name,
    canvas_rows,
    moodle_rows,
    read_entries,
    read_roster,
    unpack_download,
)
from autograder.reports import gradescope_results
from autograder.rubric import RubricError, load_rubric
from labs import tasks
from tests.conftest import without_feedback_examples
from tests.test_autograder import _rubric, run_autograder

FIXTURES = Path(__file__).parent / "fixtures"
LAB2 = "date-translation"
THAI_NAME = "ใจดีสมชาย_34567_600_งาน.zip".encode(
    "utf-8"
)  # UTF-8 bytes in a zip without the UTF-8 flag (rubyzip)
LATE_RUBRIC = '\n[late]\npercent = 10\n\n[gradescope]\nvisibility = "after_published"\nleaderboard = ["exact_match", "score"]\n'


def _bundle(student_id: str) -> bytes:
    """The kit-0.1.0 lab-2 bundle with ``student_id`` in its meta.json."""
    source = zipfile.ZipFile(FIXTURES / "lab2-bundle-kit-0.1.0.zip")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "meta.json":
                data = json.dumps({**json.loads(data), "student_id": student_id}).encode()
            target.writestr(name, data)
    return buffer.getvalue()


def _files(folder: Path, names: dict[str, bytes]) -> Path:
    for name, data in names.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


# ---- reading what the LMS gave ----


def test_canvas_names_give_the_id_the_name_and_late_and_the_newest_file_of_each_student(tmp_path):
    folder = _files(
        tmp_path,
        {
            "doejane_12345_67890_submission.zip": b"a",
            "smithjohn_LATE_23456_78901_hw31-2.zip": b"b",
            "smithjohn_LATE_23456_78800_hw31.zip": b"c",
            "anon_Xy12z_555_hw.zip": b"d",
            "LATE_anon_Qq9_556_hw.zip": b"e",
            "ใจดีสมชาย_34567_600_งาน.zip": b"f",
            "my homework.zip": b"g",
        },
    )
    lms, entries = read_entries(folder)
    assert lms == "canvas"
    by_id = {e.id: e for e in entries}
    assert (
        sorted(i for i in by_id if not i.startswith("my_homework-"))
        == ["12345", "23456", "34567", "anon_Qq9", "anon_Xy12z"]
        and len(by_id) == 6
    )
    assert (by_id["12345"].name, by_id["12345"].late) == ("doejane", False)
    john = by_id["23456"]
    assert john.late and john.path.name == "smithjohn_LATE_23456_78901_hw31-2.zip"  # attachment 78901 > 78800
    assert (
        "2 files for this student" in john.notes[0]
        and "not graded: 'smithjohn_LATE_23456_78800_hw31.zip'" in john.notes[0]
    )
    assert by_id["anon_Xy12z"].name == "" and not by_id["anon_Xy12z"].late and by_id["anon_Qq9"].late
    assert by_id["34567"].name == "ใจดีสมชาย"
    stray = next(e for e in entries if e.id.startswith("my_homework"))
    assert stray.lms == "folder" and "follows no Canvas convention" in stray.notes[0]


def test_a_canvas_name_that_reads_as_more_than_one_student_is_graded_apart_and_never_exported(tmp_path):
    """Canvas removes `_digits_` from a name once, not for good: a student who may edit their name makes
    `mallory__12345__99999999999` into `mallory_12345_99999999999`, and their file reads, as Canvas itself
    reads it, as student 12345's (the newest, so graded in place of 12345's own), or without their LATE mark.
    A file's own name can read two ways too. Such a file gets an id no LMS gives, and export-grades leaves out
    it and every student it may be: no grade lands on a row it may not belong to."""
    folder = _files(
        tmp_path,
        {
            "victim_12345_208490284_hw.zip": b"v",
            "mallory_12345_99999999999_111_208490300_hw.zip": b"m",  # user 111 as user 12345
            "eve_222_208490999_LATE_222_208490301_hw.zip": b"e",  # user 222, late, as on time
            "ivy_444_208490300_LATE_444_208490300_hw.zip": b"i",  # the same ids twice: late all the same
            "bob_333_208490302_6512345678_hw3.zip": b"b",  # an honest file name that reads two ways
            "bob_333_208490303_report.pdf": b"p",  # bob's other file: not exported in the zip's place
            "anon_LATE_555_208490304_hw.zip": b"a",  # a student named anon, late: not anonymous
            "zed_\U0001d7cf\U0001d7d0_666_208490305_hw.zip": b"z",  # mathematical digits: a name, not an id
            "12345.zip": b"x",  # named by no Canvas convention: no Canvas student's
        },
    )
    _, entries = read_entries(folder)
    by_file = {e.path.name.split("_")[0]: e for e in entries}
    victim = by_file["victim"]
    assert (victim.id, victim.notes, victim.readings) == ("12345", [], [])
    mallory = by_file["mallory"]
    assert mallory.id.startswith("ambiguous-") and [r["user"] for r in mallory.readings] == [
        "12345",
        "99999999999",
        "111",
    ]
    assert "graded apart; export-grades leaves out both it and every student it may be" in mallory.notes[0]
    eve, ivy = by_file["eve"], by_file["ivy"]
    assert eve.late and [r["user"] for r in eve.readings] == ["222", "222"]
    assert ivy.late and ivy.id.startswith("ambiguous-") and len(ivy.readings) == 2
    bob = [e for e in entries if e.path.name.startswith("bob_")]
    assert sorted(e.id[:10] for e in bob) == ["333", "ambiguous-"]
    assert (by_file["anon"].id, by_file["anon"].name, by_file["anon"].late) == ("555", "anon", True)
    assert by_file["zed"].id == "666" and by_file["zed"].name == "zed_\U0001d7cf\U0001d7d0"
    assert by_file["12345.zip"].lms == "folder" and by_file["12345.zip"].identity()["lms_id"] == ""
    records = [
        {**_record(score=10.0), "student": e.id, "lms": e.identity(), "lines": [], "message": ""}
        for e in entries
    ]
    records.append({**records[0], "student": "digits", "lms": {"lms": "canvas", "lms_id": "\U0001d7cf"}})
    _, rows, skipped = canvas_rows(records, "Homework 3.1")
    assert sorted(row["ID"] for row in rows[1:]) == ["555", "666"]
    assert f"12345 (a reading of {mallory.id})" in skipped and "333 (a reading of " in " ".join(skipped)
    assert "digits" in skipped  # an id that is no Canvas user's
    assert f"{mallory.id} (mallory's file, read as 12345 or 99999999999 or 111)" in skipped


def test_canvas_writes_a_sortable_name_in_file_names_as_its_download_does():
    assert canvas_file_name("Doe, Jane") == "doejane"
    assert (
        canvas_file_name("mallory__12345__99999999999") == "mallory_12345_99999999999"
    )  # once, not for good
    assert canvas_file_name("ใจดี, สมชาย") == "ใจดีสมชาย"  # Thai vowel marks are marks: kept
    assert canvas_file_name("O'Brien-Smith, Seán 2nd") == "obriensmithseán2nd"


def test_the_course_roster_settles_whose_a_file_is_where_one_reading_only_is_a_student_of_it(tmp_path):
    """With Canvas's gradebook export, a file whose name reads two ways but has one student of the course among
    its readings (the other an attachment id read as a user) is that student's; one whose readings hold two
    students (a name made to read as a classmate's) stays left out, and so does the classmate."""
    folder = _files(
        tmp_path,
        {
            "victim_12345_208490284_hw.zip": b"v",
            "mallory_12345_99999999999_111_208490300_hw.zip": b"m",
            "carl_777_208490310_6512345678_hw3.zip": b"c",  # honest: 208490310 is no student
            "ivy_444_208490300_LATE_444_208490300_hw.zip": b"i",  # one student twice: hers, and late
            "dan_888_208490320_6512345678_hw3.zip": b"d",  # honest, but named otherwise in the roster
        },
    )
    _, entries = read_entries(folder)
    roster = tmp_path / "roster.csv"
    roster.write_text(
        '\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Homework 3.1 (778)\n"    Points Possible",,,,,100\n'
        '"Victim",12345,,,,\n"mallory__12345__99999999999",111,,,,\n"Carl",777,,,,\n"Ivy",444,,,,\n'
        '"Smith, Dan",888,,,,\n',
        encoding="utf-8",
    )
    records = [
        {**_record(score=10.0 + i), "student": e.id, "lms": e.identity(), "lines": [], "message": ""}
        for i, e in enumerate(entries)
    ]
    _, rows, skipped = canvas_rows(records, "HW", read_roster(roster))
    assert sorted((row["ID"], row["Student"]) for row in rows[1:]) == [("444", "Ivy"), ("777", "Carl")]
    by_id = {e.path.name.split("_")[0]: e.id for e in entries}
    assert f"{by_id['mallory']} (mallory's file, read as 12345 or 99999999999 or 111)" in skipped
    assert f"12345 (a reading of {by_id['mallory']})" in skipped
    assert f"{by_id['dan']} (dan's file, read as 888 or 208490320)" in skipped  # not the roster's name
    _, rows, _ = canvas_rows(records, "HW")  # without the roster: all five left out
    assert rows[1:] == []


def test_export_grades_says_why_it_exports_nothing_when_every_student_is_left_out(tmp_path):
    """An honest student's bundle named `6512345678_hw3.zip` reads two ways, so it and the student's other file
    (a report, graded 0) are both left out: the error said they came from no Canvas download."""
    readings = [
        {"name": "honest", "user": "555", "attachment": "208490305"},
        {"name": "honest_555", "user": "208490305", "attachment": "6512345678"},
    ]
    for student, lms_id, score, extra in (
        ("ambiguous-46218249", "ambiguous-46218249", 10.0, {"readings": readings}),
        ("555", "555", 0.0, {}),
    ):
        record = {
            **_record(score=score),
            "student": student,
            "task": LAB2,
            "lms": {"lms": "canvas", "lms_id": lms_id, "name": "honest", **extra},
        }
        (tmp_path / "results").mkdir(exist_ok=True)
        (tmp_path / "results" / f"{student}.json").write_text(
            json.dumps({"extra_data": {"attention_lab": record}}), encoding="utf-8"
        )
    exported = run_autograder("export-grades", str(tmp_path), "--lms", "canvas", "--assignment", "HW")
    assert exported.returncode == 2 and "none of the 2 graded submission(s)" in exported.stderr
    assert (
        "can be exported: 555 (a reading of ambiguous-46218249), ambiguous-46218249 (honest's file, read as 555 "
        "or 208490305)" in exported.stderr
    )
    assert not (tmp_path / "canvas-grades.csv").exists()
    # The course's roster settles the zip as user 555's: exported once the report's 0 is not beside it
    (tmp_path / "roster.csv").write_text("Student,ID\nHonest,555\nOther,556\n", encoding="utf-8")
    roster = ("--roster", str(tmp_path / "roster.csv"))
    exported = run_autograder(
        "export-grades", str(tmp_path), "--lms", "canvas", "--assignment", "HW", *roster
    )
    assert exported.returncode == 2 and "(user 555 has another graded file)" in exported.stderr
    (tmp_path / "results" / "555.json").unlink()
    exported = run_autograder(
        "export-grades", str(tmp_path), "--lms", "canvas", "--assignment", "HW", *roster
    )
    assert exported.returncode == 0 and "1 grade(s)" in exported.stdout, exported.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "canvas-grades.csv").read_text(encoding="utf-8"))))
    assert [(r["Student"], r["ID"], r["HW"]) for r in rows[1:]] == [("Honest", "555", "10")]
    moodle = run_autograder("export-grades", str(tmp_path), "--lms", "moodle", *roster)
    assert moodle.returncode == 2 and "--roster is Canvas's" in moodle.stderr


def test_the_roster_names_the_assignments_column_with_its_id_and_refuses_one_it_does_not_list(tmp_path):
    """Canvas's import takes a column it has no assignment of for a new assignment: with the course's gradebook
    export, --assignment is checked against its columns and written with its id, as the export names it; each
    row takes the roster's columns, and a student the roster does not list is left out (Canvas would ask)."""
    for student, score in (("555", 85.0), ("556", 70.0)):
        record = {**_record(score=score), "student": student, "task": LAB2}
        record["lms"] = {"lms": "canvas", "lms_id": student, "name": "doejane"}
        (tmp_path / "results").mkdir(exist_ok=True)
        (tmp_path / "results" / f"{student}.json").write_text(
            json.dumps({"extra_data": {"attention_lab": record}}), encoding="utf-8"
        )
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Homework 3.1 (778),Quiz (801),Quiz (802),"
        'Lab 2: Dates (803),Current Points,Final Points\n"    Points Possible",,,,,10,5,5,100,(read only),'
        '(read only)\n"Doe, Jane",555,6510000001,jdoe,NLP 1,60.00,,85.00,,0,0\n',
        encoding="utf-8",
    )

    def export(assignment, *more):
        (tmp_path / "canvas-grades.csv").unlink(missing_ok=True)
        return run_autograder(
            "export-grades", str(tmp_path), "--lms", "canvas", "--assignment", assignment, *more
        )

    for given in ("Homework 3.1", " Homework  3.1 ", "Homework 3.1 (778)", "778", "(778)"):
        exported = export(given, "--roster", str(roster))
        assert exported.returncode == 0, exported.stderr
        rows = list(csv.DictReader(io.StringIO((tmp_path / "canvas-grades.csv").read_text(encoding="utf-8"))))
        assert [tuple(r.values()) for r in rows] == [
            ("Points Possible", "", "", "", "", "100"),
            ("Doe, Jane", "555", "6510000001", "jdoe", "NLP 1", "85"),
        ]
        # Canvas keeps the assignment's points: 85 of 100 would read as 850 %
        assert "'Homework 3.1 (778)' is worth 10 points in Canvas, and these grades are out of 100" in (
            exported.stderr
        )
        assert "556 (not in the roster)" in exported.stderr
        # the column held another grade of hers: another assignment's, or one entered in Canvas since
        assert "already holds other grades of 1 of these students (e.g. Doe, Jane: 60.00, now 85)" in (
            exported.stderr
        )
        assert f"1 grade(s) of {tasks.get(LAB2).title} in the column 'Homework 3.1 (778)'" in exported.stdout
    for given, said in (
        ("Homwork 3.1", "did you mean 'Homework 3.1'?"),
        ("Lab 2", "did you mean 'Lab 2: Dates'?"),
        ("Lab 2: Dates (778)", "its id 778 is 'Homework 3.1 (778)'"),
        (
            "Quiz",
            "2 assignments titled 'Quiz': give one with its id, as its column says ('Quiz (801)', 'Quiz (802)')",
        ),
    ):
        refused = export(given, "--roster", str(roster))
        assert refused.returncode == 2 and said in refused.stderr and "Traceback" not in refused.stderr
        assert not (tmp_path / "canvas-grades.csv").exists()
    exported = export("Quiz (802)", "--roster", str(roster))
    assert exported.returncode == 0 and "worth 5 points" in exported.stderr, exported.stderr
    assert "already holds" not in exported.stderr  # 85.00 there is the 85 it writes
    assert "Quiz (802)" in (tmp_path / "canvas-grades.csv").read_text(encoding="utf-8").splitlines()[0]
    # Without the roster nothing is checked, and it says so: both students' rows, under Canvas's file names
    unchecked = export("Homework 3.1")
    assert unchecked.returncode == 0 and "'Homework 3.1' is not checked: give --roster" in unchecked.stderr
    assert export("Homework 3.1 (778)").stderr == ""  # a column with its id is Canvas's own
    alone = export("779")  # Canvas would make an assignment titled 779
    assert alone.returncode == 2 and "--assignment 779 is an id alone" in alone.stderr
    assert not (tmp_path / "canvas-grades.csv").exists()
    # A roster a spreadsheet saved with semicolons says so
    semicolons = tmp_path / "semicolons.csv"
    semicolons.write_text('Student;ID;Section\n"Doe, Jane";555;NLP 1\n', encoding="utf-8")
    refused = export("Homework 3.1", "--roster", str(semicolons))
    assert refused.returncode == 2 and "columns are split by semicolons" in refused.stderr


def test_a_name_that_is_not_utf8_is_read_as_text(tmp_path):
    """A byte that is not UTF-8 in a name (a download unpacked by hand) became a lone surrogate in the entry:
    its results file could not be written (UnicodeEncodeError), and export-grades silently had one grade less."""
    (tmp_path / os.fsdecode(b"doe\xffjane_12345_678_h\xfew.zip")).write_bytes(b"x")
    (tmp_path / "roe_23456_679_hw.zip").write_bytes(b"y")
    _, entries = read_entries(tmp_path)
    jane = next(e for e in entries if e.id == "12345")
    assert (jane.name, jane.file) == ("doe\ufffdjane", "h\ufffdw.zip")
    json.dumps(jane.identity(), ensure_ascii=False).encode("utf-8")  # raised for the surrogates


def test_a_refusal_note_a_student_uploads_is_read_as_plain_text(tmp_path):
    """A download's ``NAME.refused.txt`` says why a file was not written; a student can upload such a file: what
    it says is one line of plain text."""
    (tmp_path / "mallory_111_2084_hw.zip.refused.txt").write_bytes(b"\x1b[2Jover quota\n\x1b]0;t\x07bye")
    (tmp_path / "roe_23456_679_hw.zip").write_bytes(b"y")
    _, entries = read_entries(tmp_path)
    assert next(e for e in entries if e.id == "111").problem == "over quota bye"


def test_a_students_files_are_parts_of_one_submission_the_bundle_is_graded_and_loose_files_put_together(
    tmp_path,
):
    folder = _files(
        tmp_path / "in",
        {
            "blackkate_99999_10001_submission.zip": b"zip",
            "blackkate_99999_10002_screenshot.png": b"png",
            "whitetom_67890_55555_meta.json": b"{}",
            "whitetom_67890_55556_model.keras": b"k",
            "whitetom_67890_55557_vocab.json": b"v",
            "whitetom_67890_55558_notes.txt": b"n",
            "greenamy_11111_1_a.zip": b"a",
            "greenamy_11111_2_b.zip": b"b",
        },
    )
    _, entries = read_entries(folder, scratch=tmp_path / "scratch")
    by_id = {e.id: e for e in entries}
    assert by_id["99999"].path.name == "blackkate_99999_10001_submission.zip"  # not the newer screenshot
    assert "not graded: 'blackkate_99999_10002_screenshot.png'" in by_id["99999"].notes[0]
    tom = by_id["67890"]
    assert tom.path.is_dir() and sorted(p.name for p in tom.path.iterdir()) == [
        "meta.json",
        "model.keras",
        "vocab.json",
    ]
    assert (tom.path / "model.keras").read_bytes() == b"k" and tom.path.is_relative_to(tmp_path / "scratch")
    assert (
        "put together from 3 loose files" in tom.notes[0]
        and "not graded: 'whitetom_67890_55558_notes.txt'" in tom.notes[1]
        and tom.name == "whitetom"
    )
    assert by_id["11111"].path.name == "greenamy_11111_2_b.zip"  # the newer of two zips
    flat = _files(
        tmp_path / "moodle",
        {
            "Amy Green_104_assignsubmission_file_meta.json": b"{}",
            "Amy Green_104_assignsubmission_file_model.keras": b"k",
            "Amy Green_104_assignsubmission_file_vocab.json": b"v",
        },
    )
    _, entries = read_entries(flat, scratch=tmp_path / "scratch2")
    assert len(entries) == 1 and entries[0].path.is_dir() and entries[0].name == "Amy Green"


def test_moodle_folders_prefixes_and_blind_marking(tmp_path):
    folder = _files(
        tmp_path,
        {
            "Jane Doe_101_assignsubmission_file/submission.zip": b"a",
            "John Smith_102_assignsubmission_file_/old.zip": b"b",
            "John Smith_102_assignsubmission_file_/new.zip": b"c",
            "Participant_103_assignsubmission_file_hw.zip": b"d",
            "Participant_103_assignsubmission_onlinetext_onlinetext.html": b"<p>see the zip</p>",
            "Ann Lee_104_assignsubmission_onlinetext_onlinetext.html": b"<p>forgot the zip</p>",
        },
    )
    (folder / "John Smith_102_assignsubmission_file_" / "old.zip").touch()
    import os

    os.utime(folder / "John Smith_102_assignsubmission_file_" / "old.zip", (1, 1))
    lms, entries = read_entries(folder)
    assert lms == "moodle"
    by_id = {e.id: e for e in entries}
    assert sorted(by_id) == ["101", "102", "103", "104"]
    assert by_id["101"].name == "Jane Doe" and by_id["101"].path.name == "submission.zip"
    assert by_id["102"].path.name == "new.zip" and "not graded: 'old.zip'" in by_id["102"].notes[0]
    assert by_id["103"].name == "" and by_id["103"].path.name.endswith(
        "hw.zip"
    )  # the file, not the online text
    assert by_id["104"].problem == "Moodle's onlinetext submission, not a file"


def test_gradescope_export_names_its_submitters(tmp_path):
    folder = _files(
        tmp_path,
        {
            "submission_11/a.zip": b"a",
            "submission_12/b.zip": b"b",
            "submission_metadata.yml": (
                "submission_11:\n  :submitters:\n  - :name: Jane Doe\n    :sid: '6401'\n    :email: "
                "jane@uni.ac.th\n"
                "  :created_at: 2026-11-20 10:00:00.123456789 +07:00\nsubmission_12:\n  :submitters:\n"
                "  - :name: John Smith\n    :email: john@uni.ac.th\n"
            ).encode(),
        },
    )
    lms, entries = read_entries(folder)
    assert lms == "gradescope"
    assert [(e.id, e.name) for e in entries] == [("6401", "Jane Doe"), ("john@uni.ac.th", "John Smith")]
    assert entries[0].submitted == "2026-11-20T10:00:00.123456+07:00" and entries[1].submitted == ""


def test_a_gradescope_name_over_several_lines_is_a_name_never_keys(tmp_path):
    """Ruby's YAML writes a name with a line break as a block, each line indented past the key: lines that
    read as ``:sid:`` and ``:created_at:`` gave a student another's id (and that student's own submission
    was then not graded) and any submission time."""
    metadata = (
        "submission_100:\n  :submitters:\n  - :name: |-\n      Mallory\n      :sid: '6500000002'\n"
        "      :created_at: 2099-01-01 00:00:00.000000000 +00:00\n    :sid: '6500000001'\n"
        "  :created_at: 2026-11-20 10:00:00.000000000 +07:00\n"
        "submission_200:\n  :submitters:\n  - :name: Victim Long Name Folded\n      :sid: '6500000003'\n"
        "    :sid: '6500000002'\n  :created_at: 2026-11-20 09:00:00.000000000 +07:00\n"
    )
    folder = _files(
        tmp_path,
        {
            "submission_100/a.zip": b"a",
            "submission_200/b.zip": b"b",
            "submission_metadata.yml": metadata.encode(),
        },
    )
    _, entries = read_entries(folder)
    assert [(e.id, e.name, e.submitted, e.notes) for e in entries] == [
        ("6500000001", "", "2026-11-20T10:00:00+07:00", []),
        ("6500000002", "Victim Long Name Folded", "2026-11-20T09:00:00+07:00", []),
    ]
    for forged in (
        "Mallory\x0c    :sid: '6500000002'",
        "Mallory\x85:sid: '6500000002'",
        "M\u2028  :sid: '6500000002'",
    ):
        (folder / "submission_metadata.yml").write_text(  # by hand: Ruby escapes these; no line ends there
            f"submission_100:\n  :submitters:\n  - :name: {forged}\n    :sid: '6500000001'\n",
            encoding="utf-8",
        )
        assert read_entries(folder)[1][0].id == "6500000001", forged


def test_a_plain_folder_stays_one_entry_per_student(tmp_path):
    folder = _files(
        tmp_path,
        {
            "alice.zip": b"a",
            "bob/meta.json": b"{}",
            "submission_metadata.yml": b"x: 1\n",
            "carol_1_2_hw.zip": b"c",
        },
    )
    lms, entries = read_entries(folder)  # one Canvas-like name among three is not Canvas
    assert lms == "folder" and [e.id for e in entries] == ["alice", "bob", "carol_1_2_hw"]
    assert not any(e.notes for e in entries)
    folder = _files(tmp_path / "two", {"alice.zip": b"a", "bob/meta.json": b"{}"})
    lms, entries = read_entries(folder, "canvas")  # forced: each name is noted, none is lost
    assert (
        lms == "canvas" and len(entries) == 2 and all("no Canvas convention" in e.notes[0] for e in entries)
    )


def test_a_download_zip_is_unpacked_without_trusting_its_names_links_or_sizes(tmp_path):
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("doejane_12345_67890_submission.zip", b"ok")
        archive.writestr("../evil_1_2_x.zip", b"out")
        archive.writestr("/abs_3_4_y.zip", b"abs")
        link = zipfile.ZipInfo("link_5_6_z.zip")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
        archive.writestr("big_7_8_w.zip", b"x" * 5000)
        archive.writestr("x" * 300 + "_9_10_v.zip", b"long")
        archive.writestr("Q" * len(THAI_NAME), b"thai")  # its name's bytes put in below, with no flag
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("doejane_12345_67890_submission.zip", b"again")
    download.write_bytes(download.read_bytes().replace(b"Q" * len(THAI_NAME), THAI_NAME))  # as rubyzip writes
    folder = unpack_download(download, tmp_path / "in", max_member_bytes=1000)
    written = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert (folder / "doejane_12345_67890_submission.zip").read_bytes() == b"ok"
    assert (folder / "ใจดีสมชาย_34567_600_งาน.zip").read_bytes() == b"thai"
    assert all(p.parent == folder for p in folder.rglob("*"))  # '/abs...' and '../' made no folder
    assert not (tmp_path / "evil_1_2_x.zip").exists() and not any(p.is_symlink() for p in folder.rglob("*"))
    refused = {name: (folder / name).read_text() for name in written if name.endswith(".refused.txt")}
    assert len(refused) == 6, written
    assert "could not be written" in refused["doejane_12345_67890_submission.zip.refused.txt"]
    assert any("outside its own folder" in why for why in refused.values())
    assert any("as a link" in why for why in refused.values())
    assert any("over the" in why for why in refused.values())
    assert any("no file system holds" in why for why in refused.values())
    _, entries = read_entries(folder)
    problems = {e.id for e in entries if e.problem}  # each still gets its row
    assert len(problems) == 5 and {"1", "3", "5", "7"} < problems  # 12345 keeps its written file
    with pytest.raises(Exception, match="neither a folder of submissions nor a readable zip"):
        unpack_download(tmp_path / "in" / "doejane_12345_67890_submission.zip", tmp_path / "again", 1000)


# ---- lateness ----


def _record(score=80.0, late=True, submitted="", status="graded"):
    return {
        "student": "s",
        "score": score,
        "max_score": 100.0,
        "status": status,
        "lms": {"lms": "canvas", "lms_id": "1", "late": late, "submitted": submitted},
    }


def test_the_late_penalty_follows_the_rubric_and_is_idempotent(tmp_path):
    def policy(text):
        path = _rubric(tmp_path, LAB2)
        path.write_text(path.read_text(encoding="utf-8") + "\n[late]\n" + text, encoding="utf-8")
        return load_rubric(path).late

    flat = policy("percent = 10\n")
    record = _record()
    apply_late(record, flat)
    assert (record["score_before_late"], record["score"], record["late_penalty"]["rule"]) == (
        80.0,
        70.0,
        "10 % of 100",
    )
    apply_late(record, flat)  # a cached record again: the same, not 60
    assert record["score"] == 70.0
    on_time = _record(late=False)
    apply_late(on_time, flat)
    assert on_time["score"] == 80.0 and on_time["late_penalty"] is None
    failed = _record(score=10.0, status="timeout")
    apply_late(failed, flat)
    assert failed["score"] == 10.0

    daily = policy("percent = 5\nper_day_percent = 10\ndue = 2026-12-01T23:59:00+07:00\nmax_percent = 30\n")
    two_days = _record(late=None, submitted="2026-12-03T10:00:00+07:00")  # 1 day 10 h after: 2 started days
    apply_late(two_days, daily)
    assert two_days["lms"]["late"] is True  # late by its time: the gradebook's late column
    assert two_days["score"] == 80.0 - 25.0 and "2 days x 10 %" in two_days["late_penalty"]["rule"]
    ten_days = _record(late=None, submitted="2026-12-11T00:00:00+07:00")
    apply_late(ten_days, daily)
    assert (
        ten_days["score"] == 50.0
        and ten_days["late_penalty"]["rule"] == "5 % and 10 days x 10 %, at most 30 % of 100"
    )
    early = _record(late=None, submitted="2026-12-01T23:00:00+07:00")
    apply_late(early, daily)
    assert early["score"] == 80.0 and early["lms"]["late"] is False  # on time by its time: marked not late
    unknown = _record(late=True, submitted="")  # Canvas's LATE, no time: the flat part only
    apply_late(unknown, daily)
    assert (
        unknown["score"] == 75.0
        and unknown["late_penalty"]["rule"] == "5 % of 100; no daily penalty: the LMS gave no submission time"
    )
    apply_late(record, None)  # no [late] table: shown, never charged
    assert record["score"] == 80.0


@pytest.mark.parametrize(
    "table,text,error",
    [
        ("late", "percent = 120\n", "0 to 100"),
        ("late", "per_day_percent = 5\n", "give 'due' too"),
        ("late", 'per_day_percent = 5\ndue = "2026-12-01T23:59:00"\n', "needs its UTC offset"),
        ("late", 'per_day_percent = 5\ndue = "tomorrow"\n', "must be a date and time"),
        ("late", "percnt = 10\n", "unknown key 'percnt'"),
        ("gradescope", 'visibility = "students"\n', "'visibility' must be one of"),
        ("gradescope", 'leaderboard = ["accuracy"]\n', "neither 'score' nor a metric"),
        ("gradescope", 'leaderboard = ["score:up"]\n', "'asc' or 'desc'"),
        ("gradescope", 'leaderbord = ["score"]\n', "unknown key 'leaderbord'"),
        ("gradescope", "leaderboard = []\n", "names no column"),
        ("gradescope", 'leaderboard = ["score", "score:asc"]\n', "names 'score' twice"),
        ("late", 'percent = "10"\n', "'percent' must be a number, got '10'"),
    ],
)
def test_a_bad_late_or_gradescope_table_names_the_field(tmp_path, table, text, error):
    path = _rubric(tmp_path, LAB2)
    path.write_text(path.read_text(encoding="utf-8") + f"\n[{table}]\n" + text, encoding="utf-8")
    with pytest.raises(RubricError, match=rf"\[{table}\]: .*{re.escape(error)}"):
        load_rubric(path)


def test_a_key_the_rubric_does_not_use_is_named_not_ignored(tmp_path):
    path = _rubric(tmp_path, LAB2)
    path.write_text("late = 10\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(RubricError, match="unknown key 'late'|'late' must be a table"):
        load_rubric(path)
    path.write_text(
        path.read_text(encoding="utf-8").replace("late = 10\n", "tittle = 'x'\n"), encoding="utf-8"
    )
    with pytest.raises(RubricError, match="unknown key 'tittle'"):
        load_rubric(path)


def test_late_and_gradescope_tables_do_not_change_what_decides_a_run(tmp_path):
    plain = _rubric(tmp_path, LAB2)
    digest = load_rubric(plain).grading_digest()
    plain.write_text(plain.read_text(encoding="utf-8") + LATE_RUBRIC, encoding="utf-8")
    assert load_rubric(plain).grading_digest() == digest
    plain.write_text(plain.read_text(encoding="utf-8").replace("beam", "beam = 2\n#"), encoding="utf-8")
    assert load_rubric(plain).grading_digest() != digest


def test_gradescope_results_carry_the_rubrics_leaderboard_and_visibility(tmp_path):
    path = _rubric(tmp_path, LAB2)
    path.write_text(
        path.read_text(encoding="utf-8") + '\n[gradescope]\nvisibility = "after_due_date"\n'
        'leaderboard = ["exact_match", "score:asc"]\n',
        encoding="utf-8",
    )
    rubric = load_rubric(path)
    lines = [
        {
            "name": "architecture",
            "label": "a",
            "value": 1.0,
            "points": 10,
            "max_points": 10,
            "rule": "",
            "message": "",
            "shown": "",
        }
    ]
    lines += [
        {
            "name": m.name,
            "label": m.label,
            "value": 0.5,
            "points": 1,
            "max_points": m.points,
            "rule": "",
            "message": "",
            "shown": "",
        }
        for m in rubric.metrics
    ]
    record = {"score": 12.0, "max_score": rubric.max_score, "status": "graded", "message": "", "lines": lines}
    results = gradescope_results(record, rubric)
    assert results["visibility"] == "after_due_date"
    assert results["leaderboard"] == [
        {"name": "exact_match", "value": 0.5, "order": "desc"},
        {"name": "score", "value": 12.0, "order": "asc"},
    ]
    default = gradescope_results(record, load_rubric(task=LAB2))
    assert default["visibility"] == "visible" and default["leaderboard"][0]["name"] == "score"
    assert [e["name"] for e in default["leaderboard"][1:]] == [m.name for m in load_rubric(task=LAB2).metrics]


# ---- grades back ----


def test_canvas_and_moodle_rows_take_only_their_own_students():
    records = [
        {
            **_record(score=70.0),
            "student": "12345",
            "lms": {"lms": "canvas", "lms_id": "12345", "name": "doejane"},
            "lines": [],
            "message": "",
        },
        {
            **_record(),
            "student": "anon_X",
            "lms": {"lms": "canvas", "lms_id": "anon_X"},
            "lines": [],
            "message": "",
        },
        {
            **_record(score=55.5),
            "student": "101",
            "lms": {"lms": "moodle", "lms_id": "101", "name": "Jane Doe"},
            "lines": [{"label": "exact match", "points": 45.5, "max_points": 90, "shown": "50.0 %"}],
            "message": "=cmd|' /C calc'!A0 <img src=\"http://e.example/t.png\"> & more",
        },
    ]
    columns, rows, skipped = canvas_rows(records, "Homework 3.1")
    assert columns == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 3.1"]
    assert rows[0]["Student"] == "Points Possible" and rows[0]["Homework 3.1"] == "100"
    assert rows[1:] == [
        {
            "Student": "doejane",
            "ID": "12345",
            "SIS User ID": "",
            "SIS Login ID": "",
            "Section": "",
            "Homework 3.1": "70",
        }
    ]
    assert skipped == ["anon_X", "101"]
    when = dt.datetime(2026, 11, 24, 21, 0, tzinfo=dt.timezone.utc)
    columns, rows, skipped = moodle_rows(records, "Homework 3.1", when)
    assert columns[:3] == ["Identifier", "Full name", "Grade"] and "Last modified (grade)" in columns
    assert rows == [
        {
            "Identifier": "Participant 101",
            "Full name": "Jane Doe",
            "Grade": "55.5",
            "Maximum Grade": "100",
            "Last modified (grade)": "2026-11-24 21:00:00 +0000",
            "Feedback comments": rows[0]["Feedback comments"],
        }
    ]
    assert rows[0]["Feedback comments"].startswith("Homework 3.1: 55.5 / 100 (graded)")
    assert "exact match: 45.5 / 90 (50.0 %)" in rows[0]["Feedback comments"]
    # Moodle keeps the comment as HTML: the student's text is escaped, shown as text, never a tag
    assert rows[0]["Feedback comments"].endswith('&lt;img src="http://e.example/t.png"&gt; &amp; more')
    assert skipped == ["12345", "anon_X"]


# ---- end to end, as an instructor of a Canvas course and of a Moodle course ----


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms-hidden")
    (root / "secret.txt").write_text("an LMS test's secret, long enough to seed a hidden set")
    made = run_autograder(
        "hidden-set",
        "--task",
        LAB2,
        "--seed-file",
        str(root / "secret.txt"),
        "--out",
        str(root / "hidden"),
        "--n",
        "40",
    )
    assert made.returncode == 0, made.stderr
    return root / "hidden"


def test_export_grades_warns_of_a_batch_stopped_part_way(tmp_path, hidden, monkeypatch):
    """Ctrl-C keeps what was graded, and its gradebook: export-grades then wrote part of the class's grades
    and said nothing of the rest."""
    import autograder.batch

    folder = _files(tmp_path / "download", {"doejane_12345_67890_submission.zip": _bundle("doejane")})
    grades, rubric = tmp_path / "grades", load_rubric(_rubric(tmp_path, LAB2))

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(autograder.batch, "_run_pool", stopped)
    with pytest.raises(KeyboardInterrupt):
        grade_folder(folder, rubric, hidden, grades, progress=False)
    assert (grades / "stopped.txt").read_text(encoding="utf-8").startswith("grade was stopped after 0 of 1")
    nothing = run_autograder("export-grades", str(grades), "--lms", "canvas", "--assignment", "HW")
    assert nothing.returncode == 2 and "was stopped before it graded any submission" in nothing.stderr
    record = {**_record(), "student": "12345", "task": LAB2, "lms": {"lms": "canvas", "lms_id": "12345"}}
    (grades / "results" / "12345.json").write_text(json.dumps({"extra_data": {"attention_lab": record}}))
    exported = run_autograder("export-grades", str(grades), "--lms", "canvas", "--assignment", "HW")
    assert "warning: grade was stopped after 0 of 1 submissions" in exported.stderr, exported.stderr
    monkeypatch.setattr(autograder.batch, "_run_pool", lambda *args, **kwargs: iter(()))
    grade_folder(folder, rubric, hidden, grades, progress=False)  # a run that ends
    assert not (grades / "stopped.txt").exists()


def test_a_new_grade_run_removes_the_lms_files_of_the_grades_before_it(tmp_path, hidden, monkeypatch, capsys):
    """export-grades' canvas-grades.csv stayed in the grades folder after a new batch, easy to upload by
    mistake with the grades it no longer holds."""
    import autograder.batch
    from autograder.__main__ import main

    grades = tmp_path / "grades"
    grades.mkdir()
    for name, age in (("canvas-grades.csv", 1), ("moodle-worksheet.csv", None), ("notes.csv", 1)):
        (grades / name).write_text("the grades before\n", encoding="utf-8")
        if age:
            os.utime(grades / name, (age, age))

    def regraded(submissions, rubric, hidden_dir, out, **kwargs):
        (Path(out) / "gradebook.csv").write_text("student\n", encoding="utf-8")
        os.utime(Path(out) / "moodle-worksheet.csv", None)  # written after this gradebook: kept
        return []

    monkeypatch.setattr(autograder.batch, "grade_folder", regraded)
    argv = ["grade", str(tmp_path), "--task", LAB2, "--hidden", str(hidden), "--out", str(grades), "--quiet"]
    assert main(argv) == 0
    assert sorted(p.name for p in grades.iterdir()) == ["gradebook.csv", "moodle-worksheet.csv", "notes.csv"]
    said = capsys.readouterr().err
    assert f"removed {grades / 'canvas-grades.csv'}: it held the grades before this run" in said


def test_the_grades_folder_the_grader_makes_is_the_instructors_alone(tmp_path, hidden, monkeypatch, capsys):
    """The grades folder holds every student's grade and feedback: one the grader makes is private (0700) under
    any isolation; one the instructor made keeps the mode they gave it where the isolation needs no other."""
    import autograder.batch
    from autograder.similarity import save_evidence, write_similarity

    folder = _files(tmp_path / "download", {"doejane_12345_67890_submission.zip": _bundle("doejane")})
    rubric = load_rubric(_rubric(tmp_path, LAB2))
    monkeypatch.setattr(autograder.batch, "_run_pool", lambda *args, **kwargs: iter(()))
    for isolation in ("auto", "none"):
        made = tmp_path / isolation / "grades"
        grade_folder(folder, rubric, hidden, made, progress=False, isolation=isolation)
        assert stat.S_IMODE(made.stat().st_mode) == 0o700 and (made / "gradebook.csv").is_file()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o750)
    shared.chmod(0o750)  # a folder for the course's graders, whatever the umask
    grade_folder(folder, rubric, hidden, shared, progress=False, isolation="none")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o750
    assert "other users of this machine can read" not in capsys.readouterr().err
    # A folder anyone may enter (pytest's own are private: one in the system's /tmp) gets a warning
    opened = Path(tempfile.mkdtemp(prefix="grades-"))
    try:
        opened.chmod(0o755)
        grade_folder(folder, rubric, hidden, opened, progress=False, isolation="none")
        said = capsys.readouterr().err
        assert f"warning: other users of this machine can read what grade writes into {opened}" in said
        # The similarity evidence holds hidden inputs: its folder is private, whatever the folder above
        save_evidence(opened, {"student": "x"}, {"fingerprint": "ab", "matrices": []}, None)
        assert stat.S_IMODE((opened / "similarity").stat().st_mode) == 0o700
        write_similarity(opened, [])
        assert stat.S_IMODE((opened / "similarity.csv").stat().st_mode) == 0o600
    finally:
        shutil.rmtree(opened)


def test_a_canvas_download_is_graded_as_it_comes_and_its_grades_go_back(tmp_path, hidden):
    rubric = _rubric(tmp_path, LAB2, wall_seconds=120)
    rubric.write_text(rubric.read_text(encoding="utf-8") + LATE_RUBRIC, encoding="utf-8")
    download = tmp_path / "hw-submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("doejane_12345_67890_submission.zip", _bundle("Doe, Jane"))
        archive.writestr("smithjohn_LATE_23456_78800_hw31.zip", b"not a zip: the older upload")
        archive.writestr("smithjohn_LATE_23456_78901_hw31-2.zip", _bundle("6401234"))
        archive.writestr("anon_Xy12z_555_notes.txt", b"my answers are in my head")
        archive.writestr("doejane_12345_67891_screenshot.png", b"a picture of my loss curve")
        loose = zipfile.ZipFile(io.BytesIO(_bundle("greenamy")))
        for number, name in enumerate(
            ("meta.json", "model.keras", "vocab.json")
        ):  # the bundle's files, not its zip
            archive.writestr(f"greenamy_45678_{900 + number}_{name}", loose.read(name))
        link = zipfile.ZipInfo("leelisa_34567_600_link.zip")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    with without_feedback_examples():  # the Moodle test grades from the command line, examples and all
        grade_folder(download, load_rubric(rubric, LAB2), hidden, tmp_path / "grades", progress=False)
    with open(tmp_path / "grades" / "gradebook.csv", encoding="utf-8") as handle:
        book = {row["student"]: row for row in csv.DictReader(handle)}
    assert sorted(book) == ["12345", "23456", "34567", "45678", "anon_Xy12z"]
    assert book["45678"]["status"] == "graded" and "put together from 3 loose files" in book["45678"]["notes"]
    assert "not graded: 'doejane_12345_67891_screenshot.png'" in book["12345"]["notes"]
    jane, john = book["12345"], book["23456"]
    assert (jane["name"], jane["lms"], jane["late"], jane["status"]) == ("doejane", "canvas", "no", "graded")
    assert "meta.json names student" not in jane["notes"]  # "Doe, Jane" is doejane
    assert (
        john["late"] == "yes"
        and john["status"] == "graded"
        and john["bundle"] == "smithjohn_LATE_23456_78901_hw31-2.zip"
    )
    assert (
        float(john["score"]) == float(john["score_before_late"]) - 10
        and john["late_penalty"] == "10 (10 % of 100)"
    )
    assert (
        "2 files for this student" in john["notes"] and "meta.json names student '6401234'" in john["notes"]
    )
    assert float(jane["score"]) == float(john["score_before_late"])  # the same bundle
    assert book["anon_Xy12z"]["status"] == "malformed" and book["34567"]["status"] == "malformed"
    assert "as a link" in book["34567"]["message"]
    assert not list((tmp_path / "grades").glob(".download-*"))  # the unpacked download is gone
    feedback = (tmp_path / "grades" / "feedback" / "23456.md").read_text(encoding="utf-8")
    assert "Late: 10 points off, 10 % of 100. Before the penalty: 10" in feedback  # no Markdown escape in it
    results = json.loads((tmp_path / "grades" / "results" / "23456.json").read_text(encoding="utf-8"))
    assert "Late: 10 points off" in results["output"]
    assert results["visibility"] == "after_published" and [e["name"] for e in results["leaderboard"]] == [
        "exact_match",
        "score",
    ]

    exported = run_autograder(
        "export-grades", str(tmp_path / "grades"), "--lms", "canvas", "--assignment", "Homework 3.1 (778)"
    )
    assert exported.returncode == 0, exported.stderr
    assert "4 grade(s)" in exported.stdout and "anon_Xy12z" in exported.stderr
    with open(tmp_path / "grades" / "canvas-grades.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["Student"] == "Points Possible" and rows[0]["Homework 3.1 (778)"] == "100"
    assert {r["ID"]: r["Homework 3.1 (778)"] for r in rows[1:]} == {
        "12345": jane["score"],
        "23456": john["score"],
        "34567": "0",
        "45678": book["45678"]["score"],
    }
    nothing = run_autograder("export-grades", str(tmp_path / "grades"), "--lms", "moodle")
    assert nothing.returncode == 2 and "came from a Moodle download" in nothing.stderr
    assert nothing.stderr.count("\n") == 1
    (tmp_path / "link.csv").symlink_to(tmp_path / "elsewhere.csv")
    linked = run_autograder(
        "export-grades",
        str(tmp_path / "grades"),
        "--lms",
        "canvas",
        "--assignment",
        "HW",
        "--out",
        str(tmp_path / "link.csv"),
    )
    assert (
        linked.returncode == 2
        and "not a plain file" in linked.stderr
        and not (tmp_path / "elsewhere.csv").exists()
    )

    # The next download, unpacked by hand: John is on time now and Jane is gone. His model is not run again.
    folder = tmp_path / "second"
    folder.mkdir()
    (folder / "smithjohn_23456_78901_hw31-2.zip").write_bytes(_bundle("6401234"))
    again = run_autograder(
        "grade",
        str(folder),
        "--task",
        LAB2,
        "--hidden",
        str(hidden),
        "--out",
        str(tmp_path / "grades"),
        "--rubric",
        str(rubric),
        "--quiet",
    )
    assert again.returncode == 0, again.stderr
    results = json.loads((tmp_path / "grades" / "results" / "23456.json").read_text(encoding="utf-8"))
    assert results["score"] == float(john["score_before_late"])  # no penalty now
    assert results["extra_data"]["attention_lab"]["lms"]["late"] is False
    exported = run_autograder(
        "export-grades", str(tmp_path / "grades"), "--lms", "canvas", "--assignment", "HW"
    )
    assert exported.returncode == 0 and "1 grade(s)" in exported.stdout and "earlier batch" in exported.stderr
    assert "12345, 34567, 45678, anon_Xy12z" in exported.stderr and "with no file" not in exported.stderr
    (tmp_path / "grades" / "results" / "23456.json").unlink()  # a results file that could not be written
    exported = run_autograder(
        "export-grades", str(tmp_path / "grades"), "--lms", "canvas", "--assignment", "HW"
    )
    assert "gradebook.csv lists 1 student(s) with no file" in exported.stderr and "23456" in exported.stderr


def test_a_moodle_folder_is_graded_and_its_worksheet_written(tmp_path, hidden):
    rubric = _rubric(tmp_path, LAB2, wall_seconds=120)
    folder = _files(
        tmp_path / "download",
        {
            "Jane Doe_101_assignsubmission_file/submission.zip": _bundle(
                "doejane"
            ),  # Canvas's form of her name
            "Participant_102_assignsubmission_onlinetext_onlinetext.html": b"<p>no zip</p>",
        },
    )
    graded = run_autograder(
        "grade",
        str(folder),
        "--task",
        LAB2,
        "--hidden",
        str(hidden),
        "--out",
        str(tmp_path / "grades"),
        "--rubric",
        str(rubric),
        "--quiet",
        "--lms",
        "moodle",
    )
    assert graded.returncode == 0, graded.stderr
    assert "1 graded, 1 malformed" in graded.stdout  # --quiet: no progress bar, the summary stays
    assert "similarity.csv (0 flagged pairs) and class-report.html" in graded.stdout
    with open(tmp_path / "grades" / "gradebook.csv", encoding="utf-8") as handle:
        assert {row["student"]: row["notes"] for row in csv.DictReader(handle)}["101"] == ""
    exported = run_autograder(
        "export-grades", str(tmp_path / "grades"), "--lms", "moodle", "--out", str(tmp_path / "worksheet.csv")
    )
    assert exported.returncode == 0, exported.stderr
    with open(tmp_path / "worksheet.csv", encoding="utf-8") as handle:
        rows = {r["Identifier"]: r for r in csv.DictReader(handle)}
    assert sorted(rows) == ["Participant 101", "Participant 102"]
    assert rows["Participant 101"]["Full name"] == "Jane Doe" and float(rows["Participant 101"]["Grade"]) > 0
    assert (
        rows["Participant 102"]["Grade"] == "0"
        and "(malformed)" in rows["Participant 102"]["Feedback comments"]
    )
    assert "onlinetext submission, not a file" in rows["Participant 102"]["Feedback comments"]
