"""The homework's self-test: small checks of your ``KeyValueAttention``, with messages that teach.

    python -m labs selftest homework          (or, in the notebook: selftest())

Each check builds the layer from ``homework/kv_attention.py`` on small fixed inputs:

1. it returns a context (batch, T, value_dim) and weights (batch, T, S), for both scores;
2. the weights of each output step sum to 1 over the real source positions;
3. padded source positions get zero weight, and what the padding holds changes nothing;
4. with fixed weights and inputs it gives the reference numbers (``homework/selftest_reference.json``),
   for the dot score and for the additive score;
5. ``get_config`` round-trips, and a model that uses the layer saves and loads as ``.keras``.

The reference numbers are stored, not computed here, so that the self-test does not hand out
the solution.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from labs.common.paths import REPO_ROOT

REFERENCE_FILE = REPO_ROOT / "homework" / "selftest_reference.json"
LAYER_FILE = "homework/kv_attention.py"
# Fixed sizes for the checks: batch 2, T = 3 output steps, S = 5 source positions.
BATCH, STEPS, SOURCES, QUERY_DIM, MEMORY_DIM, KEY_DIM, VALUE_DIM = 2, 3, 5, 6, 8, 4, 7
LENGTHS = (5, 3)   # real source positions per example; the second has 2 padded positions
TOLERANCE = 1e-5


class SelfTestFailed(AssertionError):
    """Raised by :func:`selftest` with ``strict=True`` when a check fails."""


@dataclass
class Check:
    name: str
    passed: bool
    message: str = ""


def layer_class(reload: bool = True):
    """``KeyValueAttention`` from homework/kv_attention.py, reloaded so that your latest edits count."""
    import homework.kv_attention as module

    if reload:
        module = importlib.reload(module)
    return module.KeyValueAttention


def fixed_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    """Query (batch, T, query_dim), memory (batch, S, memory_dim) and mask (batch, S), the same every time."""
    rng = np.random.default_rng(seed)
    mask = np.arange(SOURCES)[None, :] < np.array(LENGTHS)[:, None]                   # (batch, S)
    return {"query": rng.normal(size=(BATCH, STEPS, QUERY_DIM)).astype("float32"),
            "memory": rng.normal(size=(BATCH, SOURCES, MEMORY_DIM)).astype("float32"),
            "memory_mask": mask}


def fixed_weights(score: str, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {"query_kernel": rng.normal(size=(QUERY_DIM, KEY_DIM)) / 2,
               "key_kernel": rng.normal(size=(MEMORY_DIM, KEY_DIM)) / 2,
               "value_kernel": rng.normal(size=(MEMORY_DIM, VALUE_DIM)) / 2}
    if score == "additive":
        weights["score_vector"] = rng.normal(size=(KEY_DIM,))
    return {name: value.astype("float32") for name, value in weights.items()}


def run_layer(cls, score: str, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray] | None = None):
    """Build ``cls`` with the fixed sizes, set ``weights``, call it; returns NumPy (context, attention weights)."""
    layer = cls(KEY_DIM, VALUE_DIM, score=score)
    layer.build(inputs["query"].shape, inputs["memory"].shape)
    for name, value in (weights or {}).items():
        getattr(layer, name).assign(value)
    context, attention = layer(inputs["query"], inputs["memory"], memory_mask=inputs["memory_mask"],
                               return_attention_scores=True)
    return np.asarray(context), np.asarray(attention)


def reference_outputs(cls) -> dict:
    """The numbers ``homework/selftest_reference.json`` stores, computed with ``cls`` (the instructor's solution)."""
    inputs = fixed_inputs()
    outputs = {}
    for score in ("dot", "additive"):
        context, attention = run_layer(cls, score, inputs, fixed_weights(score))
        outputs[score] = {"context": np.round(context, 6).tolist(), "weights": np.round(attention, 6).tolist()}
    return outputs


def write_reference(path: Path = REFERENCE_FILE) -> None:
    """Instructors: store the reference numbers of the solution (done once; the tests check they still match)."""
    from labs.common.files import write_json

    write_json(path, {"about": "Reference outputs of KeyValueAttention on the self-test's fixed inputs "
                               "(labs/name_transliteration/selftest.py).", **reference_outputs(layer_class())})


# ---- the checks: each returns a message when something is wrong, None when all is well ----

def _check_shapes(cls) -> str | None:
    inputs = fixed_inputs()
    for score in ("dot", "additive"):
        context, attention = run_layer(cls, score, inputs)
        expected = ((BATCH, STEPS, VALUE_DIM), (BATCH, STEPS, SOURCES))
        if (context.shape, attention.shape) != expected:
            return (f"score={score!r}: got context {context.shape} and weights {attention.shape}, expected "
                    f"{expected[0]} and {expected[1]} for batch {BATCH}, T={STEPS} output steps, S={SOURCES} "
                    f"source positions, value_dim={VALUE_DIM}. The context has one vector of size value_dim per "
                    "output step; the weights one number per (output step, source position).")
    return None


def _check_sums(cls) -> str | None:
    _, attention = run_layer(cls, "dot", fixed_inputs())
    sums = attention.sum(axis=-1)                                                     # (batch, T)
    if not np.allclose(sums, 1.0, atol=1e-4):
        return (f"the weights of an output step should sum to 1, but they sum to {np.round(sums, 3).tolist()}. "
                "Apply the softmax over the last axis (the source positions), not over the output steps.")
    return None


def _check_mask(cls) -> str | None:
    inputs = fixed_inputs()
    context, attention = run_layer(cls, "dot", inputs)
    padding_weight = float(np.abs(attention[1, :, LENGTHS[1]:]).max())
    if padding_weight > 1e-6:
        return (f"padded source positions got weight up to {padding_weight:.3f}. Before the softmax, set the "
                "scores where memory_mask is False to a large negative number (ops.where), so that they get 0.")
    noisy = dict(inputs, memory=inputs["memory"].copy())
    noisy["memory"][1, LENGTHS[1]:] = 100.0                                           # garbage in the padding
    clean, _ = run_layer(cls, "dot", inputs, fixed_weights("dot"))
    dirty, _ = run_layer(cls, "dot", noisy, fixed_weights("dot"))
    if not np.allclose(clean, dirty, atol=1e-4):
        return ("changing what the padded positions hold changed the context. Padding must get exactly zero "
                "weight: mask the scores before the softmax, not the weights after it.")
    return None


def _check_reference(cls, score: str) -> str | None:
    expected = json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))[score]
    context, attention = run_layer(cls, score, fixed_inputs(), fixed_weights(score))
    if not np.allclose(attention, expected["weights"], atol=TOLERANCE):
        hint = ("Scale the dot product by 1 / sqrt(key_dim), and score with the keys (memory @ key_kernel), "
                "not the values." if score == "dot" else
                "The additive score is score_vector . tanh(q_t + k_j): add each query to each key (broadcast "
                "q[:, :, None, :] + keys[:, None, :, :]) before the tanh.")
        worst = float(np.abs(attention - np.array(expected["weights"])).max())
        return f"score={score!r}: the weights differ from the reference by up to {worst:.4f}. {hint}"
    if not np.allclose(context, expected["context"], atol=TOLERANCE):
        worst = float(np.abs(context - np.array(expected["context"])).max())
        return (f"score={score!r}: the weights match the reference but the context differs by up to {worst:.4f}. "
                "The context is the weighted sum of the *values* (memory @ value_kernel), not of the keys "
                "or of the memory itself.")
    return None


