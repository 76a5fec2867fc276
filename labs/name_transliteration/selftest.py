"""The homework's self-test: your ``KeyValueAttention`` run the ways the grader and the trainer will run it.

    python -m labs selftest homework          (or, in the notebook: selftest())

Each check builds the layer from ``homework/kv_attention.py`` on small fixed inputs (batch 2,
T = 3 output steps, S = 5 source positions; every size is different, so a shape names its axes):

1. the file keeps to the grader's import rules (the grader's own audit: a refused import is
   known now, not after training);
2. it returns a context (batch, T, value_dim) and weights (batch, T, S), for both scores;
3. the weights of each output step sum to 1 over the real source positions;
4. each output step and each source position is handled on its own (moving them moves their
   results, nothing else);
5. padded source positions get zero weight, and what the padding holds changes nothing;
6. with fixed weights and inputs it gives the reference numbers (``homework/selftest_reference.json``),
   for the dot score and for the additive score;
7. it works at batch 1, at one output step and at one source position;
8. two calls with different inputs give independent results (nothing kept between calls);
9. it works in graph mode (``tf.function``, unknown batch and lengths), as Keras trains it;
10. it works under mixed precision (``mixed_float16``), as the notebook trains it on a GPU;
11. ``get_config`` round-trips, and a model that uses the layer saves and loads as ``.keras``.

A failure names the property, shows what was expected against what the layer gave, and points
at the line of your file where it went wrong when one can be found. The hints describe the
mistake and the formula, not the code to type. The reference numbers are stored, not computed
here, so that the self-test does not hand out the solution.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import re
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from labs.common.paths import REPO_ROOT

REFERENCE_FILE = REPO_ROOT / "homework" / "selftest_reference.json"
LAYER_FILE = "homework/kv_attention.py"
# Fixed sizes for the checks: all different, so that a shape in a message says which axis is which.
BATCH, STEPS, SOURCES, QUERY_DIM, MEMORY_DIM, KEY_DIM, VALUE_DIM = 2, 3, 5, 6, 8, 4, 7
AXES = {
    BATCH: "batch",
    STEPS: "T",
    SOURCES: "S",
    QUERY_DIM: "query_dim",
    MEMORY_DIM: "memory_dim",
    KEY_DIM: "key_dim",
    VALUE_DIM: "value_dim",
}
LENGTHS = (5, 3)  # real source positions per example; the second has 2 padded positions
TOLERANCE = 1e-5
HALF_TOLERANCE = 2e-2  # float16 keeps about three significant digits


class SelfTestFailed(AssertionError):
    """Raised by :func:`selftest` with ``strict=True`` when a check fails."""

    def _render_traceback_(self) -> list[str]:
        """In a notebook (IPython), one line: the report above the error already says everything."""
        return [
            f"SelfTestFailed: {self.args[0].split(';')[0]} (the report above says what and where). Fix the "
            "first failing check, save homework/kv_attention.py and run this cell again."
        ]


@dataclass
class Check:
    name: str
    passed: bool
    message: str = ""
    ran: bool = True  # False: not run, because an earlier failure (a TODO, an import) stops every check


def layer_class(reload: bool = True):
    """``KeyValueAttention`` from homework/kv_attention.py, reloaded so that your latest edits count."""
    import homework.kv_attention as module

    if reload:
        module = importlib.reload(module)
    return module.KeyValueAttention


def layer_class_from(path: str | Path):
    """``KeyValueAttention`` from the file at ``path`` (another copy of the layer module)."""
    spec = importlib.util.spec_from_file_location("checked_kv_attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KeyValueAttention


def fixed_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    """Query (batch, T, query_dim), memory (batch, S, memory_dim) and mask (batch, S), the same every time."""
    rng = np.random.default_rng(seed)
    mask = np.arange(SOURCES)[None, :] < np.array(LENGTHS)[:, None]  # (batch, S)
    return {
        "query": rng.normal(size=(BATCH, STEPS, QUERY_DIM)).astype("float32"),
        "memory": rng.normal(size=(BATCH, SOURCES, MEMORY_DIM)).astype("float32"),
        "memory_mask": mask,
    }


def fixed_weights(score: str, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {
        "query_kernel": rng.normal(size=(QUERY_DIM, KEY_DIM)) / 2,
        "key_kernel": rng.normal(size=(MEMORY_DIM, KEY_DIM)) / 2,
        "value_kernel": rng.normal(size=(MEMORY_DIM, VALUE_DIM)) / 2,
    }
    if score == "additive":
        weights["score_vector"] = rng.normal(size=(KEY_DIM,))
    return {name: value.astype("float32") for name, value in weights.items()}


def built_layer(cls, score: str, weights: dict[str, np.ndarray] | None = None):
    """``cls`` built for the fixed sizes, with ``weights`` set."""
    layer = cls(KEY_DIM, VALUE_DIM, score=score)
    layer.build((BATCH, STEPS, QUERY_DIM), (BATCH, SOURCES, MEMORY_DIM))
    for name, value in (weights or {}).items():
        getattr(layer, name).assign(value)
    return layer


def call_layer(layer, inputs: dict[str, np.ndarray]):
    """Call a built layer; returns NumPy (context, attention weights)."""
    context, attention = layer(
        inputs["query"], inputs["memory"], memory_mask=inputs["memory_mask"], return_attention_scores=True
    )
    return np.asarray(context), np.asarray(attention)


def run_layer(cls, score: str, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray] | None = None):
    """Build ``cls`` with the fixed sizes, set ``weights``, call it; returns NumPy (context, attention
    weights)."""
    return call_layer(built_layer(cls, score, weights), inputs)


def reference_outputs(cls) -> dict:
    """The numbers ``homework/selftest_reference.json`` stores, computed with ``cls`` (the instructor's
    solution)."""
    inputs = fixed_inputs()
    outputs = {}
    for score in ("dot", "additive"):
        context, attention = run_layer(cls, score, inputs, fixed_weights(score))
        outputs[score] = {
            "context": np.round(context, 6).tolist(),
            "weights": np.round(attention, 6).tolist(),
        }
    return outputs


def write_reference(path: Path = REFERENCE_FILE) -> None:
    """Instructors: store the reference numbers of the solution (done once; the tests check they still
    match)."""
    from labs.common.files import write_json

    write_json(
        path,
        {
            "about": "Reference outputs of KeyValueAttention on the self-test's fixed inputs "
            "(labs/name_transliteration/selftest.py).",
            **reference_outputs(layer_class()),
        },
    )


def _reference(score: str) -> dict[str, np.ndarray]:
    stored = json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))[score]
    return {"context": np.array(stored["context"]), "weights": np.array(stored["weights"])}


# ---- saying where and what: shapes by their axes' names, lines of the student's file ----


def shape_names(shape) -> str:
    """``(2, 3, 5)`` as ``"(2, 3, 5) = (batch, T, S)"``, when every size is one of the fixed sizes."""
    shape = tuple(int(n) for n in shape)
    text = f"({', '.join(map(str, shape))})"
    if len(shape) >= 3 and all(
        n in AXES for n in shape
    ):  # a 2-D shape may be a flattened one (batch * T, ...)
        return f"{text} = ({', '.join(AXES[n] for n in shape)})"
    return text


def _name_shapes(text: str) -> str:
    """Every ``[2,3,6]`` or ``(2, 3, 6)`` in a framework message followed by its axes' names."""

    def named(match: re.Match) -> str:
        sizes = [int(n) for n in re.findall(r"\d+", match.group(0))]
        return shape_names(sizes) if len(sizes) >= 3 and all(n in AXES for n in sizes) else match.group(0)

    return re.sub(r"[\[(]\d+(?:,\s*\d+)+[\])]", named, text)


