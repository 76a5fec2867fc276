"""``python -m autograder``: hidden sets, batch grading, Gradescope packaging, and the students' check.

    python -m autograder hidden-set --task date-translation --seed-file secret.txt --out hidden/lab2
    python -m autograder grade submissions/ --task date-translation --hidden hidden/lab2 --out grades/
    python -m autograder grade canvas-download.zip --task name-transliteration --hidden hidden/hw \\
        --out grades/ --jobs 2
    python -m autograder export-grades grades/ --lms canvas --assignment "Homework 3.1"   (to import)
    python -m autograder similarity grades/        (compare the graded models again; the class report)
    python -m autograder gradescope --task date-translation --hidden hidden/lab2 --out autograder.zip
    python -m autograder gradescope-selfcheck autograder.zip submission.zip   (as Gradescope runs it)
    python -m autograder check submission.zip --task name-transliteration   (students: before handing in)

Each command is a function bound to its parser (``set_defaults(handler=...)``, as in :mod:`labs.cli`).
Mistakes in the command (a missing folder, a bad rubric, a Keras older than the grader's floor in
:mod:`autograder.keras_floor`) end with one line on stderr and exit status 2. A bad *bundle* is never an
error of the command: it gets its status in the gradebook. ``check`` exits with status 1 for every
bundle it would not grade (any status but ``graded``), and at once, in one line on stderr, for a bundle
of another task than its ``--task``; with status 2 where it cannot tell which task to check (no
``--task``, and no meta.json it can read).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import sys
import threading
import time
import warnings
from pathlib import Path

from autograder.gradescope_check import container_memory_mb
from autograder.keras_floor import check_keras
from autograder.lms import LMS_NAMES
from autograder.rubric import RubricError, load_rubric
from autograder.sandbox import ISOLATIONS
from autograder.status import GRADED
from labs import tasks
from labs.common.arguments import Parser, checked
from labs.common.errors import InputError
from labs.common.submission import EXPORT_ADVICE

TASKS = tasks.names()
EXPORTS = {"canvas": "canvas-grades.csv", "moodle": "moodle-worksheet.csv"}  # export-grades' files in GRADES
# The commands that load other people's bundles need the grader's Keras floor. `check` does not: a
# student checks their own bundle, in Colab's Keras too.
GRADING_COMMANDS = ("grade", "gradescope-run")


MEMORY_MB = checked(container_memory_mb)
MEMORY_MB.__name__ = "int"  # what argparse names in "invalid int value"


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m autograder", description="Attention Lab autograder.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    hidden = commands.add_parser("hidden-set", help="draw a hidden test set from a secret seed file")
    hidden.set_defaults(handler=_hidden_set)
    hidden.add_argument("--task", required=True, choices=TASKS)
    hidden.add_argument("--seed-file", required=True, help="a private file whose bytes seed the set")
    hidden.add_argument("--out", required=True, help="a new or empty folder")
    hidden.add_argument(
        "--n", type=int, default=None, help="rows (default: 2,000 dates or 1,000 pairs/names)"
    )
    hidden.add_argument(
        "--words",
        default=None,
        metavar="FILE",
        help="name-transliteration: a private list of Thai words, one a line (optionally "
        "WORD,Spelling|Alternative), for the unseen names, instead of the kit's hidden words, "
        "which students can rebuild from public tools",
    )

    grade = commands.add_parser("grade", help="grade a folder of submission bundles")
    grade.set_defaults(handler=_grade)
    grade.add_argument(
        "submissions",
        help="what the LMS gave: Canvas's or Moodle's download (the zip or its folder), a "
        "Gradescope export, or a folder with one zip or folder per student",
    )
    grade.add_argument(
        "--lms",
        default="auto",
        choices=("auto", *LMS_NAMES),
        help="whose file names the submissions follow (default auto: found from the names)",
    )
    grade.add_argument("--task", required=True, choices=TASKS)
    grade.add_argument("--hidden", required=True, help="hidden-set folder (from `hidden-set`)")
    grade.add_argument(
        "--out", required=True, help="folder for gradebook.csv, leaderboard.csv, feedback/, results/"
    )
    grade.add_argument("--rubric", default=None, help="rubric TOML (default: autograder/rubrics/TASK.toml)")
    grade.add_argument("--jobs", type=int, default=1, help="bundles graded at once (default 1)")
    grade.add_argument("--force", action="store_true", help="grade again bundles that were already graded")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    grade.add_argument(
        "--isolation",
        default="auto",
        choices=("auto", *ISOLATIONS),
        help="how student code is isolated (default auto: the strongest this machine offers); only "
        "an explicit 'user' (where no seccomp filter cuts the network) or 'none' runs bundles that "
        "carry code without full isolation",
    )

    export = commands.add_parser(
        "export-grades",
        help="the grades of a graded batch as the LMS imports them "
        "(Canvas's gradebook CSV, Moodle's offline grading worksheet)",
    )
    export.set_defaults(handler=_export_grades)
    export.add_argument("grades", help="the --out folder of `grade`")
    export.add_argument("--lms", required=True, choices=("canvas", "moodle"))
    export.add_argument(
        "--assignment",
        default=None,
        help='Canvas: the assignment\'s name as in its gradebook (e.g. "Homework 3.1", or "Homework '
        "3.1 (12345)\" with its id); Moodle: the title for the feedback (default: the rubric's)",
    )
    export.add_argument(
        "--out",
        default=None,
        help=f"the CSV to write (default: GRADES/{EXPORTS['canvas']} or GRADES/{EXPORTS['moodle']})",
    )
    export.add_argument(
        "--roster",
        default=None,
        help="Canvas: the course's gradebook export (Grades > Export), to settle whose a file is where its "
        "name reads as more than one student (e.g. a file named 6512345678_hw3.zip), and to check "
        "--assignment against its columns (Canvas imports a column it has no assignment of as a new one)",
    )

    similar = commands.add_parser(
        "similarity",
        help="compare a graded batch's models again (similarity.csv, "
        "class-report.html), without running them",
    )
    similar.set_defaults(handler=_similarity)
    similar.add_argument("grades", help="the --out folder of `grade`")
    similar.add_argument("--rubric", default=None, help="rubric TOML (default: the task's)")

    package = commands.add_parser("gradescope", help="package the grader as a Gradescope autograder zip")
    package.set_defaults(handler=_gradescope)
    package.add_argument("--task", required=True, choices=TASKS)
    package.add_argument("--hidden", required=True, help="hidden-set folder to grade against")
    package.add_argument("--out", required=True, help="the zip to write (e.g. autograder.zip)")
    package.add_argument("--rubric", default=None, help="rubric TOML (default: autograder/rubrics/TASK.toml)")
    package.add_argument(
        "--timeout",
        type=int,
        default=600,
        help="the assignment's autograder timeout in Gradescope's settings, in seconds (default 600, "
        "Gradescope's): the model's runs end a minute before it, and the grader says they ran out of time",
    )

    selfcheck = commands.add_parser(
        "gradescope-selfcheck",
        help="run a Gradescope package on one bundle as "
        "Gradescope does (root, no user namespaces, no cgroup of its own), before uploading it",
    )
    selfcheck.set_defaults(handler=_gradescope_selfcheck)
    selfcheck.add_argument("package", help="the autograder.zip that `gradescope` wrote")
    selfcheck.add_argument("bundle", help="a submission: a bundle zip or folder")
    selfcheck.add_argument(
        "--keep", default=None, help="a new folder to keep the /autograder layout in (to look at)"
    )
    selfcheck.add_argument(
        "--memory",
        type=MEMORY_MB,
        default=None,
        metavar="MB",
        help="run it in a container with this much memory and say the peak (without it, no limit; "
        "Gradescope's default is 768; needs a memory cgroup this machine lets root make)",
    )

    check = commands.add_parser(
        "check",
        help="validate your bundle and score it on the public dev set; exit status 0 only when it is graded",
    )
    check.set_defaults(handler=_check)
    check.add_argument("bundle", help="submission.zip or a bundle folder")
    check.add_argument(
        "--task",
        default=None,
        choices=TASKS,
        help="the task the bundle must be for (a bundle for another fails at once; default: the "
        "one its meta.json names)",
    )
    check.add_argument("--rubric", default=None, help="rubric TOML (default: the task's)")
    return parser


def _gradescope_run_parser() -> argparse.ArgumentParser:
    """``gradescope-run``: what the Gradescope container's run_autograder calls; not listed in --help."""
    parser = Parser(prog="python -m autograder gradescope-run")
    parser.add_argument("--task", required=True, choices=TASKS)
    for flag in ("--hidden", "--rubric", "--submission", "--results"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--isolation", default="auto", choices=("auto", *ISOLATIONS))
    parser.add_argument("--seconds", type=float, default=None)  # the assignment's timeout
    parser.set_defaults(command="gradescope-run", handler=_gradescope_run)
    return parser


def _check(args) -> int:
    from autograder.batch import bundle_task, check_bundle
    from autograder.claims import file_name_text, visible
    from autograder.grade import display_name, wrong_task_message

    path = Path(args.bundle)
    shown = visible(file_name_text(str(path)))
    if not path.exists():
        raise InputError(
            f"no bundle at {shown!r}; export one first (python -m labs export --model RUN_FOLDER "
            f"--student-id YOUR_ID --out {shown})"
        )
    found = bundle_task(path)
    if args.task and found is not None and found != args.task:
        # Not graded against the wrong rubric: the student handed in the wrong file (exit 1, as any bundle not
        # graded).
        wrong = wrong_task_message(display_name(path), found, args.task)
        print(
            f"python -m autograder: error: {wrong} (or, if this is the bundle you meant, check it with "
            f"--task {found})"
            if found in TASKS
            else f"python -m autograder: error: {wrong}",
            file=sys.stderr,
        )
        return 1
    task = args.task or (found if found in TASKS else None)
    if task is None and args.rubric is None:
        raise InputError(
            f"{shown} has no readable meta.json naming a task of this kit; {EXPORT_ADVICE}, or name the "
            "task with --task"
        )
    rubric = load_rubric(args.rubric, task)
    title = tasks.get(rubric.task).title
    if found == rubric.task:
        what = f": a {rubric.task} bundle ({title})"
    elif found is None:  # no meta.json, or none that can be read (not a zip, say): the status line says which
        what = f" as a {rubric.task} bundle ({title}; it has no readable meta.json naming its task)"
    else:
        what = f" as a {rubric.task} bundle ({title}; its meta.json names no task of this kit)"
    against = "its rubric" if args.rubric is None else f"the rubric {args.rubric}"
    print(f"Checking {shown}{what}, against {against} on the public dev set ...", flush=True)
    record = check_bundle(path, rubric)
    print(
        f"status: {record['status']}"
        + (f": {record['message']}" if record["message"] else "")
        + f"  (isolation: {record['isolation']})"
    )
    ran = record["sandbox_seconds"] is not None
    for line in record["lines"] if ran else []:  # a bundle refused before it ran has no line worth showing
        note = f"  ({line['message']})" if line["message"] else ""
        print(
            f"  {line['points']:5g} / {line['max_points']:<4g} {line['label']}: "
            f"{line['shown']}{note}".rstrip()
        )
    print(
        f"score on the public dev set: {record['score']:g} / {record['max_score']:g} "
        "(the hidden test set decides the grade)"
    )
    return (
        0 if record["status"] == GRADED else 1
    )  # every status but graded: the bundle is not ready to hand in


def _flagged(grades: Path) -> str:
    """How many pairs ``similarity.csv`` flags, in words."""
    from labs.common.files import read_csv

    try:
        flagged = sum(row["flagged"] == "yes" for row in read_csv(grades / "similarity.csv"))
    except (OSError, InputError, KeyError):
        return "not written: see grader.log"
    return f"{flagged} flagged pair{'' if flagged == 1 else 's'}"


def _similarity(args) -> None:
    from autograder.batch import compare_class, graded_records, latest_hidden_set
    from autograder.sandbox import KIT_ROOT
    from autograder.similarity import evidence_path

    grades = Path(args.grades)
    records, left_out = latest_hidden_set(graded_records(grades))
    kept = KIT_ROOT / str(records[0].get("rubric"))  # a rubric of the kit's, as the records name it
    rubric_path = args.rubric or (kept if kept.is_file() else None)
    pairs = compare_class(records, load_rubric(rubric_path, records[0]["task"]), grades)
    flagged = [p for p in pairs if p["flagged"]]
    without = [r["student"] for r in records if not evidence_path(grades, r["student"]).is_file()]
    print(f"compared {len(records)} submission(s), {len(pairs)} pair(s): {len(flagged)} flagged")
    for pair in flagged:
        print(f"  {pair['student_a']} and {pair['student_b']}: {pair['why']}")
    if left_out:
        print(
            f"left out {left_out} result(s) graded on another hidden set (students no longer in the batch?)"
        )
    if without:
        print(
            f"{len(without)} submission(s) have nothing to compare ({', '.join(without[:5])}"
            f"{', ...' if len(without) > 5 else ''}): they could not be read, or were graded by an older "
            f"grader "
            f"(grade again with --force)"
        )
    print(
        f"wrote {grades / 'similarity.csv'} and {grades / 'class-report.html'} (for you only: not for "
        f"students)"
    )


def _export_grades(args) -> None:
    import datetime as dt

    from autograder.batch import STOPPED, graded_records, latest_hidden_set
    from autograder.claims import clean_message
    from autograder.lms import (
        ASSIGNMENT_COLUMN,
        ASSIGNMENT_ID,
        canvas_rows,
        moodle_rows,
        read_roster,
        readings_of,
    )
    from autograder.reports import csv_cell
    from labs.common.files import read_csv, write_csv

    grades = Path(args.grades)
    every = graded_records(grades)
    with contextlib.suppress(OSError):  # a batch stopped part-way: its gradebook lacks students
        stopped = (grades / STOPPED).read_text(encoding="utf-8").strip()
        print(
            f"warning: {clean_message(stopped, 200)}; these grades are only part of the class",
            file=sys.stderr,
        )
    records, left_out = latest_hidden_set(every)
    earlier, missing = [], []
    with contextlib.suppress(
        OSError, KeyError, ValueError
    ):  # the last batch's students, as gradebook.csv lists them
        current = {row["student"] for row in read_csv(grades / "gradebook.csv")}
        earlier = sorted(r["student"] for r in records if r["student"] not in current)
        records = [r for r in records if r["student"] in current]
        missing = sorted(current - {r["student"] for r in every})  # a row whose results file is not there
    if missing:
        print(
            f"warning: gradebook.csv lists {len(missing)} student(s) with no file in {grades / 'results'}: "
            f"{', '.join(missing[:8])}{', ...' if len(missing) > 8 else ''} (grader.log may say why); grade "
            "them again, or enter their grades by hand",
            file=sys.stderr,
        )
    records.sort(key=lambda r: r["student"])
    title = args.assignment or (tasks.get(records[0]["task"]).title if records else "")
    if args.lms == "canvas":
        if not args.assignment:
            raise InputError(
                "--assignment is the assignment's column in Canvas's gradebook: give its name as Canvas "
                'shows it (e.g. --assignment "Homework 3.1")'
            )
        roster, column, before = None, args.assignment, {}
        if args.roster:  # the assignment's column in it, with its id: Canvas imports into that assignment
            roster = read_roster(args.roster)
            column, before = _roster_column(args.roster, args.assignment, records)
        elif ASSIGNMENT_ID.fullmatch(column.strip()):
            raise InputError(
                f"--assignment {column.strip()} is an id alone, which Canvas would take for the title of a "
                "new assignment: give --roster (Canvas's gradebook export) to find its column, or the column "
                'as the gradebook names it (e.g. "Lab 2 (779)")'
            )
        elif not ASSIGNMENT_COLUMN.fullmatch(" ".join(column.split())):
            print(
                f"note: Canvas imports a column it has no assignment of as a new assignment, and {column!r} "
                "is not checked: give --roster (Canvas's gradebook export) to check it, or the column with "
                'its id (e.g. "Homework 3.1 (778)")',
                file=sys.stderr,
            )
        columns, rows, skipped = canvas_rows(records, column, roster)
        replaced = [
            row for row in rows[1:] if not _same_grade(before.get(row["ID"], row[column]), row[column])
        ]
        if replaced:  # another assignment's column, or grades entered in Canvas since
            first = replaced[0]
            print(
                f"warning: {column!r} already holds other grades of {len(replaced)} of these students (e.g. "
                f"{first['Student']}: {before[first['ID']]}, now {first[column]}): importing replaces them; "
                f"is it the assignment of {tasks.get(records[0]['task']).title}?",
                file=sys.stderr,
            )
    else:
        if args.roster:
            raise InputError("--roster is Canvas's gradebook export: Moodle's worksheet needs none")
        columns, rows, skipped = moodle_rows(records, title, dt.datetime.now(dt.timezone.utc).astimezone())
    out = Path(args.out) if args.out else grades / EXPORTS[args.lms]
    if os.path.lexists(out) and not stat.S_ISREG(os.lstat(out).st_mode):
        raise InputError(
            f"{str(out)!r} is not a plain file (a link, a folder or a device): name a .csv file with --out"
        )
    if len(rows) == (1 if args.lms == "canvas" else 0):
        if any((r.get("lms") or {}).get("lms") == args.lms for r in records):  # from it, each left out
            raise InputError(
                f"none of the {len(records)} graded submission(s) in {grades} can be exported: "
                f"{', '.join(skipped[:8])}{', ...' if len(skipped) > 8 else ''} (gradebook.csv's notes say "
                "why); enter their grades by hand"
            )
        raise InputError(
            f"none of the {len(records)} graded submission(s) in {grades} came from a {args.lms.title()} "
            f"download (grade what {args.lms.title()} gave, or use the gradebook.csv as it is)"
        )
    write_csv(out, columns, [{k: csv_cell(v) for k, v in row.items()} for row in rows])
    count = len(rows) - (args.lms == "canvas")
    where = (
        "Canvas: Grades > Import, then choose this file"
        if args.lms == "canvas"
        else "Moodle: the assignment's View all submissions > Upload grading worksheet"
    )
    column_text = f" in the column {column!r}" if args.lms == "canvas" else ""
    print(f"wrote {out}: {count} grade(s) of {tasks.get(records[0]['task']).title}{column_text}, for {where}")
    if skipped:
        print(
            f"left out {len(skipped)} submission(s) that are no one {args.lms.title()} student's (anonymous, "
            f"named by no {args.lms.title()} convention, named so that they read as more than one student, "
            f"or, as said beside it, not in the roster: gradebook.csv's notes say more): "
            f"{', '.join(skipped[:8])}"
            f"{', ...' if len(skipped) > 8 else ''}; enter their grades by hand"
            + (
                " (or give --roster, Canvas's gradebook export, to settle whose a file read two ways is)"
                if args.lms == "canvas" and not args.roster and any(map(readings_of, records))
                else ""
            ),
            file=sys.stderr,
        )
    if earlier:
        print(
            f"left out {len(earlier)} result(s) of an earlier batch, students that gradebook.csv no longer "
            f"lists: "
            f"{', '.join(earlier[:8])}{', ...' if len(earlier) > 8 else ''} (their files stay in {grades}; "
            f"grade "
            "into a new --out folder to keep batches apart)",
            file=sys.stderr,
        )
    if left_out:
        print(f"left out {left_out} result(s) graded on another hidden set", file=sys.stderr)


def _roster_column(roster: str, assignment: str, records: list[dict]) -> tuple[str, dict[str, str]]:
    """The column of the roster (Canvas's gradebook export) that ``assignment`` names, with its id, so
    that Canvas imports the grades into that assignment, and the grades it holds (user id -> grade); a warning
    where it is worth other points than the grades'."""
    from autograder.lms import assignment_column

    column, points, grades = assignment_column(roster, assignment)
    if column is None:
        print(
            "note: the roster lists no assignment: Canvas will import the grades as a new assignment, "
            f"{assignment!r}",
            file=sys.stderr,
        )
        return assignment, {}
    maximum = max((r["max_score"] for r in records), default=None)
    if points and maximum is not None and abs(points - maximum) > 1e-9:
        print(
            f"warning: {column!r} is worth {points:g} points in Canvas, and these grades are out of "
            f"{maximum:g}: a full score would read as {maximum / points:.0%}; set its points to "
            f"{maximum:g} in Canvas before importing",
            file=sys.stderr,
        )
    return column, grades


def _same_grade(a: str, b: str) -> bool:
    """Whether two gradebook cells hold one grade (Canvas's export writes 85 as 85 or 85.00)."""
    try:
        return abs(float(a) - float(b)) < 1e-9
    except ValueError:
        return a.strip() == b.strip()


class Interrupted(KeyboardInterrupt):
    """TERM or a hangup, ended like Ctrl-C (temporary folders are removed on the way out); ``signum`` gives
    the exit status a shell reads for it, 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum, frame):
    raise Interrupted(signum)


def _hidden_set(args) -> None:
    from autograder.hidden import make_hidden_set, takes_words
    from autograder.sandbox import readable_by_others

    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", UserWarning)
        manifest = make_hidden_set(args.task, args.seed_file, args.out, args.n, words=args.words)
    for note in notes:
        print(f"note: {note.message}", file=sys.stderr)
    words = (
        f"; unseen words from {args.words}, sha256 {manifest['private_words_sha256'][:12]}"
        if args.words
        else ""
    )
    print(
        f"wrote a hidden set of {manifest['size']:,} rows for {args.task} to {args.out} "
        f"(secret fingerprint {manifest['secret_fingerprint']}{words}; the folder is private to you)"
    )
    if not args.words and takes_words(args.task):
        print(
            "note: the unseen names' words come from the kit's default pool, which a student can rebuild "
            "from public tools (pythainlp's name lists, python -m labs romanize) and train on. For a graded "
            "homework, give words of your own: --words FILE (README, 'Grading')",
            file=sys.stderr,
        )
    for private in filter(None, (args.seed_file, args.words)):
        if readable_by_others(Path(private)):
            print(
                f"warning: other users can read {private}; make it private: chmod 600 {private}",
                file=sys.stderr,
            )


def _grade(args) -> None:
    from autograder.batch import grade_folder

    started = time.perf_counter()
    rubric = load_rubric(args.rubric, args.task)
    records = grade_folder(
        args.submissions,
        rubric,
        args.hidden,
        args.out,
        jobs=args.jobs,
        force=args.force,
        progress=not args.quiet,
        isolation=args.isolation,
        lms=args.lms,
    )
    for name in EXPORTS.values():  # an earlier batch's grades for the LMS, at hand to be uploaded by mistake
        old = Path(args.out) / name
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < (Path(args.out) / "gradebook.csv").stat().st_mtime:
                old.unlink()
                print(
                    f"removed {old}: it held the grades before this run; export them again", file=sys.stderr
                )
    statuses = {}
    for record in records:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    isolations = sorted({record.get("isolation", "") for record in records})
    print(
        f"graded {len(records)} submission(s) in {time.perf_counter() - started:.1f} s: "
        + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        + f" (isolation: {', '.join(isolations)})"
    )
    print(
        f"wrote {Path(args.out) / 'gradebook.csv'}, leaderboard.csv, feedback/ and results/; for you only: "
        f"similarity.csv ({_flagged(Path(args.out))}) and class-report.html"
    )


def _gradescope(args) -> None:
    from autograder.gradescope import package
    from autograder.hidden import takes_words

    rubric = load_rubric(args.rubric, args.task)
    path = package(args.task, args.hidden, args.out, rubric, args.timeout)
    board = (
        ", ".join(f"{name} ({order})" for name, order in rubric.leaderboard)
        if rubric.leaderboard
        else "score and every metric"
    )
    print(
        f"wrote {path}: upload it as the assignment's autograder (Ubuntu image, Python 3.10+); results are "
        f"{rubric.visibility} to students"
        + (
            ' (with a private word list, consider visibility = "after_due_date": README, Grading)'
            if rubric.visibility == "visible" and takes_words(args.task)
            else ""
        )
        + f"; leaderboard columns: {board} (shown once you turn on "
        "'Enable leaderboard' in the assignment's autograder settings); the model's runs end a minute before "
        f"a timeout of {args.timeout} s (set the same in those settings, or give --timeout)"
    )


def _gradescope_run(args) -> None:
    from autograder.gradescope import run_on_gradescope

    rubric = load_rubric(args.rubric, args.task)
    result = run_on_gradescope(
        args.task, args.hidden, rubric, args.submission, args.results, args.isolation, args.seconds
    )
    print(result["output"])


def _gradescope_selfcheck(args) -> int:
    from autograder.gradescope_check import run_package, summary

    check = run_package(args.package, args.bundle, keep=args.keep, memory_mb=args.memory)
    print("\n".join(summary(check)))
    status = check.results.get("extra_data", {}).get("attention_lab", {}).get("status")
    return 0 if status == GRADED else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
        hangup = getattr(signal, "SIGHUP", None)  # a closed terminal; nohup ignores it: left so
        if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
            signal.signal(hangup, _interrupt)
    # gradescope-run is what the Gradescope container calls: a parser of its own, not listed in --help
    parser = _gradescope_run_parser() if argv[:1] == ["gradescope-run"] else _parser()
    args = parser.parse_args(argv[1:] if argv[:1] == ["gradescope-run"] else argv)
    try:
        if args.command in GRADING_COMMANDS:
            check_keras()
        return args.handler(args) or 0
    except (InputError, RubricError) as error:
        print(f"python -m autograder: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as error:
        kept = (
            "; what was graded before the stop is kept: run it again to go on"
            if args.command == "grade"
            else ""
        )
        print(f"python -m autograder: interrupted{kept}", file=sys.stderr)
        return 128 + getattr(error, "signum", signal.SIGINT)  # 130 for Ctrl-C, 143 for TERM, 129 for a hangup


if __name__ == "__main__":
    sys.exit(main())
