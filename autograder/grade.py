"""Grade bundles: validate, run in the sandbox, score with the rubric; one bundle or a whole folder.

Every bundle ends with a status and a message, whatever it holds: one of the vocabulary of
:mod:`autograder.status` (``graded``, or why not: ``malformed``, ``unsafe``, ``wrong-task``,
``disallowed``, ``timeout``, ...). A failed run on the hidden set is told in the grader's words.

Nothing a bundle holds can stop the batch: any exception while reading, checking, running or
scoring one bundle becomes that bundle's ``error`` (the traceback goes to the grader's log, not
to the student). A bundle that cannot be run still gets the architecture points its config
earns (partial credit).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder.allowlist import ConfigError, check_config
from autograder.bundle import OPTIONAL, REQUIRED, BundleError, open_bundle
from autograder.claims import CHECKS, ClaimError, clean_message, file_name_text, reported_seconds, visible
from autograder.rubric import Rubric
from autograder.sandbox import ISOLATES_CODE, TEMP_PREFIX, Limits, read_weights, run_child
from autograder.scoring import ScoringTimeout, architecture_line, compute_metrics, metric_lines
from autograder.status import (
    CRASHED,
    DISALLOWED,
    ERROR,
    GRADED,
    LOAD_FAILED,
    MALFORMED,
    NAN_OUTPUT,
    NOT_ISOLATED,
    OK,
    OUT_OF_MEMORY,
    TIMEOUT,
    WRONG_SIGNATURE,
    WRONG_TASK,
)
from labs import tasks
from labs.common.layer_audit import audit_module

EXAMPLES = 4  # public dev examples shown in each student's feedback
GRADESCOPE_ENTRY = re.compile(r"submission_\d+")  # the folder names of Gradescope's "export submissions"
log = logging.getLogger("autograder")


@dataclass
class HiddenSet:
    folder: Path
    inputs: list[dict]
    targets: list[dict]
    manifest: dict
    name: str = "the hidden test set"  # what a rubric line says it was scored on
    public: bool = False  # inputs a student has (check's dev set): what the child says may be shown


def student_id_for(path: Path) -> str:
    """A safe, readable id from a bundle's file or folder name (never from inside the bundle).

    Letters, digits, ``.``, ``_`` and ``-`` are kept; a name that needed changing (spaces, Thai letters, a
    leading dot) also gets a short hash of the original, so distinct names stay distinct."""
    return safe_id(path.name[:-4] if path.name.lower().endswith(".zip") else path.name)


def safe_id(name: str) -> str:
    """``name`` as an id that is also a file name (see :func:`student_id_for`)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._-")[:48]
    if safe != name:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        safe = f"{safe}-{digest}" if safe else f"student-{digest}"
    return safe


def bundle_digest(path: Path, max_bytes: int) -> str:
    """SHA-256 of a zip's bytes (whatever the file is called: an LMS renames it), or of a folder's bundle
    files (names and contents): what "the same bundle" means.

    Links and anything but plain files are never opened (a link to ``/dev/zero`` would never end)."""
    digest = hashlib.sha256()
    if stat.S_ISREG(os.lstat(path).st_mode):
        files, named = [path], False
    elif stat.S_ISDIR(os.lstat(path).st_mode):
        files = sorted(
            p for p in path.iterdir() if p.name in REQUIRED + OPTIONAL and stat.S_ISREG(os.lstat(p).st_mode)
        )
        named = True
    else:
        return ""
    remaining = max_bytes
    for file in files:
        if named:
            digest.update(file.name.encode("utf-8", "surrogateescape") + b"\0")
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            while remaining > 0 and (chunk := handle.read(min(1 << 20, remaining))):
                digest.update(chunk)
                remaining -= len(chunk)
    return digest.hexdigest()


def bundle_bytes(path: Path) -> int:
    """A bundle's size on disk: the zip's, or the sum of a folder's plain files (links never followed)."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        return info.st_size if stat.S_ISREG(info.st_mode) else 0
    return sum(i.st_size for p in path.iterdir() if stat.S_ISREG((i := os.lstat(p)).st_mode))


def find_bundle(entry: Path) -> Path | None:
    """The bundle inside one student's entry: the entry itself, or (Gradescope's export layout) the
    one zip or bundle folder inside the student's submission folder. Links are never followed."""
    mode = os.lstat(entry).st_mode
    if not stat.S_ISDIR(mode) or _holds_model(entry):
        return entry
    inner = [p for p in entry.iterdir() if not p.name.startswith(".")]
    zips = [p for p in inner if p.suffix.lower() == ".zip" and stat.S_ISREG(os.lstat(p).st_mode)]
    folders = [p for p in inner if stat.S_ISDIR(os.lstat(p).st_mode) and _holds_model(p)]
    if len(zips) + len(folders) == 1:
        return (zips + folders)[0]
    return entry if inner else None


