"""The sandboxed side of grading: load one student's model and run it on the inputs it is given.

    python -m autograder.child IN_FOLDER --result-fd N

Run by :mod:`autograder.sandbox` (which see for what this process can and cannot see) with
``IN_FOLDER`` holding only ``model.keras``, ``vocab.json``, ``job.json`` and (where the rubric
allows it) ``custom_layers.py``. It never sees a hidden target. It writes its result, as JSON,
to the descriptor ``N``. The grader runs it twice: first on the public examples with no hidden input (what the
student's feedback shows), then on the hidden inputs with no example (scored); so nothing it writes in
a run a student reads held a hidden input, nor ran after one that did. The result:

- ``{"status": "ok", "outputs": ..., "examples": [...], "seconds": {...}}``, or
- ``{"status": "wrong-signature" | "load-failed" | "nan-output" | "out-of-memory" | "error",
  "message": "..."}`` (:data:`autograder.claims.CHILD_STATUSES`; the message made by :func:`_failure`).

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
import re
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from autograder.claims import strip_escapes
from autograder.status import ERROR, LOAD_FAILED, NAN_OUTPUT, OK, OUT_OF_MEMORY, WRONG_SIGNATURE

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

NO_NETWORK = "the grader's sandbox has no network, and a model must not need one; "
STUDENT_FILE = "custom_layers.py"
ERROR_LENGTH = 200  # of an error's own words in a message (the grader cuts a whole message at 300)
# Keras wraps an exception raised in a layer's call(): this first line (its layer), then, in terminal
# colours, its own account with the original message at the end, then the call's arguments.
_KERAS_CALL = re.compile(r"Exception encountered when calling (.+?)\.?$")


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it was raised from or while handling, outermost first (at most 10)."""
    chain = [error]
    while (
        len(chain) < 10
        and (inner := chain[-1].__cause__ or chain[-1].__context__) is not None
        and all(inner is not seen for seen in chain)
    ):
        chain.append(inner)
    return chain


def _why(error: BaseException) -> str:
    """Why the sandbox made ``error`` happen, where it did on purpose (a socket refused: no network), to put
    first in the message; else ''."""
    for seen in _chain(error):
        if isinstance(seen, PermissionError) and any(
            frame.filename.endswith("socket.py") for frame in traceback.extract_tb(seen.__traceback__)
        ):
            return NO_NETWORK
    return ""


def _student_line(error: BaseException) -> int | None:
    """The line of custom_layers.py where ``error`` was raised (its innermost frame there), or None."""
    lines = [
        f.lineno for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).name == STUDENT_FILE
    ]
    return lines[-1] if lines else None


def _text(error: BaseException) -> str:
    """The error's message without terminal colours ('' where even that fails: a student's exception may)."""
    try:
        return strip_escapes(str(error))
    except Exception:
        return ""


def _words(error: BaseException) -> str:
    """``Type: message`` in one line, without terminal colours or the call arguments Keras appends."""
    text = _text(error).split("Arguments received by", 1)[0]
    text = " ".join(text.split())
    if len(text) > ERROR_LENGTH:
        text = text[: ERROR_LENGTH - 1] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _describe(error: BaseException) -> str:
    """``error`` told so that a student can act on it.

    Where Keras wrapped an exception raised in a layer's ``call`` ("Exception encountered when calling ..."),
    the exception told is the student's own (the innermost one raised in custom_layers.py, else the innermost
    of all), with the layer Keras called and the line: ``KeyValueAttention.call() raised NotImplementedError:
    TODO: ... (custom_layers.py, line 85)``."""
    told, layer = error, ""
    called = _KERAS_CALL.match(_text(error).strip().split("\n", 1)[0])
    if called:
        chain = _chain(error)
        told = next((e for e in reversed(chain) if _student_line(e) is not None), chain[-1])
        layer = f"{called.group(1)} raised " if told is not error else ""
    line = _student_line(told)
    return f"{layer}{_words(told)}" + (f" ({STUDENT_FILE}, line {line})" if line else "")


class ChildError(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def _failure(status: str, what: str, error: BaseException) -> ChildError:
    """The failure to report for ``error``: why the sandbox caused it (if it did), ``what`` failed, then the
    error."""
    return ChildError(status, f"{_why(error)}{what}{_describe(error)}")


# Keras imports these at start-up when they are installed, for what a graded model never uses (pandas
# DataFrames as fit's input, matplotlib for image galleries), and copes without them: about a second of each
# sandboxed run's start (of five for `import keras`). Hidden from Keras' import only; a student's layer may
# still import them.
KERAS_EXTRAS = ("pandas", "matplotlib")


def _import_keras():
    hidden = [name for name in KERAS_EXTRAS if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden, None))
    try:
        import keras
    finally:
        for name in hidden:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]
    return keras


