"""Grade a folder of submissions in one go, and check one bundle the way students do before handing in."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from autograder.claims import strip_escapes, visible
from autograder.grade import (
    HiddenSet,
    bundle_digest,
    cached_result,
    display_name,
    find_bundle,
    grade_bundle,
    grader_digest,
    log,
    missing_bundle,
    public_examples,
    safe_id,
)
from autograder.hidden import load_hidden_set, secrets_inside
from autograder.lms import LMS_NAMES, Entry, apply_late, read_entries, unpack_download
from autograder.reports import write_gradebook, write_results, write_student_files
from autograder.rubric import Rubric, load_rubric
from autograder.sandbox import (
    KIT_ROOT,
    clean_stale_folders,
    cpu_share,
    enterable_by_others,
    is_user_isolation,
    package_folders,
    readable_by_others,
    resolve_isolation,
    sandbox_uid,
    stop_runs_on,
)
from autograder.similarity import THRESHOLDS, evidence_path, save_evidence, write_similarity
from autograder.status import ERROR, MACHINE_OUT_OF_MEMORY, TIMEOUT
from labs import tasks
from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.submission import EXPORT_ADVICE


def _unique_ids(entries: list[Entry]) -> dict[int, str]:
    """Each entry's id (by its index): its LMS id or file stem made safe (:func:`safe_id`), and for an entry
    whose id another entry (earlier in order) already has, up to case (``x`` and ``x.zip``; ``Alice.zip`` and
    ``alice.zip`` on a file system that ignores case), that id, ``+`` and a hash of its own exact name.

    A name never gives an id with ``+`` in it, so no entry can be named into another's de-duplicated id (an
    ``x-2`` beside two ``x``), and an entry's id does not change with what else the folder holds."""
    ids, taken = {}, set()
    for index, entry in enumerate(entries):
        name = safe_id(entry.id)
        if name.casefold() in taken:
            own = entry.path.name if entry.path is not None else f"{entry.lms}:{entry.id}"
            name = f"{name}+{hashlib.sha256(own.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"
        taken.add(name.casefold())
        ids[index] = name
    return ids


@contextlib.contextmanager
def _download(submissions: Path, out: Path, max_bytes: int):
    """``(folder, scratch)``: the folder of submissions (``submissions`` itself, or the LMS's download zip
    unpacked) and a folder for bundles put together from loose files, both in a temporary folder of ``out``
    (private to the instructor with it), removed after grading; an ``out`` this made and left empty is removed
    too."""
    if not submissions.is_dir() and not submissions.is_file():
        raise InputError(f"{str(submissions)!r} is neither a folder of submissions nor an LMS's download zip")
    made = not out.exists()
    # a folder it makes is the instructor's alone: every student's grade and feedback
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    scratch = Path(tempfile.mkdtemp(prefix=".download-", dir=out))
    try:
        folder = (
            submissions
            if submissions.is_dir()
            else unpack_download(submissions, scratch / "submissions", max_bytes)
        )
        yield folder, scratch / "assembled"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if made and not any(out.iterdir()):
            out.rmdir()


def check_private(paths: list[Path]) -> None:
    """For ``user`` isolation: the sandbox's users must be able to read none of ``paths``, nor the kit's data,
    its solution or the romanizer packages that the homework's spellings come from."""
    paths = [*paths, KIT_ROOT / "datasets", KIT_ROOT / "homework", *package_folders()]
    readable = [str(p) for p in paths if readable_by_others(p)]
    if readable:
        raise InputError(
            f"the sandbox's users (uids from {sandbox_uid(0)}) could read {', '.join(readable)}: make "
            f"{'it' if len(readable) == 1 else 'them'} private first (chmod -R go-rwx PATH), or grade "
            "where user namespaces are available"
        )