def _holds_model(folder: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(folder / "model.keras").st_mode)
    except OSError:
        return False


def _job(rubric: Rubric, hidden: HiddenSet | None, examples: list[str], allow_custom: bool) -> dict:
    """What the child is asked: the task's signature and limits, the inputs, how to decode them.

    Two runs, never one: the public examples with no hidden input (``hidden=None``: what the student's
    feedback shows), then the hidden inputs with no examples (``examples=[]``: what is scored). Whatever a
    child writes can only hold what it was given, and the run a student reads comes first, so the text a
    student reads never held a hidden input."""
    task, grading = tasks.get(rubric.task), rubric.grading
    job = {
        "task": task.name,
        "signature": task.signature,
        "allow_custom_layers": allow_custom,
        "max_length": task.max_output_length,
    }
    if not task.translates:
        return {
            **job,
            "samples": int(grading.get("samples", 2000)),
            "seed": 0,
            "score_texts": [row["source"] for row in hidden.inputs[: int(grading.get("score_texts", 2000))]],
        }
    return {
        **job,
        "sources": [row["source"] for row in hidden.inputs] if hidden else [],
        "beam": int(grading.get("beam", 1)),
        "batch_size": int(grading.get("batch_size", 2000)),
        "examples": examples,
        "attention_view": task.attention_view,
    }


# What a student reads when the run on the hidden inputs failed: the grader's own words, since that run's
# child saw the hidden inputs and could write them into its message. Where a status's message is always the
# grader's (timeout, too-many-processes, machine-out-of-memory), it is kept.
_FAILED_ON_HIDDEN = {
    WRONG_SIGNATURE: "the model does not take the task's inputs or give its outputs",
    LOAD_FAILED: "the model could not be loaded",
    NAN_OUTPUT: "the model gave NaN or infinite probabilities",
    OUT_OF_MEMORY: "the model ran out of memory (its limit is {memory_mb} MB)",
    ERROR: "the model raised an error while it ran",
    CRASHED: "the grading process stopped unexpectedly (in the model's code or a library it called)",
}


def _rubric_name(path) -> str:
    """The rubric as a record keeps it: inside the kit, its path from the kit's folder; else its file name (no
    path of the grading machine in a record, which Gradescope's results carry)."""
    path = Path(path).resolve()
    kit = Path(__file__).resolve().parent.parent
    return path.relative_to(kit).as_posix() if path.is_relative_to(kit) else path.name


def display_name(path: Path) -> str:
    """A bundle's file name as text any report can hold: a name that is not UTF-8 gets U+FFFD, and what shows
    nothing or turns text around is written as ``<U+XXXX>`` (:func:`autograder.claims.visible`)."""
    return visible(file_name_text(path.name))


def wrong_task_message(bundle: str, found, expected: str) -> str:
    """What a student reads when the bundle named ``bundle`` is for the task ``found`` (its meta.json's
    ``task``, whatever that holds) and not for ``expected``: one line naming both."""
    if isinstance(found, str) and found in tasks.names():
        what = f"a {found} bundle ({tasks.get(found).title})"
    elif found is None:
        what = "a bundle whose meta.json names no task"
    else:
        what = f"a bundle for the task {clean_message(found, 60)!r}, which this kit does not know"
    return f"{bundle} is {what}, not a {expected} one; export it from the {expected} notebook or run"


def _new_record(path: Path, rubric: Rubric, hidden: HiddenSet, isolation: str) -> dict:
    return {
        "student": student_id_for(path),
        "bundle": display_name(path),
        "task": rubric.task,
        "bundle_sha256": "",
        "status": GRADED,
        "message": "",
        "notes": [],
        "hidden_set": {
            "size": hidden.manifest.get("size"),
            "sha256": hidden.manifest.get("sha256", {}),
            "secret_fingerprint": hidden.manifest.get("secret_fingerprint"),
        },
        "rubric": _rubric_name(rubric.path),
        "isolation": isolation,
        "metrics": {},
        "examples": [],
        "sandbox_seconds": None,
        "sandbox_cpu_seconds": None,
        "peak_memory_mb": None,
        "bundle_bytes": None,
    }


