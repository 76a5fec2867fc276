"""The same grader, packaged as a Gradescope autograder: one container per submission.

``package`` writes ``autograder.zip`` with Gradescope's two entry points at its root:

- ``setup.sh``: installs Python and the kit's requirements into ``/autograder/source/.venv``, with
  the grader's Keras floor (:mod:`autograder.keras_floor`; students' ``requirements.txt`` allows older);
- ``run_autograder``: grades ``/autograder/submission`` (the student's upload: their bundle zip,
  or its files) and writes ``/autograder/results/results.json``;

plus the kit (``labs/``, ``autograder/``, ``datasets/``, ``requirements.txt``), the rubric and the
hidden set. The zip goes to Gradescope only; students never see it.

Gradescope runs each submission as root in a Docker container whose default seccomp profile usually blocks
user namespaces, so the grader falls back to ``user+nonet`` isolation there: the child runs as an unprivileged
user with no network (see :mod:`autograder.sandbox`). ``run_autograder`` first opens the kit's code
(``labs/``, ``autograder/``) and the virtual environment to that user, and makes everything it must not read
private to root: the hidden set, the rubric, the kit's datasets, the romanizer packages (the homework's
spellings come from them), the student's upload, the results and Gradescope's submission metadata. The grader
checks that before it runs anything, and refuses otherwise. ``python -m autograder gradescope-selfcheck``
(:mod:`autograder.gradescope_check`) runs a package this way before it is uploaded.

Memory: the container holds the grader and its sandboxed child together (768 MB by default). When
the kernel kills the child for it, results.json and the run's output say so in one line, "out of
memory: raise the autograder's memory to N MB" (:mod:`autograder.container`), with a line for the
student under it, a score of 0 and no tests (:func:`out_of_memory_result`); when it kills the grader
itself, ``run_autograder`` writes the same result (:func:`write_killed_result`).
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path

from autograder.container import memory_limit_mb, out_of_memory_line
from autograder.keras_floor import REQUIREMENT as KERAS_REQUIREMENT
from autograder.rubric import Rubric
from autograder.sandbox import KIT_ROOT
from autograder.status import MACHINE_OUT_OF_MEMORY
from labs.common.errors import InputError

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-venv python3-pip
cd /autograder/source
python3 -m venv .venv
.venv/bin/pip install --upgrade pip
.venv/bin/pip install -r requirements.txt "{keras}"   # the grader's Keras floor (autograder/keras_floor.py)
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission, as root, from /autograder/run_autograder (its copy of this file).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
root=${{here%/source}}                  # /autograder (the self-check runs this same script in a folder of its own)
cd "$root/source"
mkdir -p "$root/results"
# The sandboxed model may run as an unprivileged user here: it may read the kit's code and Python, nothing else.
# /autograder and its source stay unlistable (the sandbox imports the kit through links to labs/ and autograder/).
chmod 711 "$root" "$root/source"
find labs autograder .venv \\( -type d ! -perm -005 -o -type f ! -perm -004 \\) -exec chmod a+rX {{}} +
chmod -R go-rwx hidden rubric.toml datasets "$root/submission" "$root/results" \\
    .venv/lib/python3*/site-packages/pythainlp .venv/lib/python3*/site-packages/onnxruntime
chmod go-rwx "$root/submission_metadata.json" 2>/dev/null || true
.venv/bin/python -m autograder gradescope-run --task {task} --hidden hidden --rubric rubric.toml \\
    --submission "$root/submission" --results "$root/results/results.json" --seconds {seconds}
status=$?
if [ ! -s "$root/results/results.json" ]; then   # the grader itself was killed (status 137: memory)
    .venv/bin/python -c 'import sys; from autograder.gradescope import write_killed_result as w; w(sys.argv[1], int(sys.argv[2]))' \\
        "$root/results/results.json" "$status"
fi
"""

KIT = ("labs", "autograder", "datasets", "requirements.txt")
SKIP = ("__pycache__", ".pyc", ".keras", ".ipynb_checkpoints")


def _add_tree(archive: zipfile.ZipFile, source: Path, name: str) -> None:
    paths = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    for path in paths:
        relative = name if source.is_file() else f"{name}/{path.relative_to(source).as_posix()}"
        if not any(part in relative for part in SKIP) and not path.is_symlink():
            archive.write(path, relative)


