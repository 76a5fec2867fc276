"""The sandboxed side of grading: load one student's model and run it on the inputs it is given.

    python -m autograder.child IN_FOLDER --result-fd N

Run by :mod:`autograder.sandbox` (which see for what this process can and cannot see) with
``IN_FOLDER`` holding only ``model.keras``, ``vocab.json``, ``job.json`` and (where the rubric
allows it) ``custom_layers.py``. It never sees a hidden target. It writes its result, as JSON,
to the descriptor ``N``:

- ``{"status": "ok", "outputs": ..., "examples": [...], "seconds": {...}}``, or
- ``{"status": "wrong-signature" | "load-failed" | "nan-output" | "out-of-memory" | "error",
  "message": "..."}``.

Student code runs in this process, so the grader treats all of it as a claim
(:mod:`autograder.claims`): only predictions scored against answers this process never saw earn
points. Decoding drives the model only through its signature (see
:func:`labs.common.decoding.full_model_step`), so any model that meets the contract is graded the
same way, whatever is inside it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FAILURE_STATUSES = ("wrong-signature", "load-failed", "nan-output", "out-of-memory", "error")


NO_NETWORK = "the grader's sandbox has no network, and a model must not need one; "


def _why(error: BaseException) -> str:
    """Why the sandbox made ``error`` happen, where it did on purpose (a socket refused: no network), to put
    first in the message; else ''."""
    seen, depth = error, 0
    while seen is not None and depth < 10:
        if isinstance(seen, PermissionError) and any(frame.filename.endswith("socket.py")
                                                     for frame in traceback.extract_tb(seen.__traceback__)):
            return NO_NETWORK
        seen, depth = seen.__cause__ or seen.__context__, depth + 1
    return ""


class ChildError(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def _load(folder: Path, allow_custom_layers: bool):
    import keras

    if allow_custom_layers and (folder / "custom_layers.py").is_file():
        # The instructor's solution (homework/kv_attention.py) is outside the sandbox's view; this
        # also stops a plain import of it where the grader runs without isolation.
        sys.modules["homework"] = None
        spec = importlib.util.spec_from_file_location("custom_layers", folder / "custom_layers.py")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except MemoryError:
            raise
        except Exception as error:
            raise ChildError("load-failed", f"{_why(error)}custom_layers.py failed to import: "
                                            f"{type(error).__name__}: {error}")
    try:
        return keras.saving.load_model(folder / "model.keras", safe_mode=True, compile=False)
    except MemoryError:
        raise
    except Exception as error:
        raise ChildError("load-failed", f"{_why(error)}Keras could not load model.keras: {type(error).__name__}: "
                                        f"{str(error)[:500]}")


def _vocabularies(folder: Path, task: str):
    from labs.common.errors import InputError
    from labs.common.vocab import load_vocabularies

    try:
        return load_vocabularies(folder / "vocab.json", task=task)
    except InputError as error:
        raise ChildError("load-failed", str(error))


def _probe(model, inputs, vocab_size: int, signature: str) -> None:
    """One forward pass on a tiny batch: the right signature, shape and finite probabilities."""
    try:
        outputs = model.predict_on_batch(inputs)
    except MemoryError:
        raise
    except Exception as error:
        raise ChildError("wrong-signature", f"{_why(error)}the model does not accept {signature}: "
                                            f"{type(error).__name__}: {str(error)[:300]}")
    probabilities = np.asarray(outputs[0] if isinstance(outputs, (list, tuple)) else outputs)
    expected = (*np.asarray(inputs if not isinstance(inputs, list) else inputs[1]).shape, vocab_size)
    if probabilities.shape != expected:
        raise ChildError("wrong-signature", f"the model returns shape {probabilities.shape} for {signature}; "
                                            f"expected {expected} (next-character probabilities)")
    if not np.isfinite(probabilities).all():
        raise ChildError("nan-output", "the model outputs NaN or infinite probabilities")


def _check_finite(step):
    def checked(tokens, state):
        probabilities, state, attention = step(tokens, state)
        if not np.isfinite(probabilities).all():
            raise ChildError("nan-output", "the model outputs NaN or infinite probabilities while decoding")
        return probabilities, state, attention
    return checked


def _language_model(model, vocabs, job) -> dict:
    from labs.common.decoding import decode_steps, full_language_model_step

    vocab = vocabs["target"]
    _probe(model, np.array([[1, 4, 5]], dtype="int32"), len(vocab), "tokens (batch, T)")
    step = _check_finite(full_language_model_step(model))
    decoded = decode_steps(step, None, job["samples"], max_length=job["max_length"], seed=job["seed"])
    samples = [vocab.decode(row) for row in decoded.tokens]
    # The probability the model gives each true next character of the scored texts.
    inputs = vocab.encode_batch(job["score_texts"], add_start=True, unknown="unk")      # (n, T)
    targets = vocab.encode_batch(job["score_texts"], add_end=True, unknown="unk")       # (n, T)
    probabilities = np.asarray(model.predict_on_batch(inputs))                          # (n, T, V)
    picked = np.take_along_axis(probabilities, targets[..., None], axis=-1)[..., 0]
    guesses = probabilities.argmax(axis=-1)     # the model's most likely next character (model similarity)
    return {"samples": samples, "next_token_probabilities": [row[t != 0].tolist() for row, t in zip(picked, targets)],
            "next_token_guesses": [row[t != 0].tolist() for row, t in zip(guesses, targets)]}


def _translator(model, vocabs, job) -> dict:
    from labs.common.decoding import beam_search, decode_steps, full_model_step

    source_vocab, target_vocab = vocabs["source"], vocabs["target"]
    probe = np.array([[4, 5, 6]], dtype="int32"), np.array([[1, 4]], dtype="int32")
    _probe(model, list(probe), len(target_vocab), "[source (batch, S), target_in (batch, T)]")

    def decode(texts: list[str], viewed_model):
        step, state = full_model_step(viewed_model, source_vocab.encode_batch(texts, unknown="unk"))
        step = _check_finite(step)
        if job["beam"] > 1:
            return beam_search(step, state, len(texts), beam_width=job["beam"], max_length=job["max_length"])
        return [decode_steps(step, state, len(texts), max_length=job["max_length"], greedy=True)]

    outputs = []
    for first in range(0, len(job["sources"]), job["batch_size"]):
        batch = job["sources"][first:first + job["batch_size"]]
        ranked = decode(batch, model)
        outputs += [[target_vocab.decode(r.tokens[row]) for r in ranked] for row in range(len(batch))]
    return {"outputs": outputs, "examples": _examples(model, job, decode, target_vocab)}


def _attention_view(model, job):
    """The model with its attention weights as a second output (the task's view), or None."""
    if not job.get("attention_view"):
        return None
    module, _, function = job["attention_view"].partition(":")
    try:
        return getattr(importlib.import_module(module), function)(model)
    except Exception:
        return None   # another architecture: outputs without heatmaps


def _examples(model, job, decode, target_vocab) -> list[dict]:
    """Public examples decoded with their attention weights, when the model has the kit's layer names."""
    if not job.get("examples"):
        return []
    viewed = _attention_view(model, job)
    decoded = decode(job["examples"], viewed or model)[0]
    examples = []
    for row, source in enumerate(job["examples"]):
        output = target_vocab.decode(decoded.tokens[row])
        weights = None
        if viewed is not None and decoded.attention is not None:
            weights = np.round(decoded.attention[row, :len(output) + 1, :len(source)], 4).tolist()
        examples.append({"source": source, "output": output, "attention": weights})
    return examples


def run(folder: Path) -> dict:
    job = json.loads((folder / "job.json").read_text(encoding="utf-8"))
    started = time.perf_counter()
    model = _load(folder, job.get("allow_custom_layers", False))
    loaded = time.perf_counter()
    vocabs = _vocabularies(folder, job["task"])
    work = _language_model if job["signature"] == "language-model" else _translator
    result = work(model, vocabs, job)
    finished = time.perf_counter()
    return {"status": "ok", **result,
            "seconds": {"load": round(loaded - started, 3), "predict": round(finished - loaded, 3)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.child")
    parser.add_argument("folder")
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        result = run(Path(args.folder))
        code = 0
    except ChildError as error:
        result, code = {"status": error.status, "message": str(error)}, 3
    except MemoryError:
        result, code = {"status": "out-of-memory", "message": "the model ran out of memory"}, 3
    except Exception as error:  # a student's layer can raise anything
        frames = traceback.extract_tb(error.__traceback__)
        where = next((f"custom_layers.py, line {f.lineno}" for f in reversed(frames)
                      if f.filename.endswith("custom_layers.py")), "")
        result = {"status": "error", "message": f"{_why(error)}{type(error).__name__}: {str(error)[:500]}"
                                                + (f" ({where})" if where else "")}
        code = 3
    with os.fdopen(args.result_fd, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return code


if __name__ == "__main__":
    sys.exit(main())