@dataclass
class Findings:
    """What grading one bundle found, step by step; a step that refuses the bundle sets the status.

    A bundle that fails part-way keeps what was found before: the classes and parameters of its
    config still earn their architecture points.
    """

    status: str = GRADED
    message: str = ""
    # what the student reads beside the score
    notes: list[str] = field(default_factory=list)
    # the model's layer classes and parameter count (counted: from its weights, not its config)
    classes: set = field(default_factory=set)
    parameters: int | None = None
    counted: bool = False
    # what the rubric scores, and the public examples decoded
    metrics: dict | None = None
    examples: list[dict] = field(default_factory=list)
    # the sandbox's measures: sandbox_seconds, sandbox_cpu_seconds, peak_memory_mb, child_seconds
    sandbox: dict = field(default_factory=dict)
    # what model similarity compares (never in the record, which students see)
    weights: dict | None = None
    answers: dict | None = None


@dataclass(frozen=True)
class Options:
    """How to grade a bundle: from the command line and the submission's name, never from the bundle."""

    # the public dev examples shown in the feedback
    examples: tuple = ()
    # how the sandbox isolates the child (autograder.sandbox.resolve_isolation)
    isolation: str = "none"
    # run code that this machine cannot isolate (the instructor named the isolation)
    run_unisolated: bool = False
    # the student's id from the submission's name, or the names an LMS gives (id and name)
    entry_id: str | tuple[str, ...] | None = None
    # the student's own check (check_bundle): the machine is theirs, and so is what is said of it
    own_machine: bool = False
    # time.monotonic() by which every run of the bundle must have ended (Gradescope's timeout), or None
    deadline: float | None = None


# What a student's own check says of a run stopped at the time limit while their machine read back more
# memory than it holds (the sandbox's machine_note, which tells the instructor to raise the grading
# machine's memory).
OWN_MACHINE_SHORT_OF_MEMORY = (
    "meanwhile this computer ran short of memory (it read back more than it holds), which can make any "
    "model this slow: close other programs or notebooks, or restart the runtime, and check again"
)


def grade_bundle(
    path: Path,
    rubric: Rubric,
    hidden: HiddenSet,
    *,
    examples: list[dict] = (),
    isolation: str = "none",
    run_unisolated: bool = False,
    entry_id: str | tuple[str, ...] | None = None,
    evidence: dict | None = None,
    own_machine: bool = False,
    deadline: float | None = None,
) -> dict:
    """Grade one bundle; never raises for anything the bundle holds. Returns the full result record.

    ``isolation``: how the sandbox isolates the child (:func:`autograder.sandbox.resolve_isolation`). Where it
    does not isolate code (``user``: the network is open; ``none``), a bundle that carries code runs only when
    ``run_unisolated`` (the instructor named the isolation). ``entry_id``: the student's id from the
    submission's name (or the names an LMS gives: id and name), to compare with the id in ``meta.json``.
    ``evidence``, a dict, receives what model similarity compares (``weights``, ``answers``:
    :mod:`autograder.similarity`); it never enters the record, which students see. ``own_machine``: the
    student checks their own bundle on their own machine, so what the grader would tell the instructor of the
    machine is told to them, in their words. ``deadline`` (``time.monotonic()``): when every run must have
    ended, whatever the rubric's limits (Gradescope's timeout, which would otherwise stop the grader before it
    wrote a result)."""
    options = Options(tuple(examples), isolation, run_unisolated, entry_id, own_machine, deadline)
    record = _new_record(path, rubric, hidden, isolation)
    try:
        if os.path.lexists(path):
            record["bundle_sha256"] = bundle_digest(path, int(rubric.bundle_mb * 1_000_000))
            record["bundle_bytes"] = bundle_bytes(path)
        with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-bundle-") as work:
            found = _grade(path, Path(work), rubric, hidden, options)
    except BundleError as error:  # reading the bundle's digest refused it (too large, unsafe)
        found = Findings(error.status, clean_message(error.message, 500))
    except Exception as error:  # a barrier per bundle: whatever it holds, the batch goes on
        found = Findings(*_could_not_handle(path, error))
    try:
        lines = [
            architecture_line(rubric, found.classes, found.parameters, counted=found.counted),
            *metric_lines(rubric, found.metrics, hidden.name),
        ]
    except Exception as error:
        found.status, found.message = _could_not_handle(path, error)
        found.metrics = None
        lines = [architecture_line(rubric, set(), None), *metric_lines(rubric, None, hidden.name)]
    if evidence is not None:
        evidence.update(weights=found.weights, answers=found.answers if found.metrics else None)
    record.update(
        status=found.status,
        message=found.message,
        notes=found.notes,
        examples=found.examples,
        **found.sandbox,
        metrics=found.metrics or {},
        parameters=found.parameters,
        lines=[line.to_dict() for line in lines],
        score=round(sum(line.points for line in lines), 2),
        max_score=rubric.max_score,
    )
    return record


