"""Export a trained model as a submission bundle, the folder (or zip) that students hand in.

    from labs.common.submission import export
    export(run.model, run.vocabs, task=run.task, student_id="6512345678", out="submission.zip")

    python -m labs export --model runs/names --student-id 6512345678 --out submission.zip

A bundle holds:

- ``model.keras``: the model, in Keras 3's format (the grader loads nothing else);
- ``vocab.json``: its vocabularies, so that the grader encodes inputs as the model expects;
- ``meta.json``: student id, task, kit version, library versions, the device it trained on;
- ``predictions.csv`` (optional): the model's outputs on the public test inputs;
- ``custom_layers.py`` (for a task that declares a layer module, homework 3.1): the student's
  ``homework/kv_attention.py``, which defines the layer the model uses.

What a task's bundle needs (its vocabularies, its signature, its layer module) comes from the
task registry (:mod:`labs.tasks`).

Export checks what it can before it writes (the layer file as the grader will, the model on a
few inputs); check the bundle itself before handing it in: ``python -m autograder check
submission.zip --task TASK``.
"""

from __future__ import annotations

import ast
import hashlib
import os
import platform
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from labs import tasks
from labs.common.errors import InputError
from labs.common.files import folder_written_whole, read_csv, write_csv, write_json
from labs.common.paths import REPO_ROOT
from labs.common.vocab import Vocabulary, save_vocabularies

FORMAT, VERSION = "attention-lab-submission", 1
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _library_versions() -> dict[str, str]:
    import keras
    import tensorflow as tf

    import labs

    return {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "numpy": np.__version__,
        "attention_lab": labs.__version__,
    }


PLACEHOLDER_ID = "YOUR_ID"  # what the READMEs' commands write where a student's id goes


def check_student_id(student_id: str) -> str:
    """``student_id`` if it can name a submission; InputError saying what an id may hold otherwise."""
    if str(student_id).upper() == PLACEHOLDER_ID:  # the README's command, copied as it is
        raise InputError(
            f"{PLACEHOLDER_ID} is the README's placeholder: put your university id in its place "
            "(for example --student-id 6512345678)"
        )
    if not STUDENT_ID.fullmatch(str(student_id)):
        raise InputError(
            f"student_id {student_id!r} must start with a letter or a digit and hold 1 to 64 letters, "
            "digits, '.', '_' or '-' (your university id, for example 6512345678)"
        )
    return str(student_id)


def _check_signature(model, task: tasks.Task, vocabs: dict[str, Vocabulary]) -> None:
    """Run the model once on a tiny input: catch a wrong model before the grader does."""
    target_size = len(vocabs["target"])
    tokens = np.array([[1, 4, 5]], dtype="int32")  # (1, 3)
    try:
        outputs = model.predict_on_batch([tokens, tokens] if task.translates else tokens)
    except Exception as error:
        raise InputError(
            f"the model does not accept the {task.name} inputs, {tasks.SIGNATURES[task.signature]}: {error}"
        ) from None
    probabilities = np.asarray(outputs[0] if isinstance(outputs, (list, tuple)) else outputs)
    if probabilities.shape != (1, 3, target_size):
        raise InputError(
            f"the model returns shape {probabilities.shape}; a {task.name} model must return "
            f"next-character probabilities (batch, T, {target_size}), one distribution per input position"
        )


def layer_sha256(path: str | Path) -> str:
    """The SHA-256 of a layer file's code: what a run records of the code it was trained with.

    The code is the file's syntax tree, so a comment or a blank line added after training changes
    nothing; a file that does not parse is hashed as it is.
    """
    from labs.common.layer_audit import parse_python

    source = Path(path).read_bytes()
    try:
        source = ast.dump(parse_python(source), include_attributes=False).encode("utf-8")
    except (SyntaxError, ValueError, RecursionError):
        pass
    return hashlib.sha256(source).hexdigest()