def _source_path(cls) -> Path | None:
    """The file that defines ``cls`` (found through its ``call``: a module loaded from a path may not be in
    sys.modules)."""
    for thing in (cls, getattr(cls, "call", None)):
        with contextlib.suppress(TypeError, OSError):
            if inspect.getsourcefile(thing):
                return Path(inspect.getsourcefile(thing))
    return None


def _call_lines(cls, method: str = "call") -> list[tuple[int, str]]:
    """``(line number, code)`` of each line of ``cls.call`` (or another method) that is code, not a
    comment."""
    try:
        lines, first = inspect.getsourcelines(getattr(cls, method))
    except (TypeError, OSError):
        return []
    code = [(first + i, line.split("#")[0].rstrip()) for i, line in enumerate(lines)]
    return [
        (number, text.strip())
        for number, text in code
        if text.strip() and not text.strip().startswith("def ")
    ]


def _line(cls, *patterns: str, method: str = "call") -> str:
    """`` Look at line N: `code`.`` for the first line of ``call`` (or ``method``) that matches a pattern,
    else ``""``."""
    for pattern in patterns:
        for number, text in _call_lines(cls, method):
            if re.search(pattern, text):
                return f" Look at {LAYER_FILE}, line {number}: `{text}`."
    return ""


# What lines to point at, by kind of mistake (the first pattern that matches a line of call() wins).
FIXED_SIZES = (r"repeat\(", r"tile\(", r"broadcast_to\(", r"reshape\(", r"zeros\(", r"ones\(")
MIXERS = (r"reshape", r"transpose", r"\.T\b")  # what can mix source positions
STEP_MIXERS = (r"reshape", r"sum\(", r"mean\(")  # ... or output steps
SCALING = (r"sqrt", r"key_dim", r"\*\*\s*0?\.5", r"/")
CONTEXT = (r"weights?\b.*values?", r"value")
SQUEEZERS = (r"squeeze", r"reshape", r"\[\s*0\s*\]")
TRACE_TIME = (r"\bif\b", r"shape")  # Python decisions made when a graph is traced
MASKING = (r"where\(", r"=.*mask", r"mask")


def _rows(values: np.ndarray, digits: int = 3) -> str:
    return str(np.round(np.asarray(values, dtype="float64"), digits).tolist())


# ---- the checks: each returns a message when something is wrong, None when all is well ----


def _check_imports(cls) -> str | None:
    from labs.common.layer_audit import audit_module

    path = _source_path(cls)
    if path is None or not path.is_file():
        return None
    audit = audit_module(path.read_bytes(), name=LAYER_FILE)
    if audit.allowed:
        return None
    return (
        f"{audit.message}. The grader refuses such a file before it runs, so a model trained with it "
        "scores 0. Everything the layer needs is in keras.ops (matmul, transpose, softmax, where, tanh, ...)."
    )