def _could_not_handle(path: Path, error: Exception) -> tuple[str, str]:
    """The status and message of a bundle the grader itself failed on (the traceback goes to its log)."""
    log.exception("grading %s", display_name(path))
    return ERROR, (
        f"the grader could not handle this bundle ({type(error).__name__}); "
        "the instructor's grader.log has the details"
    )


def _plain_name(name: str) -> str:
    """A name as an LMS compares it: case and everything but letters and digits dropped (Canvas writes
    ``Doe, Jane`` as ``doejane``)."""
    return re.sub(r"[\W_]", "", name.casefold())


def _name_forms(name: str) -> set[str]:
    """``name`` as an LMS may write it: its words in any order (Moodle's ``Jane Doe`` is Canvas's
    ``doejane``)."""
    words = name.split()[:4]
    return {_plain_name(name)} | {_plain_name("".join(order)) for order in itertools.permutations(words)}


def _grade(path: Path, work: Path, rubric: Rubric, hidden: HiddenSet, options: Options) -> Findings:
    """Open, check, run and score one bundle, in that order; a refusal stops there, with what was found."""
    found = Findings()
    try:
        # 1. Open: a bundle of this task, from this student.
        bundle = open_bundle(path, work, max_bytes=int(rubric.bundle_mb * 1_000_000))
        if bundle.meta.get("task") != rubric.task:
            raise BundleError(
                WRONG_TASK, wrong_task_message(display_name(path), bundle.meta.get("task"), rubric.task)
            )
        found.notes.extend(_identity_notes(bundle.meta.get("student_id"), options.entry_id))

        # 2. Check, before anything runs: the model's classes, then the code it carries.
        carries_code = bool(rubric.custom_layers) and bundle.has_custom_layers
        try:
            verdict = check_config(
                bundle.model_config, allowed_custom=rubric.custom_layers, custom_layers_present=carries_code
            )
        except ConfigError as error:
            raise BundleError(MALFORMED, str(error)) from None
        found.classes = verdict.classes
        if not verdict.allowed:
            raise BundleError(DISALLOWED, verdict.message)
        files = {name: bundle.folder / name for name in ("model.keras", "vocab.json")}
        if carries_code:
            files["custom_layers.py"] = bundle.folder / "custom_layers.py"
            audit = audit_module(files["custom_layers.py"].read_bytes())
            if audit.review:
                found.notes.append("custom_layers.py uses " + ", ".join(audit.review) + ": worth a read")
            if not audit.allowed:
                raise BundleError(DISALLOWED, audit.message)
            if options.isolation not in ISOLATES_CODE and not options.run_unisolated:
                raise BundleError(NOT_ISOLATED, _NOT_ISOLATED[options.isolation])
        weights = read_weights(files, _limits(rubric, options), options.isolation)
        found.parameters, found.weights, found.counted = weights["parameters"], weights, True

        # 3. The public examples, decoded in a run of their own, first: what the student reads of the bundle's
        # own words comes from a run that no hidden input has reached, even through what a run leaves in the
        # machine (the page cache, a keyring). The bundle's code never runs again once it has seen them.
        examples, public_failed = _public_run(
            files,
            replace(rubric, limits=_limits(rubric, options)),
            list(options.examples),
            carries_code,
            options.isolation,
        )

        # 4. Run on the hidden inputs, in the sandbox.
        job = _job(rubric, hidden, [], carries_code)
        outcome = run_child(files, job, _limits(rubric, options), options.isolation)
        if outcome.machine_note and options.own_machine:
            outcome = replace(outcome, message=f"{outcome.message}; {OWN_MACHINE_SHORT_OF_MEMORY}")
        elif outcome.machine_note:  # the instructor's alone: never in the record, which students get
            log.warning("%s: %s", display_name(path), outcome.machine_note)
        found.sandbox = {
            "sandbox_seconds": round(outcome.seconds, 2),
            "peak_memory_mb": outcome.peak_memory_mb,
            # the whole tree's, what the time limit charges
            "sandbox_cpu_seconds": outcome.cpu_seconds,
            # the child's own timing: a report, never scored
            "child_seconds": reported_seconds(outcome.data),
        }
        if outcome.status != OK:
            error, notes = _run_failed(outcome, hidden.public, rubric.limits.memory_mb, public_failed, path)
            found.notes.extend(notes)
            raise error

        # 5. Score what it returned, beside the public examples decoded before it.
        try:
            checked = CHECKS[job["signature"]](outcome.data, job)
        except ClaimError as error:
            raise BundleError(
                ERROR, f"the grading process returned results of the wrong shape ({error})"
            ) from None
        try:
            found.metrics = compute_metrics(rubric.task, checked, hidden.targets, rubric.scoring_seconds)
        except ScoringTimeout:  # a timeout: where a run beside it slowed it, it is graded again, alone
            raise BundleError(
                TIMEOUT, f"scoring the model's outputs took longer than {rubric.scoring_seconds:.0f} s"
            ) from None
        found.examples = examples
        if public_failed:
            found.notes.append(f"the run on the public examples failed: {public_failed}")
        try:
            found.answers = tasks.get(rubric.task).graded_answers(checked, hidden.targets)
        except Exception:  # the grade stands; only the comparison with the class goes without this bundle
            log.exception("listing the answers of %s for model similarity", display_name(path))
    except BundleError as error:
        found.status, found.message = error.status, clean_message(error.message, 500)
    except Exception as error:  # the grader's own failure: what was found before it stands
        found.status, found.message = _could_not_handle(path, error)
    return found