def _check_serialization(cls) -> str | None:
    import keras

    layer = cls(KEY_DIM, VALUE_DIM, score="additive", name="kv")
    config = layer.get_config()
    copy = cls.from_config(config)
    if (copy.key_dim, copy.value_dim, copy.score) != (KEY_DIM, VALUE_DIM, "additive"):
        return "get_config() must return key_dim, value_dim and score, so that a saved model can be rebuilt."
    query = keras.Input(shape=(None, QUERY_DIM))
    memory = keras.Input(shape=(None, MEMORY_DIM))
    mask = keras.Input(shape=(None,), dtype="bool")
    model = keras.Model([query, memory, mask], layer(query, memory, memory_mask=mask))
    inputs = fixed_inputs()
    arrays = [inputs["query"], inputs["memory"], inputs["memory_mask"]]
    with tempfile.TemporaryDirectory() as folder:
        model.save(Path(folder) / "kv.keras")
        loaded = keras.saving.load_model(Path(folder) / "kv.keras", safe_mode=True)
    if not np.allclose(model.predict_on_batch(arrays), loaded.predict_on_batch(arrays), atol=1e-5):
        return "a model saved and loaded again gives different outputs; keep every weight in build() with add_weight."
    return None


CHECKS: list[tuple[str, Callable]] = [
    ("returns a context (batch, T, value_dim) and weights (batch, T, S)", _check_shapes),
    ("weights sum to 1 over the source positions", _check_sums),
    ("padding gets zero weight and changes nothing", _check_mask),
    ("dot score matches the reference numbers", lambda cls: _check_reference(cls, "dot")),
    ("additive score matches the reference numbers", lambda cls: _check_reference(cls, "additive")),
    ("get_config round-trips; a model with the layer saves and loads", _check_serialization),
]