def _check_shapes(cls) -> str | None:
    inputs = fixed_inputs()
    for score in ("dot", "additive"):
        try:
            context, attention = run_layer(cls, score, inputs)
        except Exception as error:
            if is_todo(error):
                raise
            return f"score={score!r}: {_explain(error, cls)}"
        expected = ((BATCH, STEPS, VALUE_DIM), (BATCH, STEPS, SOURCES))
        if (context.shape, attention.shape) != expected:
            return (
                f"score={score!r}: expected context {shape_names(expected[0])} and weights "
                f"{shape_names(expected[1])}; got context {shape_names(context.shape)} and weights "
                f"{shape_names(attention.shape)}. The context holds one vector of size value_dim per output "
                "step; the weights one number per (output step, source position)."
            )
    return None


def _check_sums(cls) -> str | None:
    _, a = run_layer(cls, "dot", fixed_inputs())  # (batch, T, S)
    sums = a.sum(axis=-1)  # (batch, T)
    if np.allclose(sums, 1.0, atol=1e-4):
        return None
    got = f"Expected each output step's weights to sum to 1 over S; got sums {_rows(sums)}."
    softmax = _line(cls, r"softmax") or " No line of call() applies a softmax."
    if a.min() < -1e-6 or a.max() > 1 + 1e-6:
        return (
            f"{got} Some weights are outside [0, 1] (from {a.min():.3f} to {a.max():.3f}): these are raw "
            f"scores, "
            "not weights. The softmax turns the scores e_t of an output step into weights a_t that are "
            f"positive and sum to 1 over the source positions.{softmax}"
        )
    if np.allclose(a.sum(axis=1), 1.0, atol=1e-4):
        return (
            f"{got} They sum to 1 over the output steps (axis 1, T) instead: the softmax normalises the "
            f"wrong axis. a_t = softmax_j(e_tj) runs over j, the source positions, the last axis.{softmax}"
        )
    if np.allclose(a.sum(axis=0), 1.0, atol=1e-4):
        return (
            f"{got} They sum to 1 over the batch (axis 0) instead: the softmax normalises the wrong axis. "
            f"a_t = softmax_j(e_tj) runs over j, the source positions, the last axis.{softmax}"
        )
    unpadded, padded = sums[0], sums[1]
    if (
        np.allclose(unpadded, 1.0, atol=1e-4)
        and np.all(padded < 1 - 1e-4)
        and np.abs(a[1, :, LENGTHS[1] :]).max() < 1e-6
    ):
        return (
            f"{got} The example without padding sums to 1, the padded one to less: the padded positions' "
            "weights were set to 0 *after* the softmax, so the rest no longer sums to 1. Mask the scores "
            f"before the softmax, so that it spreads the whole weight over the real "
            f"positions.{_line(cls, *MASKING)}"
        )
    return f"{got} Apply the softmax to the scores over the last axis (the source positions).{softmax}"


def _check_positions(cls) -> str | None:
    """Attention treats each (t, j) on its own: moving source positions or output steps moves their
    results."""
    inputs = dict(fixed_inputs(), memory_mask=np.ones((BATCH, SOURCES), bool))  # no padding here
    for score in ("dot", "additive"):
        layer = built_layer(cls, score, fixed_weights(score))
        context, a = call_layer(layer, inputs)
        order = np.array([3, 0, 4, 1, 2])  # a new order of the S positions
        moved_context, moved_a = call_layer(layer, dict(inputs, memory=inputs["memory"][:, order]))
        if not (
            np.allclose(moved_a, a[:, :, order], atol=1e-4) and np.allclose(moved_context, context, atol=1e-4)
        ):
            b, t, _ = np.unravel_index(np.abs(moved_a - a[:, :, order]).argmax(), a.shape)
            return (
                f"score={score!r}: the source positions were put in another order (j -> {order.tolist()}). "
                f"Expected the weights to move with them and the context to stay; got weights that changed "
                f"otherwise (example {b + 1}, step {t + 1}: {_rows(moved_a[b, t])}, expected "
                f"{_rows(a[b, t, order])}; the context changed by up to "
                f"{np.abs(moved_context - context).max():.3f}). The score of "
                "position j depends only on q_t and k_j, so something mixes source positions: a reshape, for "
                "one, keeps the numbers in memory order; swapping two axes is a transpose."
                f"{_line(cls, *MIXERS)}"
            )
        steps = np.array([2, 0, 1])
        moved_context, moved_a = call_layer(layer, dict(inputs, query=inputs["query"][:, steps]))
        if not (
            np.allclose(moved_a, a[:, steps], atol=1e-4)
            and np.allclose(moved_context, context[:, steps], atol=1e-4)
        ):
            return (
                f"score={score!r}: the output steps' queries were put in another order (t -> "
                f"{steps.tolist()}). "
                "Expected their weights and contexts to move with them; got other numbers. Each output step "
                "t "
                "has its own query q_t and its own weights a_t: nothing mixes the steps."
                f"{_line(cls, *STEP_MIXERS)}"
            )
    return None