def _add_script(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o755 << 16  # executable: Gradescope runs these directly
    archive.writestr(info, text)


GRADESCOPE_SECONDS = 600  # Gradescope's autograder timeout unless the assignment's settings raise it
RESERVE_SECONDS = 60  # of that timeout, for what runs around the bundle's runs: Python's start, the results


def package(
    task: str, hidden_dir: str | Path, out: str | Path, rubric: Rubric, seconds: int = GRADESCOPE_SECONDS
) -> Path:
    """Write the Gradescope autograder zip for ``task``, grading against ``hidden_dir`` with ``rubric``, within
    the assignment's timeout of ``seconds``."""
    if seconds <= RESERVE_SECONDS + 60:
        raise InputError(
            f"--timeout {seconds} leaves no time to grade: give the assignment's autograder timeout in "
            f"seconds (Gradescope's default is {GRADESCOPE_SECONDS})"
        )
    from autograder.hidden import load_hidden_set

    load_hidden_set(
        hidden_dir, task
    )  # refuse a missing, changed or wrong-task hidden set now, not on Gradescope
    out = Path(out)
    if out.suffix != ".zip":
        raise InputError(f"--out {str(out)!r} should be a .zip file (Gradescope uploads a zip)")
    if out.resolve().is_relative_to(KIT_ROOT):  # a kit the course may push to GitHub, for Colab's links
        raise InputError(
            f"--out {str(out)!r} is inside the kit's folder, and the package holds the hidden set's answers: "
            "write it beside your hidden sets (e.g. --out ../grading/autograder.zip)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.unlink(missing_ok=True)
    partial.touch(mode=0o600)  # private to you from its first byte, as the hidden set is
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _add_script(archive, "setup.sh", SETUP.format(keras=KERAS_REQUIREMENT))
        _add_script(archive, "run_autograder", RUN.format(task=task, seconds=seconds))
        for name in KIT:
            _add_tree(archive, KIT_ROOT / name, name)
        for name in ("inputs.csv", "targets.csv", "manifest.json"):
            archive.write(Path(hidden_dir) / name, f"hidden/{name}")
        archive.write(rubric.path, "rubric.toml")
    os.replace(partial, out)
    return out


def run_on_gradescope(
    task: str,
    hidden_dir: str | Path,
    rubric: Rubric,
    submission: str | Path,
    results: str | Path,
    isolation: str = "auto",
    seconds: float | None = None,
) -> dict:
    """Grade the one submission Gradescope gives and write its results.json (what ``run_autograder``
    calls). ``seconds``: the assignment's timeout; the bundle's runs end ``RESERVE_SECONDS`` before it, so
    that the grader, not Gradescope, says that they ran out of time (None: the rubric's limits alone, as a
    package built before the timeout was passed)."""
    deadline = time.monotonic() + seconds - RESERVE_SECONDS if seconds else None
    from autograder.batch import check_private
    from autograder.grade import HiddenSet, find_bundle, grade_bundle, missing_bundle, public_examples
    from autograder.hidden import load_hidden_set
    from autograder.reports import gradescope_results
    from autograder.sandbox import clean_stale_folders, is_user_isolation, resolve_isolation

    clean_stale_folders()
    inputs, targets, manifest = load_hidden_set(hidden_dir, task)
    hidden = HiddenSet(Path(hidden_dir), inputs, targets, manifest)
    submission = Path(submission)
    used = resolve_isolation(isolation)
    if is_user_isolation(used):
        check_private([Path(hidden_dir), Path(rubric.path), submission, Path(results).parent])
    bundle = find_bundle(submission) if submission.is_dir() else None
    if bundle is None:
        record = missing_bundle(
            submission.name, rubric, hidden, "the submission is empty: upload your submission.zip", used
        )
    else:
        record = grade_bundle(
            bundle,
            rubric,
            hidden,
            examples=public_examples(task),
            isolation=used,
            run_unisolated=isolation != "auto",
            deadline=deadline,
        )
    output = gradescope_results(record, rubric)
    if record["status"] == MACHINE_OUT_OF_MEMORY:
        # as if the kernel had killed the grader: no tests, no leaderboard row; the record for the instructor
        output = out_of_memory_result(memory_limit_mb(), {"extra_data": output["extra_data"]})
    Path(results).write_text(json.dumps(output, indent=2), encoding="utf-8")
    return output


def _stopped_result(output: str, result: dict | None = None) -> dict:
    """Gradescope's results for a run stopped by the machine, not by the student's bundle: ``output``, a
    score of 0 and no tests (a machine's failure earns no points that would look like a grade), with what
    ``result`` adds."""
    return {
        "tests": [],
        "visibility": "visible",
        "stdout_visibility": "hidden",
        **(result or {}),
        "score": 0,
        "output": output,
        "output_format": "text",
    }


def out_of_memory_result(limit_mb: int | None, result: dict | None = None) -> dict:
    """The results of a run the container's memory stopped, the same whichever process the kernel killed:
    the instructor's line, then what the student reads (Gradescope shows them the output too)."""
    from autograder.reports import STATUS_ADVICE

    return _stopped_result(f"{out_of_memory_line(limit_mb)}\n{STATUS_ADVICE[MACHINE_OUT_OF_MEMORY]}", result)


def write_killed_result(results: str | Path, exit_status: int) -> dict:
    """results.json for a grader that was killed before it wrote one (``run_autograder`` calls this); prints
    its line.

    Exit status 137 (SIGKILL) in a container with a memory limit is the kernel's out-of-memory kill."""
    if exit_status in (137, -9) and memory_limit_mb() is not None:
        output = out_of_memory_result(memory_limit_mb())
    else:
        output = _stopped_result(
            f"the autograder stopped unexpectedly (exit status {exit_status}); its log is in the run's output"
        )
    Path(results).write_text(json.dumps(output, indent=2), encoding="utf-8")
    print(output["output"].splitlines()[0])
    return output