def _load(folder: Path, allow_custom_layers: bool):
    keras = _import_keras()

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
            raise _failure(LOAD_FAILED, f"{STUDENT_FILE} failed to import: ", error) from None
    try:
        return keras.saving.load_model(folder / "model.keras", safe_mode=True, compile=False)
    except MemoryError:
        raise
    except Exception as error:
        raise _failure(LOAD_FAILED, "Keras could not load model.keras: ", error) from None


def _vocabularies(folder: Path, task: str):
    from labs.common.errors import InputError
    from labs.common.vocab import load_vocabularies

    try:
        return load_vocabularies(folder / "vocab.json", task=task)
    except InputError as error:
        raise ChildError(LOAD_FAILED, str(error)) from None


def _probe(model, inputs, vocab_size: int, signature: str) -> None:
    """One forward pass on a tiny batch: the right signature, shape and finite probabilities."""
    try:
        outputs = model.predict_on_batch(inputs)
    except MemoryError:
        raise
    except Exception as error:
        raise _failure(WRONG_SIGNATURE, f"the model does not accept {signature}: ", error) from None
    probabilities = np.asarray(outputs[0] if isinstance(outputs, (list, tuple)) else outputs)
    expected = (*np.asarray(inputs if not isinstance(inputs, list) else inputs[1]).shape, vocab_size)
    if probabilities.shape != expected:
        raise ChildError(
            WRONG_SIGNATURE,
            f"the model returns shape {probabilities.shape} for {signature}; "
            f"expected {expected} (next-character probabilities)",
        )
    if not np.isfinite(probabilities).all():
        raise ChildError(NAN_OUTPUT, "the model outputs NaN or infinite probabilities")


def _check_finite(step):
    def checked(tokens, state):
        probabilities, state, attention = step(tokens, state)
        if not np.isfinite(probabilities).all():
            raise ChildError(NAN_OUTPUT, "the model outputs NaN or infinite probabilities while decoding")
        return probabilities, state, attention

    return checked


def _language_model(model, vocabs, job) -> dict:
    from labs.common.decoding import decode_steps, full_language_model_step
    from labs.common.errors import InputError
    from labs.common.metrics import true_token_probabilities

    vocab = vocabs["target"]
    _probe(model, np.array([[1, 4, 5]], dtype="int32"), len(vocab), "tokens (batch, T)")
    step = _check_finite(full_language_model_step(model))
    decoded = decode_steps(step, None, job["samples"], max_length=job["max_length"], seed=job["seed"])
    samples = [vocab.decode(row) for row in decoded.tokens]
    # The probability the model gives each true next character of the scored texts, each read from a run on
    # the prefix before it alone: run on a whole text at once, a model can look ahead (layers that shift the
    # next input back: Cropping1D, ZeroPadding1D) and claim the very letters it reads, while it samples the
    # same.
    inputs = vocab.encode_batch(job["score_texts"], add_start=True, unknown="unk")  # (n, T)
    targets = vocab.encode_batch(job["score_texts"], add_end=True, unknown="unk")  # (n, T)
    teacher, prefix, rows = full_language_model_step(model), None, []  # the step that samples, fed the truth
    for t in range(inputs.shape[1]):
        row, prefix, _ = teacher(inputs[:, t], prefix)  # (n, V), from inputs[:, :t + 1] alone
        rows.append(row)
    probabilities = np.stack(rows, axis=1)  # (n, T, V)
    try:  # each position a distribution, read divided by its sum (what the lab's own evaluation reads)
        picked = true_token_probabilities(probabilities, targets)  # (n, T)
    except InputError as error:
        raise ChildError(WRONG_SIGNATURE, str(error)) from None
    guesses = probabilities.argmax(axis=-1)  # the model's most likely next character (model similarity)
    return {
        "samples": samples,
        "next_token_probabilities": [row[t != 0].tolist() for row, t in zip(picked, targets)],
        "next_token_guesses": [row[t != 0].tolist() for row, t in zip(guesses, targets)],
    }


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
        batch = job["sources"][first : first + job["batch_size"]]
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
        return None  # another architecture: outputs without heatmaps


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
            weights = np.round(decoded.attention[row, : len(output) + 1, : len(source)], 4).tolist()
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
    return {
        "status": OK,
        **result,
        "seconds": {"load": round(loaded - started, 3), "predict": round(finished - loaded, 3)},
    }


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
        result, code = {"status": OUT_OF_MEMORY, "message": "the model ran out of memory"}, 3
    except Exception as error:  # a student's layer can raise anything
        result, code = {"status": ERROR, "message": str(_failure(ERROR, "", error))}, 3
    with os.fdopen(args.result_fd, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return code


if __name__ == "__main__":
    sys.exit(main())