def _check_mask(cls) -> str | None:
    inputs = fixed_inputs()
    _, a = run_layer(cls, "dot", inputs)
    padding_weight = float(np.abs(a[1, :, LENGTHS[1] :]).max())
    if padding_weight > 1e-6:
        return (
            f"expected weight 0 at the padded source positions (the second example's last "
            f"{SOURCES - LENGTHS[1]}); got up to {padding_weight:.3f}. A padded position must get no weight "
            f"at "
            "all: before the softmax, give its score a value so negative that its exp() is 0. memory_mask is "
            "(batch, S) and the scores (batch, T, S): the same mask holds for every output step."
            f"{_line(cls, *MASKING) or ' No line of call() uses memory_mask.'}"
        )
    noisy = dict(inputs, memory=inputs["memory"].copy())
    noisy["memory"][1, LENGTHS[1] :] = 100.0  # garbage in the padding
    clean, _ = run_layer(cls, "dot", inputs, fixed_weights("dot"))
    dirty, _ = run_layer(cls, "dot", noisy, fixed_weights("dot"))
    if not np.allclose(clean, dirty, atol=1e-4):
        worst = float(np.abs(clean - dirty).max())
        return (
            f"changing what the padded positions hold changed the context by up to {worst:.3f} (expected no "
            "change). Padding must weigh exactly 0: mask the scores before the softmax, not the weights "
            "after "
            f"it, and take the context from the weights.{_line(cls, *MASKING)}"
        )
    try:  # memory_mask is optional: None means every position is real
        _, unmasked = call_layer(built_layer(cls, "dot"), dict(inputs, memory_mask=None))
    except Exception as error:
        return (
            f"memory_mask is optional (None: every source position is real), but called without one the "
            f"layer "
            f"failed: {_explain(error, cls)}"
        )
    if unmasked.shape != (BATCH, STEPS, SOURCES) or not np.allclose(unmasked.sum(-1), 1.0, atol=1e-4):
        return (
            f"called without memory_mask (None: every source position is real), expected weights "
            f"{shape_names((BATCH, STEPS, SOURCES))} that sum to 1 over S; got {shape_names(unmasked.shape)} "
            f"summing to {_rows(unmasked.sum(-1).reshape(-1)[:3])} ...{_line(cls, *MASKING)}"
        )
    return None


def _scale_of(got: np.ndarray, expected: np.ndarray) -> float | None:
    """``k`` when the got weights are the softmax of ``k`` times the expected scores, else None.

    The log of a softmax is the score minus a constant per row, so per row (over the real
    positions) ``log a_got - mean = k (log a_expected - mean)``.
    """
    mask = np.arange(SOURCES)[None, None, :] < np.array(LENGTHS)[:, None, None]
    mask = np.broadcast_to(mask, got.shape)
    if np.any(got[mask] <= 0) or np.any(expected[mask] <= 0):
        return None
    scales = []
    for b in range(BATCH):
        for t in range(STEPS):
            real = mask[b, t]
            x, y = np.log(expected[b, t, real]), np.log(got[b, t, real])
            x, y = x - x.mean(), y - y.mean()
            if float(x @ x) < 1e-8:
                continue
            scale = float(x @ y / (x @ x))
            if np.abs(y - scale * x).max() > 1e-3:
                return None
            scales.append(scale)
    return float(np.mean(scales)) if scales and np.ptp(scales) < 1e-2 else None


def _check_reference(cls, score: str) -> str | None:
    expected = _reference(score)
    context, a = run_layer(cls, score, fixed_inputs(), fixed_weights(score))
    if not np.allclose(a, expected["weights"], atol=TOLERANCE):
        b, t, _ = np.unravel_index(np.abs(a - expected["weights"]).argmax(), a.shape)  # the worst row
        got = (
            f"score={score!r}: expected the weights {_rows(expected['weights'][b, t])} for example {b + 1}, "
            f"output "
            f"step {t + 1}; got {_rows(a[b, t])} (off by up to {np.abs(a - expected['weights']).max():.4f})."
        )
        scale = _scale_of(a, expected["weights"])
        if scale is not None and not 0.97 < scale < 1.03:
            should = (
                f"e_tj = q_t . k_j / sqrt(key_dim) divides by sqrt(key_dim) = {KEY_DIM**0.5:g}"
                if score == "dot"
                else "the additive score e_tj = w . tanh(q_t + k_j) is not scaled at all"
            )
            return (
                f"{got} Your scores are {scale:.2f} times the reference's, in every row: the scale is off; "
                f"{should}."
                f"{_line(cls, *SCALING)}"
            )
        if score == "dot":
            return (
                f"{got} The scores differ in more than scale. e_tj = q_t . k_j / sqrt(key_dim), with the "
                f"query "
                "projected by W_q (query_kernel) and the keys made from the memory by W_k (key_kernel): "
                "check "
                f"which kernel makes what, and that the keys (not the values) are "
                f"scored.{_line(cls, r'matmul')}"
            )
        return (
            f"{got} The additive score is e_tj = w . tanh(q_t + k_j): every query added to every key, "
            "(batch, T, 1, key_dim) + (batch, 1, S, key_dim) -> (batch, T, S, key_dim), the tanh, then the "
            "dot "
            f"product with w (score_vector) over key_dim.{_line(cls, r'tanh', r'score_vector')}"
        )
    if not np.allclose(context, expected["context"], atol=TOLERANCE):
        worst = float(np.abs(context - expected["context"]).max())
        b, t, _ = np.unravel_index(np.abs(context - expected["context"]).argmax(), context.shape)
        return (
            f"score={score!r}: the weights match the reference but the context is off by up to {worst:.4f} "
            f"(expected {_rows(expected['context'][b, t])} for example {b + 1}, output step {t + 1}; got "
            f"{_rows(context[b, t])}). "
            "The context c_t = sum_j a_tj v_j is the weighted sum of the *values* (memory @ value_kernel), "
            f"not of the keys or of the memory itself.{_line(cls, *CONTEXT)}"
        )
    return None