LAST_RUN_SECONDS = 10  # the least time worth a run before the deadline


def _limits(rubric: Rubric, options: Options) -> Limits:
    """The rubric's limits for the next run, its wall-clock time cut to what is left before the deadline;
    BundleError (timeout) when too little is left to run at all."""
    if options.deadline is None:
        return rubric.limits
    left = options.deadline - time.monotonic()
    if left < LAST_RUN_SECONDS:
        raise BundleError(
            TIMEOUT,
            "the model's runs took all the time the grading machine gives a submission, before its run on "
            "the hidden test set ended; make it load and decode faster (python -m autograder check times it)",
        )
    return replace(rubric.limits, wall_seconds=min(rubric.limits.wall_seconds, left))


def _identity_notes(claimed, entry_id) -> list[str]:
    """A note when meta.json's student id is not the submission's (an LMS's id or name, in any order)."""
    names = [n for n in ((entry_id,) if isinstance(entry_id, str) else entry_id or ()) if n]
    if (
        names
        and not GRADESCOPE_ENTRY.fullmatch(names[0])
        and isinstance(claimed, str)
        and _plain_name(claimed) not in {form for n in names for form in _name_forms(n)}
    ):
        shown = " or ".join(repr(n) for n in names)
        return [f"meta.json names student {clean_message(claimed, 64)!r}; the submission is {shown}"]
    return []


def _run_failed(
    outcome, public: bool, memory_mb: int, public_failed: str | None, path: Path
) -> tuple[BundleError, list]:
    """The refusal of a bundle whose run failed, and the notes to add.

    On hidden inputs the student reads the grader's words (that run saw the hidden inputs and could
    have written them into its message), and why the run on the public examples failed
    (``public_failed``: that run came first, and no hidden input had reached the machine); the run's own
    message goes to the grader's log only.
    """
    told_by_grader = outcome.status in _FAILED_ON_HIDDEN and not (
        outcome.status == CRASHED and outcome.message.startswith("the model wrote more than")
    )
    if public or not told_by_grader:
        return BundleError(outcome.status, outcome.message), []
    notes = []
    if outcome.message:
        notes.append(f"the run on the hidden inputs failed ({outcome.status}); grader.log has what it said")
        log.warning("%s: the run on the hidden inputs said: %s", display_name(path), outcome.message)
    message = _FAILED_ON_HIDDEN[outcome.status].format(memory_mb=memory_mb)
    if public_failed:  # that run came before any hidden input: what it said may be shown
        message += f"; on the public examples: {public_failed}"
    return BundleError(outcome.status, message), notes