def _message(error: BaseException) -> str:
    """The error's own message, without the call details Keras wraps around errors raised inside a layer."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).split("Arguments received by")[0]
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.startswith("Exception encountered when calling")]
    return lines[-1] if lines else type(error).__name__


def _explain(error: BaseException) -> str:
    """A student-facing account of an exception raised inside their layer: what, and where in their file."""
    if isinstance(error, NotImplementedError):
        return f"not written yet: {_message(error)}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.endswith("kv_attention.py")]
    where = f" (homework/kv_attention.py, line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    return f"{type(error).__name__}: {_message(error)}{where}"


def run_checks(cls=None) -> list[Check]:
    """Run every check on ``cls`` (default: your layer, freshly reloaded); never raises for a broken layer."""
    import keras

    if cls is None:
        try:
            cls = layer_class()
        except Exception as error:  # a syntax error or a bad import in the student's file
            return [Check("homework/kv_attention.py imports", False, _explain(error))]
    results, todo = [], None
    for name, check in CHECKS:
        if todo:   # the same unwritten TODO would fail every later check the same way
            results.append(Check(name, False, "not run until the TODO above is done"))
            continue
        keras.utils.set_random_seed(0)
        try:
            message = check(cls)
        except Exception as error:
            message, todo = _explain(error), isinstance(error, NotImplementedError)
        results.append(Check(name, message is None, message or ""))
    return results


def report(results: list[Check]) -> str:
    lines = [f"Self-test of KeyValueAttention ({LAYER_FILE})"]
    for result in results:
        lines.append(f"  {'PASS' if result.passed else 'FAIL'}  {result.name}")
        if not result.passed:
            lines.append(f"        {result.message}")
    passed = sum(r.passed for r in results)
    verdict = "all passed: train your model next." if passed == len(results) else \
        "fix the first failing check first; the later ones often follow from it."
    lines.append(f"{passed} of {len(results)} checks passed; {verdict}")
    return "\n".join(lines)


def selftest(cls=None, strict: bool = True) -> list[Check]:
    """Run the checks and print the report; with ``strict``, raise :class:`SelfTestFailed` if one fails.

    In the notebook, the raise stops "Run all" at this cell rather than training a broken layer.
    """
    results = run_checks(cls)
    print(report(results))
    failed = [r for r in results if not r.passed]
    if strict and failed:
        raise SelfTestFailed(f"{len(failed)} self-test check(s) failed; first: {failed[0].name}: {failed[0].message}")
    return results


def main() -> int:
    """``python -m labs selftest homework``: exit status 0 when every check passes, 1 otherwise."""
    results = selftest(strict=False)
    sys.stdout.flush()
    return 0 if all(r.passed for r in results) else 1
