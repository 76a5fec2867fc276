"""Model similarity: did two students hand in the same trained model?

Code checks (MOSS, JPlag) compare what students wrote; a copied ``model.keras`` with renamed
layers, or trained one more epoch, passes them all. This module compares the models themselves,
every pair of a graded batch, three ways:

1. **Identical weights.** The fingerprint of :mod:`autograder.weights` (read in the sandbox,
   without running student code): the same numbers in every array, whatever the layers are
   called, in whatever order, in whatever file bytes.
2. **Near-identical weights**, between models of the same architecture (the same weight shapes).
   For each weight matrix of one model, the Pearson correlation ``r`` with the other model's
   matrix of the same shape at the same sampled positions (the best such matrix, when several
   share a shape); the pair's *weight similarity* is the median ``r`` over the matrices. Matrices
   start random, so two models trained from different seeds correlate near 0, while a model
   trained a few more epochs from another's weights keeps ``r`` near 1
   (``benchmarks/similarity_calibration.py`` measures both and sets :data:`WEIGHT_THRESHOLD`).
3. **Shared mistakes**, across architectures. On the hidden items (each hidden input's best
   output; for lab 1, the most likely next character after each prefix of the scored dates),
   ``O`` counts the items where both models give the *same wrong* answer. Given model a's wrong
   answers, the rest of the class (the pair itself left out) predicts how many an independent
   model b would share:

       E = sum over the items i that a got wrong of  P_b(i) * c_i
       P_b(i) = e_b * d_i / mean(d)    b's error rate e_b, scaled by item i's difficulty d_i
                                       (the share of the other models wrong on i)
       c_i    = the share of the other models' wrong answers on i that are a's answer

   (smoothed toward the class's rate where few others erred; of the two directions, the one that
   expects more), and ``z = (O - E) / sqrt(sum_i p_i (1 - p_i))`` with ``p_i = P_b(i) c_i``. A
   pair is flagged when ``z >= MISTAKES_Z``, ``O >= MISTAKES_MIN`` and ``O >= MISTAKES_RATIO * E``.

What is written is for the instructor alone: ``similarity.csv`` (every pair, each measure,
flagged or not, why) and the class report's section; nothing of it enters a student's feedback
or Gradescope results. A flag is a reason to look, not a verdict: two students who train the
kit's model with the same seed on the same data start from the same weights too.

The evidence each graded bundle leaves (its weights' fingerprint and sampled matrices, its
answers on the hidden items) is kept in ``GRADES/similarity/<student>.json``, so that
``python -m autograder similarity GRADES`` compares a batch again without running a model.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labs.common.files import write_csv, write_json

WEIGHT_THRESHOLD = 0.5    # median per-matrix r; independent seeds stay near 0 (benchmarks/similarity_calibration.py)
MISTAKES_Z = 6.0          # shared wrong answers this many standard deviations above what independence predicts,
MISTAKES_MIN = 5          # at least this many of them,
MISTAKES_RATIO = 2.0      # and at least this many times the expected number
COLLISION_PRIOR = 0.5     # the chance two wrong answers agree, before the rest of the class says (cautious)
EXAMPLES = 3              # shared wrong answers shown per flagged pair
EVIDENCE_FOLDER = "similarity"
COLUMNS = ("student_a", "student_b", "flagged", "why", "identical_weights", "architecture", "weight_similarity",
           "matrices_compared", "shared_mistakes", "expected_shared_mistakes", "shared_mistakes_z")
THRESHOLDS = {"weight_similarity": WEIGHT_THRESHOLD, "shared_mistakes_z": MISTAKES_Z}


@dataclass
class Evidence:
    """What one graded bundle leaves for the comparison."""

    student: str
    bundle_sha256: str
    parameters: int | None
    fingerprint: str | None
    matrices: list[tuple[tuple[int, ...], np.ndarray]]     # (shape, sampled values)
    items: list[str]                                       # the hidden items, as text (the same for everyone)
    answers: list[str]                                     # the model's answer on each item
    right: np.ndarray                                      # bool, per item

    @property
    def architecture(self) -> tuple:
        return self.parameters, tuple(sorted(shape for shape, _ in self.matrices))


# --- the evidence files ----------------------------------------------------------------------------

def evidence_path(out: Path, student: str) -> Path:
    return Path(out) / EVIDENCE_FOLDER / f"{student}.json"


def save_evidence(out: Path, record: dict, weights: dict | None, answers: dict | None) -> None:
    """Keep what the comparison needs of one graded bundle; remove an older file when there is nothing to keep."""
    path = evidence_path(out, record["student"])
    if not weights and not answers:
        path.unlink(missing_ok=True)
        return
    weights = weights or {}
    path.parent.mkdir(exist_ok=True)
    write_json(path, {
        "student": record["student"], "bundle_sha256": record.get("bundle_sha256", ""),
        "parameters": weights.get("parameters"), "fingerprint": weights.get("fingerprint"),
        "matrices": [{"shape": list(shape), "sample": base64.b64encode(np.asarray(values, "<f4").tobytes()).decode()}
                     for shape, values in ((m["shape"], m["sample"]) for m in weights.get("matrices", []))],
        **({"items": answers["items"], "answers": answers["answers"], "right": [bool(r) for r in answers["right"]]}
           if answers else {"items": [], "answers": [], "right": []})})


def load_evidence(out: Path, records: list[dict]) -> list[Evidence]:
    """The evidence of each record whose file is there and is of the bundle that record graded."""
    found = []
    for record in sorted(records, key=lambda r: r["student"]):
        try:
            data = json.loads(evidence_path(out, record["student"]).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not record.get("bundle_sha256") or data.get("bundle_sha256") != record["bundle_sha256"]:
            continue
        matrices = [(tuple(m["shape"]), np.frombuffer(base64.b64decode(m["sample"]), "<f4").astype(np.float64))
                    for m in data.get("matrices", [])]
        found.append(Evidence(record["student"], data["bundle_sha256"], data.get("parameters"), data.get("fingerprint"),
                              matrices, data.get("items", []), data.get("answers", []),
                              np.asarray(data.get("right", []), dtype=bool)))
    return found


# --- the three measures ----------------------------------------------------------------------------

def correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two samples (0 when either is constant)."""
    x, y = x - x.mean(), y - y.mean()
    scale = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / scale if scale > 0 else 0.0