def check_layer_module(
    task: str, layer_module: str | Path | None = None, *, trained_with: str | None = None
) -> Path | None:
    """The layer file a ``task`` bundle carries, checked as the grader will; None for a task without one.

    In this order, each failure an InputError with the fix: the file exists; it passes the
    grader's import audit; it is the file the model was trained with (``trained_with``, the
    SHA-256 its run recorded; where it is not, the message says too whether the self-test now fails);
    the task's self-test passes on it.
    """
    from labs.common.layer_audit import audit_module

    record = tasks.get(task)
    if record.custom_layer_module is None:
        if layer_module is not None:
            raise InputError(
                f"a {task} bundle carries no custom layers: its model uses Keras' own layers only"
            )
        return None
    path = Path(layer_module or record.custom_layer_module)
    shown = _shown(path)
    if not path.is_file():
        raise InputError(
            f"no layer module at {shown!r}; the {task} bundle must carry the file that defines your "
            f"layer ({record.custom_layer_module.name})"
        )
    audit = audit_module(path.read_bytes(), name=shown)
    if not audit.allowed:
        raise InputError(
            f"{audit.message}: the grader would refuse the bundle. Fix the file, then run the "
            "self-test, train again and export"
        )
    failed = record.layer_selftest(path) if record.layer_selftest is not None else []
    if trained_with is not None and layer_sha256(path) != trained_with:
        broken = (
            f" and now fails the self-test ({len(failed)} check(s); first: {failed[0]})" if failed else ""
        )
        fix = "fix it (python -m labs selftest homework) and train again" if failed else "train again"
        raise InputError(
            f"{shown} changed since this model was trained{broken}, so the bundle would carry code the model "
            f"never ran with. Put the file back as it was when you trained, or {fix}, then export"
        )
    if failed:
        raise InputError(
            f"the self-test fails on {shown} ({len(failed)} check(s); first: {failed[0]}). "
            "Run the self-test (python -m labs selftest homework), fix the file, train again, then export"
        )
    return path


def _shown(path: Path) -> str:
    """``path`` as the student knows it: relative to the kit when it is inside it."""
    try:
        return path.resolve().relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return str(path)


# The files a bundle holds: these three always, and these two where the export wrote them (the grader's
# autograder.bundle extracts these and nothing else).
REQUIRED_FILES = ("model.keras", "vocab.json", "meta.json")
OPTIONAL_FILES = ("predictions.csv", "custom_layers.py")
# How a student writes a bundle: what the grader's messages about a broken one advise.
EXPORT_ADVICE = (
    "export it with python -m labs export --model RUN_FOLDER --student-id YOUR_ID --out submission.zip "
    "(or the notebook's export cell)"
)


def check_bundle_out(out: Path, overwrite: bool, replace_with: str) -> None:
    """An InputError unless a bundle may be written to ``out``: absent, an empty folder, or (``overwrite``)
    an earlier bundle. A folder that holds anything else is never replaced: ``--out homework --overwrite``
    must not take a student's own files with it."""
    if not out.exists():
        return
    if out.is_dir() != (out.suffix != ".zip"):
        raise InputError(
            f"{str(out)!r} is a {'folder' if out.is_dir() else 'file'}; give "
            f"{'a .zip file' if out.suffix == '.zip' else 'a folder'} name that is not one"
        )
    if out.is_dir():
        entries = sorted(entry.name for entry in out.iterdir())
        if entries and not ("meta.json" in entries and set(entries) <= set(REQUIRED_FILES + OPTIONAL_FILES)):
            shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
            raise InputError(
                f"{str(out)!r} is a folder that is not a submission bundle (it holds {shown}), and an "
                "export never replaces one; choose a new name, such as submission.zip"
            )
        if not entries:
            return
    if not overwrite:
        raise InputError(f"{str(out)!r} already exists; remove it, choose another name, or {replace_with}")