def _for_each_score(check: Callable) -> Callable:
    """A check of ``(cls, score)`` run for the dot and the additive score; the first message, naming its
    score."""

    def both(cls) -> str | None:
        for score in ("dot", "additive"):
            message = check(cls, score)
            if message:
                return f"score={score!r}: {message}"
        return None

    return both


def _check_small_sizes(cls, score: str) -> str | None:
    inputs, weights = fixed_inputs(), fixed_weights(score)
    layer = built_layer(cls, score, weights)
    context, a = call_layer(layer, inputs)
    cases = {"batch 1": (np.s_[:1], np.s_[:1]), "one output step (T = 1)": (np.s_[:, :1], np.s_[:])}
    for what, (query_part, memory_part) in cases.items():
        part = {
            "query": inputs["query"][query_part],
            "memory": inputs["memory"][memory_part],
            "memory_mask": inputs["memory_mask"][memory_part],
        }
        got_context, got_a = call_layer(layer, part)
        expected = (a[query_part].shape, context[query_part].shape)
        if (got_a.shape, got_context.shape) != expected:
            shapes = (
                f"at {what}, expected weights {expected[0]} and context {expected[1]}; got {got_a.shape} and "
            )
            if got_a.ndim < len(expected[0]) or got_context.ndim < len(expected[1]):
                return (
                    f"{shapes}{got_context.shape}: a size-1 axis was lost. A squeeze without an axis drops "
                    "every axis of size 1, the batch's and T's too; name the axis, or do without."
                    f"{_line(cls, *SQUEEZERS)}"
                )
            return (  # as many axes, other sizes: a size written into the code, not read from the input
                f"{shapes}{got_context.shape}: the outputs do not follow the input's sizes. A size written "
                "into call() (a number, or a shape kept from another input) holds for one input only; let "
                "every size come from the tensors themselves (broadcasting, or ops.shape(x))."
                f"{_line(cls, *FIXED_SIZES)}"
            )
        if not (
            np.allclose(got_a, a[query_part], atol=1e-4)
            and np.allclose(got_context, context[query_part], atol=1e-4)
        ):
            return (
                f"at {what}, expected the same numbers as for that part of the full batch; got others "
                f"(weights {_rows(got_a.reshape(-1)[:5])} ..., expected "
                f"{_rows(a[query_part].reshape(-1)[:5])} ...)."
                f"{_line(cls, r'squeeze', r'reshape')}"
            )
    one = {
        "query": inputs["query"],
        "memory": inputs["memory"][:, :1],
        "memory_mask": np.ones((BATCH, 1), bool),
    }
    _, got_a = call_layer(
        layer, one
    )  # (Keras' warning of a softmax over one position is silenced by run_checks)
    if got_a.shape != (BATCH, STEPS, 1) or not np.allclose(got_a, 1.0, atol=1e-4):
        return (
            f"with one source position (S = 1), expected weights {(BATCH, STEPS, 1)} that are all 1 (the "
            f"only "
            f"position takes all the weight); got {got_a.shape}: {_rows(got_a.reshape(-1)[:6])}."
            f"{_line(cls, r'squeeze', r'reshape')}"
        )
    return None


def _check_independent_calls(cls) -> str | None:
    weights = fixed_weights("dot")
    layer = built_layer(cls, "dot", weights)
    call_layer(layer, fixed_inputs(seed=0))
    rng = np.random.default_rng(7)  # other inputs, with 9 output steps and 11 sources
    other = {
        "query": rng.normal(size=(BATCH, 9, QUERY_DIM)).astype("float32"),
        "memory": rng.normal(size=(BATCH, 11, MEMORY_DIM)).astype("float32"),
        "memory_mask": np.arange(11)[None, :] < np.array([11, 6])[:, None],
    }
    fresh_context, fresh_a = call_layer(built_layer(cls, "dot", weights), other)
    stored = _line(cls, r"self\.\w+\s*=[^=]")
    kept = (
        "the layer keeps something from the first call. Compute everything in call() from that call's "
        "inputs; "
        f"a value stored on self is kept between calls (and between batches in training).{stored}"
    )
    try:
        context, a = call_layer(layer, other)  # the second call of the same layer
    except Exception as error:
        reason = _explain(error)
        return f"a second call, with other inputs, failed where a fresh layer did not: {kept} [{reason}]"
    if not (np.allclose(a, fresh_a, atol=1e-5) and np.allclose(context, fresh_context, atol=1e-5)):
        return (
            "a second call, with other inputs, gave other numbers than a fresh layer with the same weights "
            f"(weights {_rows(a[0, 0, :5])} ..., expected {_rows(fresh_a[0, 0, :5])} ...): {kept}"
        )
    return None