def weight_similarity(a: Evidence, b: Evidence) -> tuple[float | None, int]:
    """The median over ``a``'s matrices of the best r with a ``b`` matrix of the same shape, and how many
    matrices were compared; ``(None, 0)`` unless both models have the same architecture."""
    if not a.matrices or a.architecture != b.architecture:
        return None, 0
    best = [max(correlation(values, other) for other_shape, other in b.matrices if other_shape == shape)
            for shape, values in a.matrices]
    return float(np.median(best)), len(best)


class SharedMistakes:
    """Counts of the class's wrong answers per hidden item, to compare any pair against the rest of the class."""

    def __init__(self, models: list[Evidence]):
        self.index = {m.student: k for k, m in enumerate(models)}
        self.items = models[0].items if models else []
        codes: dict[str, int] = {}
        items = len(self.items)
        self.codes = np.array([[codes.setdefault(answer, len(codes)) for answer in m.answers] for m in models],
                              dtype=np.int64).reshape(len(models), items)
        self.wrong = ~np.array([m.right for m in models], dtype=bool).reshape(len(models), items)
        self.W = self.wrong.sum(axis=0)                               # models wrong on each item
        # K[m, i]: how many models (m included) gave m's wrong answer on item i; 0 where m is right.
        key = np.where(self.wrong, np.arange(items)[None, :] * (len(codes) + 1) + self.codes, -1)
        self.K = np.zeros_like(self.codes)
        flat = key[self.wrong]
        if flat.size:
            _, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
            self.K[self.wrong] = counts[inverse]
        # S[i]: pairs of models with the same wrong answer on item i (each model pairs with K - 1 others).
        self.S = np.where(self.wrong, self.K - 1, 0).sum(axis=0) / 2.0

    def compare(self, a: str, b: str) -> dict:
        """``O``, ``E``, ``z`` and the items both got wrong the same way, for models ``a`` and ``b``."""
        i, j = self.index[a], self.index[b]
        wa, wb = self.wrong[i], self.wrong[j]
        same = wa & wb & (self.codes[i] == self.codes[j])
        n_others = len(self.index) - 2
        w_o = self.W - wa - wb                                             # the others wrong on each item
        s_o = self.S - wa * (self.K[i] - 1) - wb * (self.K[j] - 1 - same)  # their pairs with the same wrong answer
        c0 = float((s_o.sum() + COLLISION_PRIOR) / ((w_o * (w_o - 1) / 2.0).sum() + 1.0))   # never quite 0
        if n_others > 0:
            base = float(w_o.sum()) / (n_others * len(w_o))
            d = (w_o + base) / (n_others + 1.0)                            # item difficulty, smoothed
        else:
            d = np.ones(len(wa))
        scale = d / d.mean() if d.mean() > 0 else np.ones(len(wa))
        expected, spread = 0.0, 0.0
        for wx, k_x, wy in ((wa, self.K[i], wb), (wb, self.K[j], wa)):
            c = (np.where(wx, k_x - 1 - same, 0) + c0) / (w_o + 1.0)        # others who gave x's wrong answer
            p = np.where(wx, np.clip(float(wy.mean()) * scale, 0, 1) * c, 0.0)
            if p.sum() >= expected:                                        # the direction that expects more
                expected, spread = float(p.sum()), math.sqrt(float((p * (1 - p)).sum()))
        observed = int(same.sum())
        z = (observed - expected) / spread if spread > 0 else (math.inf if observed > expected else 0.0)
        return {"observed": observed, "expected": expected, "z": z, "shared": np.flatnonzero(same)}


