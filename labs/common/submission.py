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

Check a bundle before handing it in: ``python -m autograder check submission.zip``.
"""

from __future__ import annotations

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
from labs.common.files import folder_written_whole, write_csv, write_json
from labs.common.vocab import Vocabulary, save_vocabularies

FORMAT, VERSION = "attention-lab-submission", 1
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _library_versions() -> dict[str, str]:
    import keras
    import tensorflow as tf

    import labs

    return {"python": platform.python_version(), "tensorflow": tf.__version__, "keras": keras.__version__,
            "numpy": np.__version__, "attention_lab": labs.__version__}


def check_student_id(student_id: str) -> str:
    """``student_id`` if it can name a submission; InputError saying what an id may hold otherwise."""
    if not STUDENT_ID.fullmatch(str(student_id)):
        raise InputError(f"student_id {student_id!r} must be 1 to 64 letters, digits, '.', '_' or '-' "
                         "(your university id, for example 6512345678)")
    return str(student_id)


def _check_signature(model, task: tasks.Task, vocabs: dict[str, Vocabulary]) -> None:
    """Run the model once on a tiny input: catch a wrong model before the grader does."""
    target_size = len(vocabs["target"])
    tokens = np.array([[1, 4, 5]], dtype="int32")                                     # (1, 3)
    try:
        outputs = model.predict_on_batch([tokens, tokens] if task.translates else tokens)
    except Exception as error:
        raise InputError(f"the model does not accept the {task.name} inputs, {tasks.SIGNATURES[task.signature]}: "
                         f"{error}") from None
    probabilities = np.asarray(outputs[0] if isinstance(outputs, (list, tuple)) else outputs)
    if probabilities.shape != (1, 3, target_size):
        raise InputError(f"the model returns shape {probabilities.shape}; a {task.name} model must return "
                         f"next-character probabilities (batch, T, {target_size}), one distribution per input position")


def export(model, vocabs: dict[str, Vocabulary], *, task: str, student_id: str, out: str | Path,
           predictions: list[dict] | None = None, device: str | None = None,
           layer_module: str | Path | None = None) -> Path:
    """Write a submission bundle for ``task`` to ``out`` (a new folder, or a ``.zip`` file); returns ``out``.

    ``predictions``: rows with ``source`` and ``prediction`` (optional). ``layer_module``: the
    file defining custom layers (default: the task's, ``homework/kv_attention.py`` for homework
    3.1). The bundle is written whole or not at all.
    """
    record = tasks.get(task)
    check_student_id(student_id)
    missing = [name for name in record.vocabulary_names if name not in vocabs]
    if missing:
        raise InputError(f"the vocabularies lack {', '.join(missing)}; pass the ones the model was trained with")
    if record.custom_layer_module is not None:
        layer_module = Path(layer_module or record.custom_layer_module)
        if not layer_module.is_file():
            raise InputError(f"no layer module at {str(layer_module)!r}; the {task} bundle must carry the file "
                             f"that defines your layer ({record.custom_layer_module.name})")
    elif layer_module is not None:
        raise InputError(f"a {task} bundle carries no custom layers: its model uses Keras' own layers only")
    _check_signature(model, record, vocabs)
    out = Path(out)
    if out.exists() and (out.is_file() or any(out.iterdir())):
        raise InputError(f"{str(out)!r} already exists; remove it or choose another name")
    if out.suffix == ".zip":
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
            _write_bundle(Path(scratch), model, vocabs, task, student_id, predictions, device, layer_module)
            _zip(Path(scratch), out)
    else:
        with folder_written_whole(out) as scratch:
            _write_bundle(scratch, model, vocabs, task, student_id, predictions, device, layer_module)
    return out


def _write_bundle(folder: Path, model, vocabs, task, student_id, predictions, device, layer_module) -> None:
    from labs.common.training import device_description, save_model_atomically

    save_model_atomically(model, folder / "model.keras")
    save_vocabularies(folder / "vocab.json", task, {name: vocabs[name] for name in tasks.get(task).vocabulary_names})
    write_json(folder / "meta.json", {
        "format": FORMAT, "version": VERSION, "student_id": str(student_id), "task": task,
        "libraries": _library_versions(), "device": device or device_description(),
        "parameters": int(model.count_params()),
    })
    if predictions is not None:
        write_csv(folder / "predictions.csv", ("source", "prediction"),
                  [{"source": p["source"], "prediction": p["prediction"]} for p in predictions])
    if layer_module is not None:
        shutil.copyfile(layer_module, folder / "custom_layers.py")


def _zip(folder: Path, out: Path) -> None:
    """Zip the files of ``folder`` (flat, sorted) into ``out``, atomically."""
    partial = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, arcname=path.name)
    os.replace(partial, out)