def _check_graph_mode(cls, score: str) -> str | None:
    import tensorflow as tf

    inputs, weights = fixed_inputs(), fixed_weights(score)
    layer = built_layer(cls, score, weights)
    eager_context, eager_a = call_layer(layer, inputs)
    graph = tf.function(
        lambda q, h, mask: layer(q, h, memory_mask=mask, return_attention_scores=True),
        input_signature=[
            tf.TensorSpec((None, None, QUERY_DIM), tf.float32),
            tf.TensorSpec((None, None, MEMORY_DIM), tf.float32),
            tf.TensorSpec((None, None), tf.bool),
        ],
    )
    context, a = (np.asarray(x) for x in graph(inputs["query"], inputs["memory"], inputs["memory_mask"]))
    if not (np.allclose(a, eager_a, atol=1e-5) and np.allclose(context, eager_context, atol=1e-5)):
        return (
            "in graph mode (tf.function, as Keras trains), expected the same numbers as when the layer runs "
            f"eagerly; got weights {_rows(a[0, 0])}, expected {_rows(eager_a[0, 0])}. Python decisions on "
            "tensor values (if, shapes read as numbers) are made once, when the graph is built."
            f"{_line(cls, *TRACE_TIME)}"
        )
    return None


def _check_mixed_precision(cls) -> str | None:
    import keras

    inputs, weights = fixed_inputs(), fixed_weights("dot")
    expected_context, expected_a = run_layer(cls, "dot", inputs, weights)
    policy = keras.config.dtype_policy()
    try:
        keras.config.set_dtype_policy("mixed_float16")
        context, a = run_layer(cls, "dot", inputs, weights)
    finally:
        keras.config.set_dtype_policy(policy)
    context, a = context.astype("float32"), a.astype("float32")
    if not (np.isfinite(a).all() and np.isfinite(context).all()):
        big = _line(cls, r"\d(\.\d*)?e\+?(9|[1-9]\d)\b", r"\binf\b", r"mask")
        return (
            f"under mixed precision (float16, as the notebook trains on a GPU), expected finite weights; got "
            f"{int((~np.isfinite(a)).sum())} NaN or inf among {a.size} (first row {_rows(a[0, 0])}). float16 "
            f"holds "
            "numbers up to 65504: 1e9 becomes inf there, and 0 * inf or inf - inf is NaN, so training would "
            "show "
            "`loss: nan` from the first batch. Use a large negative score that float16 holds (exp(-1e4) is "
            f"already 0), and put it where the mask is False rather than computing mask * a huge number.{big}"
        )
    if not (
        np.allclose(a, expected_a, atol=HALF_TOLERANCE)
        and np.allclose(context, expected_context, atol=HALF_TOLERANCE * 5)
    ):
        worst = float(np.abs(a - expected_a).max())
        return (
            f"under mixed precision (float16), expected about the float32 weights "
            f"({_rows(expected_a[0, 0])}); "
            f"got {_rows(a[0, 0])} (off by up to {worst:.3f}). Compute in the layer's compute dtype: a "
            f"constant "
            "cast to another dtype, or a float64 value, loses or breaks precision here."
        )
    return None


def _check_serialization(cls) -> str | None:
    import keras

    layer = cls(KEY_DIM, VALUE_DIM, score="additive", name="kv")
    config = layer.get_config()
    copy = cls.from_config(config)
    if (copy.key_dim, copy.value_dim, copy.score) != (KEY_DIM, VALUE_DIM, "additive"):
        missing = [name for name in ("key_dim", "value_dim", "score") if name not in config]
        return (
            f"a layer made with key_dim={KEY_DIM}, value_dim={VALUE_DIM}, score='additive' gives a "
            f"get_config() "
            f"from which Keras rebuilds key_dim={copy.key_dim}, value_dim={copy.value_dim}, "
            f"score={copy.score!r}"
            f"{' (it lacks ' + ', '.join(missing) + ')' if missing else ''}: get_config() must return every "
            f"argument of __init__, so that a saved model can be "
            f"rebuilt.{_line(cls, r'return', method='get_config')}"
        )
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
        return (
            "expected a model saved and loaded again to give the same outputs; it gives others. Keep every "
            "weight in build() with add_weight."
        )
    return None


CHECKS: list[tuple[str, Callable]] = [
    ("imports only what the grader allows", _check_imports),
    ("returns a context (batch, T, value_dim) and weights (batch, T, S)", _check_shapes),
    ("weights sum to 1 over the source positions", _check_sums),
    ("two calls with different inputs give independent results", _check_independent_calls),
    ("each output step and each source position is handled on its own", _check_positions),
    ("padding gets zero weight and changes nothing; no mask means no padding", _check_mask),
    ("dot score matches the reference numbers", lambda cls: _check_reference(cls, "dot")),
    ("additive score matches the reference numbers", lambda cls: _check_reference(cls, "additive")),
    ("works at batch 1, at one output step and at one source position", _for_each_score(_check_small_sizes)),
    ("works in graph mode (tf.function), as Keras trains it", _for_each_score(_check_graph_mode)),
    ("works under mixed precision (mixed_float16), as on a GPU", _check_mixed_precision),
    ("get_config round-trips; a model with the layer saves and loads", _check_serialization),
]