def check_kit_holds_no_secrets(manifest: dict) -> None:
    """Stop before grading while the kit's folder holds a hidden set, the secret or the private word list."""
    found = secrets_inside(KIT_ROOT, manifest)
    if found:
        path, what = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InputError(
            f"{path} is {what}, inside the kit's folder{more}, where student code runs: move "
            f"{'it' if not more else 'them'} out of {KIT_ROOT} (e.g. into ../grading/) and grade again"
        )


class PlainLog(logging.Formatter):
    """grader.log's entries as plain text. A message may hold what a bundle said: its terminal escapes (which
    move the cursor, rewrite lines or set the clipboard of the terminal the log is read in) are removed, and
    what else shows nothing or breaks the line is written as ``<U+XXXX>``. An entry is one line that starts
    with its time; a traceback's lines below it start with ``  | ``, so that none reads as an entry."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return visible(strip_escapes(super().formatMessage(record)))

    def format(self, record: logging.LogRecord) -> str:
        record.exc_text = None  # formatted here, never as another handler left it
        first, *rest = super().format(record).split("\n")
        return "\n".join([first, *(f"  | {visible(strip_escapes(line))}" for line in rest)])


@contextlib.contextmanager
def _grader_log(path: Path):
    """Tracebacks of bundles the grader could not handle go to ``path`` (the instructor's, never a
    student's)."""
    handler = logging.FileHandler(path, delay=True, encoding="utf-8")
    handler.setFormatter(PlainLog("%(asctime)s %(message)s"))
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
        handler.close()


def grade_folder(
    submissions: str | Path,
    rubric: Rubric,
    hidden_dir: str | Path,
    out: str | Path,
    *,
    jobs: int = 1,
    force: bool = False,
    progress: bool = True,
    isolation: str = "auto",
    lms: str = "auto",
) -> list[dict]:
    """Grade every student of ``submissions``; write results, feedback, gradebook and leaderboard into
    ``out``.

    ``submissions``: a folder, or the zip an LMS gave (unpacked into ``out`` for the run); ``lms``: whose
    naming its entries follow (``canvas``, ``moodle``, ``gradescope``, ``folder``; ``auto`` finds it:
    :mod:`autograder.lms`). Each record keeps the LMS's identity (``lms``) and, where the rubric has a
    ``[late]`` table and the LMS marks the submission late, the score before the penalty.

    ``isolation``: ``auto`` (the strongest the machine offers), ``namespaces``, ``user`` or ``none``; only
    an isolation named explicitly (not ``auto``) runs bundles that carry code where it cannot isolate
    them. A bundle already graded with the same bundle, hidden set, rubric and isolation, by the same
    grader (its code, :func:`autograder.grade.grader_digest`), is skipped (its result is reused) unless
    ``force``. One bad bundle never stops the batch.

    ``jobs`` bundles are graded at once, each child held to its share of the cores
    (:func:`autograder.sandbox.cpu_share`). A bundle that ran out of time (status ``timeout``) while another
    was being graded is graded once more with nothing beside it, and that second result stands; its ``notes``
    (the instructor's) say so. Then every pair of the batch is compared (:mod:`autograder.similarity`:
    ``similarity.csv``) and ``class-report.html`` written: both for the instructor only."""
    if jobs < 1:
        raise InputError(f"--jobs must be 1 or more, got {jobs}")
    if lms not in ("auto", *LMS_NAMES):
        raise InputError(f"--lms must be auto or one of {', '.join(LMS_NAMES)}, got {lms!r}")
    submissions, out, hidden_dir = Path(submissions), Path(out), Path(hidden_dir)
    clean_stale_folders()
    inputs, targets, manifest = load_hidden_set(hidden_dir, rubric.task)
    hidden = HiddenSet(hidden_dir, inputs, targets, manifest)
    used = resolve_isolation(isolation)
    check_kit_holds_no_secrets(manifest)
    if is_user_isolation(used):
        out.mkdir(parents=True, exist_ok=True)
        os.chmod(out, 0o700)
        beside = [path for path, _ in secrets_inside(hidden_dir.resolve().parent, manifest, recursive=False)]
        check_private([hidden_dir, submissions, out, *beside])  # the secret, where the README keeps it
    elif enterable_by_others(out):  # a folder the instructor made (one grade makes is theirs alone)
        print(
            f"warning: other users of this machine can read what grade writes into {out}: every student's "
            "grade and feedback (the similarity evidence and the class report, which show hidden inputs, "
            f"are written private); make it private first (chmod -R go-rwx {out})",
            file=sys.stderr,
        )
    with _download(submissions, out, int(rubric.bundle_mb * 1_000_000)) as (folder, scratch):
        found, entries = read_entries(folder, lms, scratch)
        if not entries:
            raise InputError(f"{str(submissions)!r} holds no submissions (zips or folders)")
        unnamed = sum(any("follows no" in note for note in e.notes) for e in entries)
        if lms != "auto" and unnamed * 2 > len(entries):
            print(
                f"warning: {unnamed} of the {len(entries)} submissions follow no {found.title()} naming: is "
                f"the "
                f"folder what {found.title()} gave? (they are graded under their file names)",
                file=sys.stderr,
            )
        return _grade_entries(
            entries,
            rubric,
            hidden,
            out,
            jobs=jobs,
            force=force,
            progress=progress,
            isolation=isolation,
            used=used,
        )


@dataclass(frozen=True)
class _Batch:
    """What every entry of one batch is graded with."""

    entries: list[Entry]
    # entry index -> the student's id in results/ (unique within the batch)
    ids: dict[int, str]
    rubric: Rubric
    hidden: HiddenSet
    out: Path
    # the public examples each feedback shows
    examples: list[dict]
    # the isolation in use, and whether code runs where it cannot be isolated (an explicit --isolation)
    isolation: str
    run_unisolated: bool
    # the re-run key: the rubric's grading part ([late] and [gradescope] change no model's run) and this very
    # grader's code
    rubric_digest: str
    grader: str


def _grade_entries(
    entries: list[Entry],
    rubric: Rubric,
    hidden: HiddenSet,
    out: Path,
    *,
    jobs: int,
    force: bool,
    progress: bool,
    isolation: str,
    used: str,
) -> list[dict]:
    """:func:`grade_folder` once the students' entries are known: plan, grade in a pool, compare."""
    for folder in ("results", "feedback"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    batch = _Batch(
        entries,
        _unique_ids(entries),
        # each child is held to its share of the cores
        replace(rubric, limits=replace(rubric.limits, cpus=cpu_share(jobs))),
        hidden,
        out,
        public_examples(rubric.task),
        used,
        isolation != "auto",
        rubric.grading_digest(),
        grader_digest(),
    )
    records, todo = _plan(batch, force)
    if records:
        print(
            f"{len(records)} of {len(entries)} submission(s) were graded before with the same bundle, hidden "
            "set, rubric and grader: their results are kept (--force grades them again)",
            file=sys.stderr,
        )
    complete = False
    try:
        with _grader_log(out / "grader.log"):
            for record in _run_pool(batch, todo, jobs, progress, done=len(records)):
                records.append(record)
        complete = True
    finally:
        write_gradebook(records, rubric, out)  # also after Ctrl-C: what was graded is kept
        mark_stopped(out, None if complete else (len(records), len(entries)))
    _compare(records, rubric, out)
    return records


STOPPED = "stopped.txt"  # in a grades folder whose last `grade` was stopped before it graded every submission


def mark_stopped(out: Path, counts: tuple[int, int] | None) -> None:
    """Say in ``out`` that its batch was stopped with ``counts`` = (graded, submissions), or that it was not
    (None): export-grades warns of a gradebook that holds only part of the class."""
    if counts is None:
        (out / STOPPED).unlink(missing_ok=True)
    else:
        (out / STOPPED).write_text(
            f"grade was stopped after {counts[0]} of {counts[1]} submissions: run it again to go on\n",
            encoding="utf-8",
        )


def _plan(batch: _Batch, force: bool) -> tuple[list[dict], list[int]]:
    """The records a run before this one left for the same bundle, hidden set, rubric and grader
    (brought up to date: the LMS's name, its late mark), and the entries left to grade."""
    records, todo = [], []
    for index, entry in enumerate(batch.entries):
        previous = None
        with contextlib.suppress(OSError):
            bundle = find_bundle(entry.path) if entry.path is not None else None
            if not force and bundle is not None:
                digest = bundle_digest(bundle, int(batch.rubric.bundle_mb * 1_000_000))
                previous = cached_result(
                    batch.out / "results",
                    batch.ids[index],
                    digest,
                    batch.hidden,
                    batch.rubric_digest,
                    batch.isolation,
                    batch.grader,
                )
                # a model whose weights were read has evidence for similarity, unless it was graded
                # before the grader kept it; a bundle refused before that has none to keep
                counted = previous is not None and previous.get("parameters") is not None
                if counted and not evidence_path(batch.out, batch.ids[index]).is_file():
                    previous = None
        if previous is None:
            todo.append(index)
            continue
        before = (previous.get("lms"), previous.get("score"), previous.get("bundle"))
        previous["lms"] = entry.identity()  # the LMS may say otherwise now (late, another name)
        previous["bundle"] = display_name(bundle)
        apply_late(previous, batch.rubric.late)
        if (previous["lms"], previous["score"], previous["bundle"]) != before:
            _write_student_files(previous, batch.rubric, batch.out)
        else:
            write_results(previous, batch.rubric, batch.out)  # the [gradescope] table may have changed
        records.append(previous)
    return records, todo


def _grade_one(batch: _Batch, index: int) -> tuple[dict, dict]:
    """One entry's record, and what similarity compares of it (never in the record)."""
    entry = batch.entries[index]
    name = entry.path.name if entry.path is not None else entry.id
    problem = entry.problem or "the submission folder is empty"
    try:
        bundle = find_bundle(entry.path) if entry.path is not None and not entry.problem else None
    except OSError as error:
        bundle, problem = None, f"the submission could not be read ({error.strerror or error})"
    evidence = {}
    try:
        if bundle is None:
            record = missing_bundle(name, batch.rubric, batch.hidden, problem, batch.isolation)
        else:
            record = grade_bundle(
                bundle,
                batch.rubric,
                batch.hidden,
                examples=batch.examples,
                isolation=batch.isolation,
                run_unisolated=batch.run_unisolated,
                entry_id=(entry.id, entry.name) if entry.lms != "folder" else batch.ids[index],
                evidence=evidence,
            )
    except Exception:  # grade_bundle has its own barrier; this one is for the grader's own mistakes
        log.exception("grading %s", display_name(entry.path) if entry.path is not None else name)
        why = "the grader could not handle this submission"
        record = missing_bundle(name, batch.rubric, batch.hidden, why, batch.isolation)
        record["status"] = ERROR
    record.update(
        student=batch.ids[index],
        rubric_sha256=batch.rubric_digest,
        grader_sha256=batch.grader,
        lms=entry.identity(),
    )
    record["notes"][:0] = entry.notes
    apply_late(record, batch.rubric.late)
    return record, evidence


# What a run beside other bundles may have failed for their sake: its status -> the instructor's note.
AGAIN_ALONE = {TIMEOUT: "ran out of time", MACHINE_OUT_OF_MEMORY: "ran out of the grading machine's memory"}


def _run_pool(batch: _Batch, todo: list[int], jobs: int, progress: bool, done: int) -> Iterator[dict]:
    """Grade ``todo``, ``jobs`` at a time; yield each record that stands, its files written.

    A bundle that ran out of time (``timeout``) or of the machine's memory (``machine-out-of-memory``) while
    another was being graded is graded once more with nothing beside it, and that second result stands; its
    notes (the instructor's) say so."""
    from tqdm.auto import tqdm

    running, beside_others, lock = set(), set(), threading.Lock()

    def grade_noting_company(index: int) -> tuple[dict, dict]:
        with lock:
            running.add(index)
            if len(running) > 1:
                beside_others.update(running)
        try:
            return _grade_one(batch, index)
        finally:
            with lock:
                running.discard(index)

    total = len(batch.entries)
    description = f"grading {batch.rubric.task}"
    stopping = threading.Event()  # set when the grader stops: the pool's runs are killed at once
    with (
        ThreadPoolExecutor(max_workers=jobs, initializer=stop_runs_on, initargs=(stopping,)) as pool,
        tqdm(total=total, initial=done, desc=description, unit="bundle", disable=not progress) as bar,
    ):

        def kept(record: dict, evidence: dict) -> dict:
            """A record that stands: its files and similarity evidence, written here, in one thread
            (matplotlib is not thread-safe), and a step of the progress bar."""
            _write_student_files(record, batch.rubric, batch.out)
            try:
                save_evidence(batch.out, record, evidence.get("weights"), evidence.get("answers"))
            except Exception:  # the grade stands; only the comparison goes without this bundle
                log.exception("keeping the similarity evidence of %s", record["student"])
            bar.update(1)
            return record

        futures = {pool.submit(grade_noting_company, index): index for index in todo}
        try:
            again = []
            for future in as_completed(futures):
                record, evidence = future.result()
                if record["status"] in AGAIN_ALONE and futures[future] in beside_others:
                    again.append((futures[future], record))  # nothing of this run is kept: not even its files
                else:
                    yield kept(record, evidence)
        except BaseException:  # Ctrl-C, or the grader stopped: grade nothing more, and stop what is running
            stopping.set()  # its bundles keep no record: the next run grades them
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        for index, first in again:  # the pool is idle: each runs with nothing beside it
            record, evidence = _grade_one(batch, index)
            what, why = AGAIN_ALONE[first["status"]], first["message"]
            record["notes"].append(f"graded again alone: its first run, beside other bundles, {what} ({why})")
            yield kept(record, evidence)


def _compare(records: list[dict], rubric: Rubric, out: Path) -> None:
    """Model similarity and the class report; the grades stand without them (the log says why)."""
    with _grader_log(out / "grader.log"):
        try:
            compare_class(records, rubric, out)
        except Exception:
            log.exception("comparing the models of the batch")
            print(
                f"warning: model similarity or the class report failed; see {out / 'grader.log'}",
                file=sys.stderr,
            )


def graded_records(out: str | Path) -> list[dict]:
    """The records of a graded batch, from its ``results/`` folder (what ``similarity`` compares again)."""
    out = Path(out)
    records = []
    for path in sorted((out / "results").glob("*.json")) if (out / "results").is_dir() else []:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))["extra_data"]["attention_lab"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if (
            isinstance(record, dict)
            and record.get("student") == path.stem
            and record.get("task") in tasks.names()
        ):
            records.append(record)
    if not records:
        if (out / STOPPED).is_file():
            raise InputError(
                f"{str(out)!r} holds no graded results yet: its `grade` was stopped before it "
                "graded any submission; run it again to go on"
            )
        raise InputError(
            f"{str(out)!r} holds no graded results (results/*.json): give the --out folder of `grade`"
        )
    if len({r["task"] for r in records}) > 1:
        raise InputError(f"{str(out)!r} holds results of more than one task")
    return records


def latest_hidden_set(records: list[dict]) -> tuple[list[dict], int]:
    """The records graded on the hidden set most of them share (a folder graded again on another set keeps the
    results of students no longer in the batch), and how many were left out."""

    def key(record: dict) -> str:
        return json.dumps(record.get("hidden_set", {}).get("sha256"), sort_keys=True)

    keys = [key(r) for r in records]
    common = max(set(keys), key=lambda k: (keys.count(k), k))
    kept = [r for r, k in zip(records, keys) if k == common]
    return kept, len(records) - len(kept)


def compare_class(records: list[dict], rubric: Rubric, out: Path) -> list[dict]:
    """Model similarity over the batch (``similarity.csv``) and the class report (``class-report.html``)."""
    from autograder.class_report import write_class_report

    pairs = write_similarity(out, records)
    write_class_report(records, rubric, out, pairs, THRESHOLDS)
    return pairs


def _write_student_files(record: dict, rubric: Rubric, out: Path) -> None:
    """A student's feedback and results; without the heatmaps if they fail; logged, never fatal, if that fails
    too."""
    for attempt in range(2):
        try:
            write_student_files(record if attempt == 0 else {**record, "examples": []}, rubric, out)
            return
        except Exception:
            log.exception("writing the feedback of %s", record["student"])


def dev_set(task: str) -> HiddenSet:
    """The public dev split as a "hidden" set: what ``check`` scores a bundle on."""
    dataset = tasks.get(task).dataset
    rows = [
        {**row, "source": row[dataset.input_column], "target": row[dataset.target_column]}
        for row in read_csv(dataset.path / "dev.csv")
    ]
    ids = [{"id": f"d{i:06d}", **row} for i, row in enumerate(rows)]
    return HiddenSet(
        dataset.path,
        [{"id": r["id"], "source": r["source"]} for r in ids],
        ids,
        {"task": task, "size": len(ids), "sha256": {}, "secret_fingerprint": "public-dev"},
        "the public dev set",
        public=True,
    )


def bundle_task(path: str | Path) -> str | None:
    """The task a bundle's meta.json names (a text, which may name no task of the kit), or None where it names
    none or cannot be read. A first look, for ``check`` to pick the rubric; grading opens the bundle safely
    and checks the task again."""
    path = Path(path)
    try:
        if path.is_dir():
            meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        else:
            with zipfile.ZipFile(path) as archive:
                name = next(n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "meta.json")
                if archive.getinfo(name).file_size > 1_000_000:
                    return None
                meta = json.loads(archive.read(name))
        return meta["task"] if isinstance(meta["task"], str) else None
    except (OSError, ValueError, KeyError, TypeError, StopIteration, RecursionError, zipfile.BadZipFile):
        return None


def check_bundle(
    path: str | Path, rubric: Rubric | None = None, *, task: str | None = None, limit: int | None = 1000
) -> dict:
    """Validate one bundle and score it on (the first ``limit`` rows of) the public dev set; the result record
    (``status``, ``message``, ``lines``, ``score``, ...), as grading makes it.

    ``task``: the task the bundle must be for (the assignment's, say ``"name-transliteration"`` in the
    homework's notebook); a bundle for another task gets the status ``wrong-task`` and a message naming
    both, and is not run. ``rubric``: what it is scored with; by default the task's own (``task``'s, else
    the one the bundle names). A rubric for another task than ``task`` (``load_rubric(task=run.task)``
    where the run is another lab's) gives way to ``task``'s own. A student checks their own bundle, so it
    runs even where the machine cannot isolate it, and what the grader would tell the instructor of the
    machine (it ran short of memory) is told to the student.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise InputError(f"no bundle at {str(path)!r}")
    if task is not None and (rubric is None or rubric.task != task):
        rubric = load_rubric(task=task)
    elif rubric is None:
        found = bundle_task(path)
        if found not in tasks.names():
            raise InputError(f"{path} has no readable meta.json naming a task of this kit; {EXPORT_ADVICE}")
        rubric = load_rubric(task=found)
    hidden = dev_set(rubric.task)
    if limit is not None and limit < len(hidden.inputs):
        hidden = HiddenSet(
            hidden.folder,
            hidden.inputs[:limit],
            hidden.targets[:limit],
            hidden.manifest,
            f"the first {limit:,} rows of the public dev set",
            public=True,
        )
    return grade_bundle(
        path, rubric, hidden, isolation=resolve_isolation("auto"), run_unisolated=True, own_machine=True
    )