def compare(models: list[Evidence]) -> list[dict]:
    """Every pair of ``models``: each measure, whether it is flagged and why (one row of ``similarity.csv``)."""
    answering = [m for m in models if m.answers and len(m.answers) == len(m.right)]
    sizes = {len(m.answers) for m in answering}
    size = max(sizes, key=lambda s: sum(len(m.answers) == s for m in answering)) if sizes else 0
    answering = [m for m in answering if len(m.answers) == size]
    mistakes = SharedMistakes(answering)
    pairs = []
    for k, a in enumerate(models):
        for b in models[k + 1:]:
            pairs.append(_pair(a, b, mistakes if a.student in mistakes.index and b.student in mistakes.index else None))
    return pairs


def _pair(a: Evidence, b: Evidence, mistakes: SharedMistakes | None) -> dict:
    identical = bool(a.fingerprint) and a.fingerprint == b.fingerprint
    similarity, compared = weight_similarity(a, b)
    row = {"student_a": a.student, "student_b": b.student, "identical_weights": identical,
           "architecture": "same" if a.matrices and a.architecture == b.architecture else "different",
           "weight_similarity": similarity, "matrices_compared": compared, "shared_mistakes": None,
           "expected_shared_mistakes": None, "shared_mistakes_z": None, "examples": []}
    why = []
    if identical:
        why.append("identical weights (the same numbers in every array)")
    elif similarity is not None and similarity >= WEIGHT_THRESHOLD:
        why.append(f"near-identical weights: median correlation {similarity:.2f} over {compared} matrices "
                   f"(independently trained models stay below {WEIGHT_THRESHOLD})")
    if mistakes is not None:
        shared = mistakes.compare(a.student, b.student)
        row.update(shared_mistakes=shared["observed"], expected_shared_mistakes=shared["expected"],
                   shared_mistakes_z=shared["z"])
        row["examples"] = [{"source": mistakes.items[i], "output": a.answers[i]} for i in shared["shared"][:EXAMPLES]]
        if shared["z"] >= MISTAKES_Z and shared["observed"] >= MISTAKES_MIN and \
                shared["observed"] >= MISTAKES_RATIO * shared["expected"]:
            why.append(f"{shared['observed']} identical wrong answers on hidden items where independent models "
                       f"would share about {shared['expected']:.1f} (z = {min(shared['z'], 999):.1f})")
    row["flagged"] = bool(why)
    row["why"] = "; ".join(why)
    if not why:
        row["examples"] = []
    return row


# --- the outputs -----------------------------------------------------------------------------------

def write_similarity(out: Path, records: list[dict]) -> list[dict]:
    """Compare the graded batch in ``out`` (its records and evidence files); write ``similarity.csv``."""
    from autograder.reports import csv_cell

    pairs = compare(load_evidence(out, records))
    rows = [{key: _cell(pair[key]) for key in COLUMNS} for pair in pairs]
    rows.sort(key=lambda r: (r["flagged"] != "yes", r["student_a"], r["student_b"]))
    write_csv(Path(out) / "similarity.csv", COLUMNS, [{k: csv_cell(v) for k, v in row.items()} for row in rows])
    return pairs


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.4f}"
    return str(value)