# ---- framework errors, in a student's words ----

# (what the framework says, what it means here): the first that matches explains the error.
TRANSLATIONS: list[tuple[str, str]] = [
    (
        r"symbolic tf\.Tensor.*numpy|has no attribute 'numpy'|numpy\(\) is only available",
        "NumPy was used on a tensor inside call(). When Keras trains, call() runs as a graph whose tensors "
        "have no "
        "values yet, so NumPy cannot read them; keras.ops has the same operations and works in both modes.",
    ),
    (
        r"as_list\(\) is not defined on an unknown TensorShape|unknown rank|Cannot iterate over a shape with "
        r"unknown|"
        r"Failed to convert elements of \(?None|None values not supported|'NoneType' object cannot be "
        r"interpreted as an "
        r"integer|unsupported operand type\(s\) for .*'NoneType'",
        "a step needed a shape that is known only when the model runs: in graph mode the batch size and the "
        "lengths "
        "are unknown when call() is traced. A squeeze without an axis, or a reshape built from .shape "
        "numbers, "
        "cannot know them (x.shape holds None there); use ops.shape(x) at run time, or operations that need "
        "no shape.",
    ),
    (
        r"OperatorNotAllowedInGraphError|`tf\.Tensor` as a Python `bool`|iterating over (a symbolic "
        r")?`tf\.Tensor`",
        "a Python if, while or for decided by a tensor's value: while Keras traces call() into a graph, the "
        "value "
        "is not known yet. Choose between tensors with ops.where, and loop over nothing: the operations work "
        "on "
        "every position at once.",
    ),
    (
        r"out of scope|FuncGraph|captured|Graph tensor|inaccessible tensor",
        "a tensor made in one call was used in another: something computed in call() was kept on self and "
        "reused later. Compute everything in call() from that call's inputs.",
    ),
    (
        r"Cannot convert .* to EagerTensor of dtype bool|bool.*(unsupported operand|not supported)|"
        r"(Sub|Mul|AddV2|Neg)\b.*\bbool\b",
        "arithmetic on the bool memory_mask: True and False are not numbers. Use the mask to choose between "
        "two "
        "values (ops.where), or cast it to the scores' dtype before any arithmetic.",
    ),
    (
        r"must have the same dtype|was expected to be a \w+ tensor but is a \w+ tensor|float16 != "
        r"tf\.float32|"
        r"float32 != tf\.float16|incompatible dtype|cannot compute \w+ as input",
        "two tensors of different dtypes met (float16 and float32 under mixed precision, for one). Make a "
        "constant "
        "in the dtype of the tensor it meets: ops.cast(value, scores.dtype) rather than a float32 or float64 "
        "number.",
    ),
    (
        r"__init__\(\) missing .*argument|__init__\(\) got an unexpected keyword",
        "the layer could not be rebuilt from its get_config(): get_config() must return every argument that "
        "__init__ needs (key_dim, value_dim, score), as Keras rebuilds a saved model's layers from it.",
    ),
    (
        r"Matrix size-incompatible|Dimensions must be equal|Incompatible shapes|incompatible|cannot be "
        r"broadcast|"
        r"not compatible|broadcastable|shapes .* and .*",
        "two tensors whose shapes do not fit met in one operation. A matrix product (batch, n, k) x (batch, "
        "k, m) "
        "needs the same k; an addition needs sizes that are equal or 1 on every axis.",
    ),
]


def _message(error: BaseException) -> str:
    """The error's own message, without the call details Keras wraps around errors raised inside a layer."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).split("Arguments received by")[0]
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\{\{node [^}]*\}\}.*", "", text)  # TensorFlow's node dump: nothing for a student
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip()
        and not line.startswith("Exception encountered when calling")
        and not re.match(r"\s*(File \"|in user code:)", line)
    ]
    return re.sub(r"\s*\[Op:\w+\].*$", "", lines[-1]) if lines else type(error).__name__


def _where(error: BaseException, cls) -> str:
    """`` (homework/kv_attention.py, line N: `code`)`` where the error happened in the student's file."""
    path = _source_path(cls)
    name = path.name if path else "kv_attention.py"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).name == name]
    if frames:
        return f" ({LAYER_FILE}, line {frames[-1].lineno}: `{(frames[-1].line or '').strip()}`)"
    # In graph mode, TensorFlow puts the user's frames in the message text instead.
    found = re.findall(rf'File "[^"]*{re.escape(name)}", line (\d+)', str(error))
    if found and path is not None and path.is_file():
        number = int(found[-1])
        lines = path.read_text(encoding="utf-8").splitlines()
        code = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        return f" ({LAYER_FILE}, line {number}: `{code}`)"
    return ""


def is_todo(error: BaseException) -> bool:
    return isinstance(error, NotImplementedError) and "TODO" in str(error)


