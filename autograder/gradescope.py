"""The same grader, packaged as a Gradescope autograder: one container per submission.

``package`` writes ``autograder.zip`` with Gradescope's two entry points at its root:

- ``setup.sh``: installs Python and the kit's requirements into ``/autograder/source/.venv``;
- ``run_autograder``: grades ``/autograder/submission`` (the student's upload: their bundle zip,
  or its files) and writes ``/autograder/results/results.json``;

plus the kit (``labs/``, ``autograder/``, ``datasets/``, ``requirements.txt``), the rubric and the
hidden set. The zip goes to Gradescope only; students never see it.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from autograder.rubric import Rubric
from autograder.sandbox import KIT_ROOT
from labs.common.errors import InputError

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-venv python3-pip
cd /autograder/source
python3 -m venv .venv
.venv/bin/pip install --upgrade pip
.venv/bin/pip install -r requirements.txt
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission.
set -uo pipefail
cd /autograder/source
mkdir -p /autograder/results
.venv/bin/python -m autograder gradescope-run --task {task} --hidden hidden --rubric rubric.toml \\
    --submission /autograder/submission --results /autograder/results/results.json
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
    info.external_attr = 0o755 << 16   # executable: Gradescope runs these directly
    archive.writestr(info, text)


def package(task: str, hidden_dir: str | Path, out: str | Path, rubric: Rubric) -> Path:
    """Write the Gradescope autograder zip for ``task``, grading against ``hidden_dir`` with ``rubric``."""
    from autograder.hidden import load_hidden_set

    load_hidden_set(hidden_dir, task)   # refuse a missing, changed or wrong-task hidden set now, not on Gradescope
    out = Path(out)
    if out.suffix != ".zip":
        raise InputError(f"--out {str(out)!r} should be a .zip file (Gradescope uploads a zip)")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _add_script(archive, "setup.sh", SETUP)
        _add_script(archive, "run_autograder", RUN.format(task=task))
        for name in KIT:
            _add_tree(archive, KIT_ROOT / name, name)
        for name in ("inputs.csv", "targets.csv", "manifest.json"):
            archive.write(Path(hidden_dir) / name, f"hidden/{name}")
        archive.write(rubric.path, "rubric.toml")
    os.replace(partial, out)
    return out


def run_on_gradescope(task: str, hidden_dir: str | Path, rubric: Rubric, submission: str | Path,
                      results: str | Path) -> dict:
    """Grade the one submission Gradescope gives and write its results.json (what ``run_autograder`` calls)."""
    from autograder.grade import HiddenSet, find_bundle, grade_bundle, missing_bundle, public_examples
    from autograder.hidden import load_hidden_set
    from autograder.reports import gradescope_results

    inputs, targets, manifest = load_hidden_set(hidden_dir, task)
    hidden = HiddenSet(Path(hidden_dir), inputs, targets, manifest)
    submission = Path(submission)
    bundle = find_bundle(submission) if submission.is_dir() else None
    if bundle is None:
        record = missing_bundle(submission.name, rubric, hidden, "the submission is empty: upload your submission.zip")
    else:
        record = grade_bundle(bundle, rubric, hidden, examples=public_examples(task), hide=[Path(hidden_dir)])
    output = gradescope_results(record, rubric)
    Path(results).write_text(json.dumps(output, indent=2), encoding="utf-8")
    return output
