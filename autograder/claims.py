"""What the sandboxed child returns is a claim: check it against a strict schema before anything reads it.

Student code (the homework's ``custom_layers.py``) runs inside the child's interpreter, so it
can write whatever result it likes. Nothing here is trusted beyond its shape:

- the status comes from a fixed set, and a message is one short line of printable text;
- outputs are exactly one list per hidden input, each holding 1 to ``beam`` strings no longer
  than the task's maximum output length; samples, probabilities and next-character guesses come
  in exactly the numbers asked for, probabilities finite and between 0 and 1;
- examples are at most the few the grader asked for, each output short, its attention a finite
  matrix of the right shape (one row per output character and ``</s>``, one column per source
  character) with weights between 0 and 1.

What earns points is only what can be scored against answers the child never saw: its
predictions. The parameter count comes from the weights file (:mod:`autograder.weights`), the
architecture from the model's config (:mod:`autograder.allowlist`), the source and expected text
of examples from the grader's own copy.
"""

from __future__ import annotations

import math
import re
import unicodedata

from autograder.status import CHILD as CHILD_STATUSES
from autograder.status import ERROR
from autograder.weights import MAX_MATRICES, Matrix

MESSAGE_LENGTH = 300
_CUT_ESCAPE = re.compile(r"<(U(\+[0-9A-F]{0,6})?)?$")  # a <U+XXXX> the cut would split
MAX_VOCABULARY = 100_000
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"}
# An absolute path's folders: a "/" that no word, dot, colon or slash comes before (so not a URL's "//host/"
# nor a ratio's "1/2"), then one or more folder names, each followed by "/".
_HOST_PATH = re.compile(r"(?<![\w.:/~-])/(?:[\w.@+~-]+/)+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Terminal escape sequences, whole (Keras colours its error messages: "\x1b[1m...\x1b[0m"): CSI, OSC and the
# short escapes. Removed before the control characters, so that no "[1m" is left behind.
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)


class ClaimError(Exception):
    """The child's result does not have the shape the grader asked for."""


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, window titles)."""
    return _ESCAPE.sub("", text)


def file_name_text(name: str) -> str:
    """A file's name as text: bytes that are not UTF-8 (which Python keeps as lone surrogates, that no JSON
    file or terminal takes) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def visible(text) -> str:
    """``text`` with every character that shows nothing, or moves what is around it, written as ``<U+XXXX>``:
    bidi controls (U+202E turns a name around), zero-width and other format characters, control characters,
    private-use, unassigned and surrogate code points. What every report writes of a bundle's text."""
    return "".join(
        f"<U+{ord(c):04X}>" if unicodedata.category(c) in _HIDDEN_CATEGORIES else c for c in str(text)
    )


def without_host_paths(text: str) -> str:
    """``text`` with the folders of every absolute path cut (``/srv/kit/labs/x.py`` -> ``…/x.py``): a
    student's feedback never shows where the grader, its kit or its Python live."""
    return _HOST_PATH.sub("…/", text)