def _explain(error: BaseException, cls=None) -> str:
    """A student-facing account of an exception raised inside their layer: what it means, where, then the raw
    words."""
    where = _where(error, cls) if cls is not None else ""
    if is_todo(error):
        return f"not written yet: {_message(error)}"
    raw = _name_shapes(_message(error))
    for pattern, sentence in TRANSLATIONS:
        if re.search(pattern, f"{type(error).__name__}: {raw}", re.IGNORECASE):
            return f"{sentence}{where} [{type(error).__name__}: {raw}]"
    return f"{type(error).__name__}: {raw}{where}"


def _import_failed(error: BaseException) -> list[Check]:
    """The checks when the student's file does not even import: the grader's audit first, if it refuses the
    file."""
    from labs.common.layer_audit import audit_module

    audit = audit_module((REPO_ROOT / LAYER_FILE).read_bytes(), name=LAYER_FILE)
    if not audit.allowed:
        first = Check(
            CHECKS[0][0],
            False,
            f"{audit.message}. The grader refuses such a file before it runs; "
            "everything the layer needs is in keras.ops.",
        )
    else:
        where = "" if isinstance(error, SyntaxError) else _where(error, None)
        first = Check(f"{LAYER_FILE} imports", False, f"{type(error).__name__}: {_message(error)}{where}")
    return [first] + [Check(name, False, "", ran=False) for name, _ in CHECKS[1:]]


def run_checks(cls=None) -> list[Check]:
    """Run every check on ``cls`` (default: your layer, freshly reloaded); never raises for a broken layer."""
    import keras

    if cls is None:
        try:
            cls = layer_class()
        except Exception as error:  # a syntax error or a bad import in the student's file
            return _import_failed(error)
    results, todo = [], None
    policy = keras.config.dtype_policy()  # a notebook may have set mixed precision already
    keras.config.set_dtype_policy("float32")
    try:
        for name, check in CHECKS:
            if todo:  # the same unwritten TODO would fail every later check the same way
                results.append(Check(name, False, "", ran=False))
                continue
            keras.utils.set_random_seed(0)
            try:
                with (
                    warnings.catch_warnings()
                ):  # Keras' warnings about the layer (a softmax over a size-1 axis):
                    warnings.simplefilter(
                        "ignore"
                    )  # the check's own message says what matters, in the student's terms
                    message = check(cls)
            except Exception as error:
                message, todo = _explain(error, cls), is_todo(error)
            results.append(Check(name, message is None, message or ""))
    finally:
        keras.config.set_dtype_policy(policy)
    return results


def failures(path: str | Path | None = None) -> list[str]:
    """``"check: message"`` for each failing check of the layer in ``path`` (default:
    homework/kv_attention.py).

    What ``export`` runs before it writes a bundle (through the task registry's ``layer_selftest``)."""
    default = REPO_ROOT / LAYER_FILE
    if path is None or Path(path).resolve() == default.resolve():
        results = run_checks()
    else:
        try:
            cls = layer_class_from(path)
        except Exception as error:
            return [f"{Path(path).name} imports: {type(error).__name__}: {_message(error)}"]
        results = run_checks(cls)
    return [f"{r.name}: {r.message}" for r in results if r.ran and not r.passed]


# The line a check guesses at (:func:`_line`), as it ends a message.
GUESSED_LINE = re.compile(r" Look at \S+, line \d+: `[^`\n]*`\.")


def report(results: list[Check]) -> str:
    """The self-test's printout. A failure after the first keeps its message but not the line it guesses
    at: it often follows from the first (a scrambled score fails the padding check too), and a line that
    looks fine would send the student the wrong way. Lines where an error was raised stay: those are facts."""
    lines = [f"Self-test of KeyValueAttention ({LAYER_FILE})"]
    failed = False
    for result in results:
        lines.append(f"  {'PASS' if result.passed else 'FAIL' if result.ran else '....'}  {result.name}")
        if result.ran and not result.passed:
            follows = " (This may follow from the failure above.)" if failed else ""
            lines.append(
                f"        {GUESSED_LINE.sub('', result.message) if failed else result.message}{follows}"
            )
            failed = True
    passed, waiting = sum(r.passed for r in results), sum(not r.ran for r in results)
    verdict = (
        "all passed: train your model next."
        if passed == len(results)
        else "fix the first failing check first; the later ones often follow from it."
    )
    later = f" ({waiting} not run until the failure above is fixed)" if waiting else ""
    lines.append(f"{passed} of {len(results)} checks passed{later}; {verdict}")
    return "\n".join(lines)


def selftest(cls=None, strict: bool = True) -> list[Check]:
    """Run the checks and print the report; with ``strict``, raise :class:`SelfTestFailed` if one fails.

    In the notebook, the raise stops "Run all" at this cell rather than training a broken layer."""
    results = run_checks(cls)
    print(report(results))
    failed = [r for r in results if r.ran and not r.passed]
    if strict and failed:
        raise SelfTestFailed(
            f"{len(failed)} self-test check(s) failed; first: {failed[0].name}: {failed[0].message}"
        )
    return results


def main() -> int:
    """``python -m labs selftest homework``: exit status 0 when every check passes, 1 otherwise."""
    results = selftest(strict=False)
    sys.stdout.flush()
    return 0 if all(r.passed for r in results) else 1