def export(
    model,
    vocabs: dict[str, Vocabulary],
    *,
    task: str,
    student_id: str,
    out: str | Path,
    predictions: list[dict] | None = None,
    device: str | None = None,
    layer_module: str | Path | None = None,
    trained_with: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a submission bundle for ``task`` to ``out`` (a new folder, or a ``.zip`` file); returns ``out``.

    ``predictions``: rows with ``source`` and ``prediction`` (optional). ``layer_module``: the
    file defining custom layers (default: the task's, ``homework/kv_attention.py`` for homework
    3.1). ``trained_with``: the SHA-256 of the layer file the model was trained with
    (``run.layer_sha256``; a run folder's ``metrics.json``): a changed file is refused.

    Before anything is written, the layer file is checked (:func:`check_layer_module`: the grader's import
    audit, the self-test), and the model runs on a few public dev inputs (the right shapes, no NaN). The
    bundle is written beside ``out`` and renamed into place, so ``out`` is whole or absent, and with
    ``overwrite`` an earlier bundle there survives any failure."""
    record = tasks.get(task)
    check_student_id(student_id)
    missing = [name for name in record.vocabulary_names if name not in vocabs]
    if missing:
        raise InputError(
            f"the vocabularies lack {', '.join(missing)}; pass the ones the model was trained with"
        )
    out = Path(out)
    check_bundle_out(out, overwrite, replace_with="replace it (export(..., overwrite=True))")
    layer_module = check_layer_module(task, layer_module, trained_with=trained_with)
    _check_signature(model, record, vocabs)
    _check_outputs(model, record, vocabs)
    if out.suffix == ".zip":
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
            _write_bundle(Path(scratch), model, vocabs, task, student_id, predictions, device, layer_module)
            _zip(Path(scratch), out)
    else:
        with folder_written_whole(out, replace=overwrite) as scratch:
            _write_bundle(scratch, model, vocabs, task, student_id, predictions, device, layer_module)
    return out


def _check_outputs(model, task: tasks.Task, vocabs: dict[str, Vocabulary], rows: int = 8) -> None:
    """Run the model on the first public dev inputs: next-character probabilities, no NaN or inf."""
    from labs.common.pipeline import language_model_arrays, translation_arrays

    dev = task.dataset.path / "dev.csv"
    if not dev.is_file():
        return
    examples = read_csv(dev)[:rows]
    if task.translates:
        source, target_in, _ = translation_arrays(
            [
                {"source": r[task.dataset.input_column], "target": r[task.dataset.target_column]}
                for r in examples
            ],
            vocabs,
        )
        inputs = [source, target_in]
    else:
        inputs = language_model_arrays([r[task.dataset.target_column] for r in examples], vocabs["target"])[0]
    outputs = model.predict_on_batch(inputs)
    probabilities = np.asarray(outputs[0] if isinstance(outputs, (list, tuple)) else outputs, dtype="float64")
    if not np.isfinite(probabilities).all():
        raise InputError(
            f"the model's outputs on {rows} public dev inputs hold NaN or inf (training diverged, or "
            "the layer computes something float16 cannot hold); the grader would score it 0. "
            "Run the self-test, then train again"
        )


def _write_bundle(folder: Path, model, vocabs, task, student_id, predictions, device, layer_module) -> None:
    from labs.common.training import device_description, save_model_atomically

    save_model_atomically(model, folder / "model.keras", for_inference=True)
    save_vocabularies(
        folder / "vocab.json", task, {name: vocabs[name] for name in tasks.get(task).vocabulary_names}
    )
    write_json(
        folder / "meta.json",
        {
            "format": FORMAT,
            "version": VERSION,
            "student_id": str(student_id),
            "task": task,
            "libraries": _library_versions(),
            "device": device or device_description(),
            "parameters": int(model.count_params()),
        },
    )
    if predictions is not None:
        write_csv(
            folder / "predictions.csv",
            ("source", "prediction"),
            [{"source": p["source"], "prediction": p["prediction"]} for p in predictions],
        )
    if layer_module is not None:
        shutil.copyfile(layer_module, folder / "custom_layers.py")


def _zip(folder: Path, out: Path) -> None:
    """Zip the files of ``folder`` (flat, sorted) into ``out``, atomically."""
    partial = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, arcname=path.name)
    os.replace(partial, out)