def _public_run(
    files: dict[str, Path], rubric: Rubric, examples: list[dict], carries_code: bool, isolation: str
) -> tuple[list[dict], str | None]:
    """The public examples decoded, with their attention, in a run of their own that is given no hidden input:
    ``(examples, None)``, or ``([], why)`` when that run failed (its message may be shown: it held no hidden
    input)."""
    if not examples:
        return [], None
    job = _job(rubric, None, [e["source"] for e in examples], carries_code)
    outcome = run_child(files, job, rubric.limits, isolation)
    if outcome.status != OK:
        return [], outcome.message or outcome.status
    try:
        return _with_expected(CHECKS[job["signature"]](outcome.data, job).get("examples", []), examples), None
    except ClaimError as error:
        return [], f"the grading process returned examples of the wrong shape ({error})"


_NOT_ISOLATED = {
    "none": "this bundle carries code (custom_layers.py) and this machine cannot isolate it, so it was not "
    "run; the "
    "instructor grades it where user namespaces are available, as root, or with --isolation none",
    "user": "this bundle carries code (custom_layers.py) and this machine's sandbox cannot cut its network "
    "(no "
    "seccomp filter), so it was not run; the instructor grades it where user namespaces or seccomp are "
    "available, or with --isolation user",
}


def missing_bundle(
    name: str, rubric: Rubric, hidden: HiddenSet, message: str, isolation: str = "none"
) -> dict:
    """The record of a submission that holds no bundle at all: malformed, scored 0."""
    record = grade_bundle(Path("/nonexistent") / name, rubric, hidden, isolation=isolation)  # refused at once
    record.update(status=MALFORMED, message=message, bundle=display_name(Path(name)), bundle_sha256="")
    return record


def _with_expected(returned: list[dict], examples: list[dict]) -> list[dict]:
    """The child's (checked) example outputs beside the expected ones, which never went into the sandbox."""
    return [
        {
            "source": example["source"],
            "expected": example["target"],
            "accepted": example.get("accepted", [example["target"]]),
            "output": item["output"],
            "attention": item["attention"],
        }
        for item, example in zip(returned, examples)
    ]


def public_examples(task: str, n: int = EXAMPLES) -> list[dict]:
    """A few rows of the public dev split, shown (with heatmaps) in every student's feedback."""
    from labs.common.files import read_csv

    record = tasks.get(task)
    if not record.translates:
        return []
    rows = read_csv(record.dataset.path / "dev.csv")
    picked = record.feedback_examples(rows, n) if record.feedback_examples else rows[:n]
    return [
        {
            "source": r["source"],
            "target": r["target"],
            "accepted": [r["target"], *[a for a in r.get("alternatives", "").split("|") if a]],
        }
        for r in picked
    ]


def grader_digest() -> str:
    """The grader's own version: the kit's version and a SHA-256 of the code that grades (``autograder/``, and
    ``labs/``, whose metric functions score). A re-run re-grades a result that another grader gave."""
    import labs

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(labs.__version__.encode("utf-8"))
    for path in sorted([*(root / "autograder").rglob("*.py"), *(root / "labs").rglob("*.py")]):
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cached_result(
    results_dir: Path,
    student: str,
    digest: str,
    hidden: HiddenSet,
    rubric_digest: str,
    isolation: str,
    grader: str | None = None,
) -> dict | None:
    """A previous result for the same bundle, hidden set, rubric, isolation and grader, if there is one (for
    resuming).

    ``grader``: :func:`grader_digest` (computed here when not given); a result without one, from a grader
    before it was recorded, is graded again."""
    path = results_dir / f"{student}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8")).get("extra_data", {}).get("attention_lab", {})
    except (OSError, ValueError, AttributeError):
        return None
    same = (
        digest
        and record.get("bundle_sha256") == digest
        and record.get("hidden_set", {}).get("sha256") == hidden.manifest.get("sha256")
        and record.get("rubric_sha256") == rubric_digest
        and record.get("isolation") == isolation
        and record.get("grader_sha256") == (grader or grader_digest())
    )
    return record if same else None