def clean_message(text, limit: int = MESSAGE_LENGTH) -> str:
    """One line of printable text, at most ``limit`` characters: terminal escapes removed, line breaks and
    tabs made spaces, other invisible characters shown as ``<U+XXXX>`` (:func:`visible`), host paths cut."""
    text = " ".join(_LINE_BREAKS.sub(" ", strip_escapes(str(text))).split())
    return shortened(visible(without_host_paths(text)), limit)


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a closing ``…``, never inside a ``<U+XXXX>`` it holds."""
    if len(text) <= limit:
        return text
    return _CUT_ESCAPE.sub("", text[: limit - 1]) + "…"


def checked_failure(status, message) -> tuple[str, str]:
    """A failure the child reported, as ``(status, message)``: an unknown status becomes ``error``."""
    if status not in CHILD_STATUSES:
        return ERROR, "the grading process returned an unknown status"
    return status, clean_message(message)


def _is_probability(value) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and -1e-6 <= value <= 1 + 1e-6
    )


def _strings(values, count: int | None, longest: int, what: str) -> list[str]:
    if not isinstance(values, list) or (count is not None and len(values) != count):
        raise ClaimError(f"{what}: expected a list of {count} texts")
    for value in values:
        if not isinstance(value, str) or len(value) > longest or _SURROGATE.search(value):
            raise ClaimError(f"{what}: each must be a text of at most {longest} characters")
    return values


def check_translation(data: dict, job: dict) -> dict:
    """``{"outputs": [[best, ...], ...], "examples": [{"output", "attention"}, ...]}`` from a translation
    child."""
    longest, sources = job["max_length"], job["sources"]
    outputs = data.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(sources):
        raise ClaimError(f"outputs: expected one list per hidden input ({len(sources)})")
    for candidates in outputs:
        if not isinstance(candidates, list) or not 1 <= len(candidates) <= job["beam"]:
            raise ClaimError(f"outputs: each input needs 1 to {job['beam']} candidate outputs")
        _strings(candidates, None, longest, "outputs")
    examples = data.get("examples", [])
    if not isinstance(examples, list) or len(examples) > len(job.get("examples", [])):
        raise ClaimError(f"examples: at most {len(job.get('examples', []))} were asked for")
    checked = []
    for example, source in zip(examples, job.get("examples", [])):
        if not isinstance(example, dict):
            raise ClaimError("examples: each must be an object")
        output = _strings([example.get("output")], 1, longest, "examples")[0]
        checked.append({"output": output, "attention": _attention(example.get("attention"), output, source)})
    return {"outputs": outputs, "examples": checked}


def _attention(weights, output: str, source: str) -> list[list[float]] | None:
    """A finite matrix of at most ``len(output) + 1`` rows of ``len(source)`` weights in [0, 1], or None."""
    if weights is None:
        return None
    if not isinstance(weights, list) or not 1 <= len(weights) <= len(output) + 1:
        raise ClaimError("examples: attention must have one row per output character and </s>")
    for row in weights:
        if not isinstance(row, list) or len(row) != len(source) or not all(map(_is_probability, row)):
            raise ClaimError(
                "examples: each attention row must hold one weight in [0, 1] per source character"
            )
    return weights


def check_language_model(data: dict, job: dict) -> dict:
    """``{"samples": [...], "next_token_probabilities": [[...], ...]}`` from a language-model child."""
    samples = _strings(data.get("samples"), job["samples"], job["max_length"], "samples")
    rows = data.get("next_token_probabilities")
    texts = job["score_texts"]
    if not isinstance(rows, list) or len(rows) != len(texts):
        raise ClaimError(f"next_token_probabilities: expected one row per scored text ({len(texts)})")
    for row, text in zip(rows, texts):
        if not isinstance(row, list) or len(row) != len(text) + 1 or not all(map(_is_probability, row)):
            raise ClaimError(
                "next_token_probabilities: each row needs one probability in [0, 1] per character and </s>"
            )
    guesses = data.get("next_token_guesses")
    if not isinstance(guesses, list) or len(guesses) != len(texts):
        raise ClaimError(f"next_token_guesses: expected one row per scored text ({len(texts)})")
    for row, text in zip(guesses, texts):
        if (
            not isinstance(row, list)
            or len(row) != len(text) + 1
            or not all(
                isinstance(g, int) and not isinstance(g, bool) and 0 <= g < MAX_VOCABULARY for g in row
            )
        ):
            raise ClaimError("next_token_guesses: each row needs one token id per character and </s>")
    return {"samples": samples, "next_token_probabilities": rows, "next_token_guesses": guesses}


def check_weights(answer) -> dict:
    """The weights reader's answer (:mod:`autograder.weights`) with every part that is not of the expected
    shape left out: ``{"parameters": int or None, "fingerprint": 64 hex digits or None, "matrices":
    [Matrix]}``.

    Each matrix kept is a :class:`autograder.weights.Matrix` that :meth:`~autograder.weights.Matrix.from_json`
    accepts: two to eight positive dimensions, at most ``MAX_READ`` values in all, and, for that shape, the
    number of finite values the reader keeps in each part (sample, block, row and column profiles). One matrix
    out of shape and none is kept."""
    answer = answer if isinstance(answer, dict) else {}
    count = answer.get("parameters")
    parameters = (
        count if isinstance(count, int) and not isinstance(count, bool) and 0 <= count < 2**63 else None
    )
    digest = answer.get("fingerprint")
    fingerprint = digest if isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest) else None
    listed = answer.get("matrices")
    matrices = [Matrix.from_json(item) for item in listed[:MAX_MATRICES]] if isinstance(listed, list) else []
    return {
        "parameters": parameters,
        "fingerprint": fingerprint,
        "matrices": [] if None in matrices else matrices,
    }


def reported_seconds(data: dict) -> dict | None:
    """The child's own timing ``{"load": s, "predict": s}`` when it is two finite numbers (for reports
    only)."""
    seconds = data.get("seconds")
    if (
        isinstance(seconds, dict)
        and set(seconds) == {"load", "predict"}
        and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v < 1e6
            for v in seconds.values()
        )
    ):
        return {key: float(value) for key, value in seconds.items()}
    return None


CHECKS = {"translation": check_translation, "language-model": check_language_model}
