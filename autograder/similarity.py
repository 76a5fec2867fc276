"""Model similarity: did two students hand in the same trained model?

Code checks (MOSS, JPlag) compare what students wrote; a copied ``model.keras`` with renamed
layers, or trained one more epoch, passes them all. This module compares the models themselves,
every pair of a graded batch, three ways:

1. **Identical weights.** The fingerprint of :mod:`autograder.weights` (read in the sandbox,
   without running student code): the same numbers in every array, whatever the layers are
   called, in whatever order, in whatever file bytes.
2. **Near-identical weights.** For each weight matrix of the model with fewer of them, the
   Pearson correlation ``|r|`` with the other model's matrices of the same shape at the same
   sampled positions (the best, 0 where no matrix has that shape; ``|r|``, since flipping the
   signs of a hidden unit's weights in and out keeps the function); the pair's *weight
   similarity* is the median over those matrices, so a layer added or retrained does not hide
   the rest. Matrices start random, so two models trained from different seeds correlate near 0,
   while a model trained a few more epochs from another's weights keeps ``|r|`` near 1
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

   Shared mistakes flag only where at least ``MISTAKES_MIN_OTHERS`` other models say what
   independent models share; with fewer, the pair's figures are reported and not flagged. ``z``
   treats the items as independent; lab 1's are the prefixes of the same dates, so its ``z`` runs
   high, and its thresholds (like all three) are set on lab 2's calibration.

What is written is for the instructor alone: ``similarity.csv`` (every pair, each measure,
flagged or not, why) and the class report's section; nothing of it enters a student's feedback
or Gradescope results. A flag is a reason to look, not a verdict: two students who train the
kit's model with the same seed, data and settings start from the same weights too (the
homework notebook asks for a seed of one's own). What it does not catch: a copy whose hidden units are
reordered *and* then retrained (the fingerprint and the correlations change; only shared
mistakes remain, and a near-perfect model makes too few of them to tell).

The evidence each graded bundle leaves (its weights' fingerprint and sampled matrices, its
answers on the hidden items) is kept in ``GRADES/similarity/<student>.json``, so that
``python -m autograder similarity GRADES`` compares a batch again without running a model.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autograder.weights import pack, unpack
from labs.common.files import write_csv, write_json

WEIGHT_THRESHOLD = 0.5    # median per-matrix r; independent seeds stay near 0 (benchmarks/similarity_calibration.py)
MISTAKES_Z = 6.0          # shared wrong answers this many standard deviations above what independence predicts,
MISTAKES_MIN = 5          # at least this many of them,
MISTAKES_RATIO = 2.0      # and at least this many times the expected number,
MISTAKES_MIN_OTHERS = 8   # where at least this many other models make the prediction
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
    fingerprint: str | None
    matrices: list[tuple[tuple[int, ...], np.ndarray]]     # (shape, sampled values)
    items: list[str]                                       # the hidden items, as text (the same for everyone)
    answers: list[str]                                     # the model's answer on each item
    right: np.ndarray                                      # bool, per item

    @property
    def shapes(self) -> tuple:
        return tuple(sorted(shape for shape, _ in self.matrices))


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
        "fingerprint": weights.get("fingerprint"),
        "matrices": [{"shape": list(m["shape"]), "sample": pack(m["sample"])} for m in weights.get("matrices", [])],
        **({"items": answers["items"], "answers": answers["answers"], "right": [bool(r) for r in answers["right"]]}
           if answers else {"items": [], "answers": [], "right": []})})


def load_evidence(out: Path, records: list[dict]) -> list[Evidence]:
    """The evidence of each record whose file is there, readable, and of the bundle that record graded."""
    found = []
    for record in sorted(records, key=lambda r: r["student"]):
        try:
            data = json.loads(evidence_path(out, record["student"]).read_text(encoding="utf-8"))
            if not record.get("bundle_sha256") or data["bundle_sha256"] != record["bundle_sha256"]:
                continue
            matrices = [(tuple(int(d) for d in m["shape"]), unpack(m["sample"])) for m in data["matrices"]]
            items, answers, right = list(map(str, data["items"])), list(map(str, data["answers"])), data["right"]
            if not len(items) == len(answers) == len(right):
                continue
            found.append(Evidence(record["student"], data.get("fingerprint"), matrices, items, answers,
                                  np.asarray(right, dtype=bool)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):   # not the grader's file, or damaged
            continue
    return found


# --- the three measures ----------------------------------------------------------------------------

def correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two samples (0 when either is constant)."""
    x, y = x - x.mean(), y - y.mean()
    scale = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / scale if scale > 0 else 0.0


def weight_similarity(a: Evidence, b: Evidence) -> tuple[float | None, int]:
    """The median, over the matrices of the model with fewer, of the best ``|r|`` with a matrix of the same
    shape in the other (0 where none has it), and how many matrices had one; ``(None, 0)`` when none had one."""
    if not a.matrices or not b.matrices:
        return None, 0
    fewer, other = (a, b) if len(a.matrices) <= len(b.matrices) else (b, a)
    best = [max((abs(correlation(values, partner)) for shape_b, partner in other.matrices if shape_b == shape),
                default=None) for shape, values in fewer.matrices]
    compared = sum(r is not None for r in best)
    return (float(np.median([r or 0.0 for r in best])), compared) if compared else (None, 0)


class SharedMistakes:
    """The class's wrong answers per hidden item, to set any pair against what the rest of the class predicts.

    For ``n`` models and ``N`` items (every array below is over the whole class; ``compare`` takes
    the pair out again):

    - ``wrong[m, i]``  (n, N) bool: model m's answer on item i is wrong;
    - ``answer[m, i]`` (n, N) int: model m's answer, as a number (equal answers, equal numbers);
    - ``agree[m, i]``  (n, N) int: how many models (m too) gave m's wrong answer on item i; 0 where m is right;
    - ``wrong_count[i]`` (N,): models wrong on item i;
    - ``agreeing_pairs[i]`` (N,): pairs of models with the same wrong answer on item i.
    """

    def __init__(self, models: list[Evidence]):
        self.index = {m.student: k for k, m in enumerate(models)}
        self.items = models[0].items if models else []
        numbers: dict[str, int] = {}
        n, N = len(models), len(self.items)
        self.answer = np.array([[numbers.setdefault(a, len(numbers)) for a in m.answers] for m in models],
                               dtype=np.int64).reshape(n, N)
        self.wrong = ~np.array([m.right for m in models], dtype=bool).reshape(n, N)
        key = np.where(self.wrong, np.arange(N)[None, :] * (len(numbers) + 1) + self.answer, -1)   # (item, answer)
        self.agree = np.zeros_like(self.answer)
        if self.wrong.any():
            _, which, counts = np.unique(key[self.wrong], return_inverse=True, return_counts=True)
            self.agree[self.wrong] = counts[which]
        self.wrong_count = self.wrong.sum(axis=0)
        self.agreeing_pairs = np.where(self.wrong, self.agree - 1, 0).sum(axis=0) / 2.0

    def compare(self, a: str, b: str) -> dict:
        """``O``, ``E``, ``z`` and the items both got wrong the same way, for models ``a`` and ``b``."""
        i, j = self.index[a], self.index[b]
        wrong_a, wrong_b = self.wrong[i], self.wrong[j]                                       # (N,)
        same = wrong_a & wrong_b & (self.answer[i] == self.answer[j])                         # (N,)
        others = len(self.index) - 2
        # The rest of the class: who is wrong on each item, and which of their wrong answers agree.
        wrong_others = self.wrong_count - wrong_a - wrong_b                                   # (N,)
        pairs_others = self.agreeing_pairs - wrong_a * (self.agree[i] - 1) - wrong_b * (self.agree[j] - 1 - same)
        agreement = float((pairs_others.sum() + COLLISION_PRIOR)                              # the class's rate
                          / ((wrong_others * (wrong_others - 1) / 2.0).sum() + 1.0))
        if others > 0:                                                                        # d_i, smoothed
            d = (wrong_others + wrong_others.sum() / (others * len(wrong_a))) / (others + 1.0)
        else:
            d = np.ones(len(wrong_a))
        difficulty = d / d.mean() if d.mean() > 0 else np.ones(len(wrong_a))                 # d_i / mean(d)
        expected, spread = 0.0, 0.0
        for wrong_x, agree_x, wrong_y in ((wrong_a, self.agree[i], wrong_b), (wrong_b, self.agree[j], wrong_a)):
            c = (np.where(wrong_x, agree_x - 1 - same, 0) + agreement) / (wrong_others + 1.0)   # c_i: x's answer
            p = np.where(wrong_x, np.clip(wrong_y.mean() * difficulty, 0, 1) * c, 0.0)        # P_y(i) c_i
            if p.sum() >= expected:                                                           # the larger E
                expected, spread = float(p.sum()), math.sqrt(float((p * (1 - p)).sum()))
        observed = int(same.sum())
        z = (observed - expected) / spread if spread > 0 else (math.inf if observed > expected else 0.0)
        return {"observed": observed, "expected": expected, "z": z, "others": others, "shared": np.flatnonzero(same)}


def compare(models: list[Evidence]) -> list[dict]:
    """Every pair of ``models``: each measure, whether it is flagged and why (one row of ``similarity.csv``).

    Shared mistakes compare the models that answered the same hidden items (the most common list).
    """
    answering = [m for m in models if m.items]
    lists = [tuple(m.items) for m in answering]
    common = max(set(lists), key=lambda items: (lists.count(items), items)) if lists else ()
    mistakes = SharedMistakes([m for m in answering if tuple(m.items) == common])
    return [_pair(a, b, mistakes if a.student in mistakes.index and b.student in mistakes.index else None)
            for k, a in enumerate(models) for b in models[k + 1:]]


def _pair(a: Evidence, b: Evidence, mistakes: SharedMistakes | None) -> dict:
    identical = bool(a.fingerprint) and a.fingerprint == b.fingerprint
    similarity, compared = weight_similarity(a, b)
    row = {"student_a": a.student, "student_b": b.student, "identical_weights": identical,
           "architecture": "same" if a.matrices and a.shapes == b.shapes else "different",
           "weight_similarity": similarity, "matrices_compared": compared, "shared_mistakes": None,
           "expected_shared_mistakes": None, "shared_mistakes_z": None, "examples": []}
    why = []
    if identical:
        why.append("identical weights: the same numbers in every array (a copy, or the same training run: the same "
                   "seed, data and settings)")
    elif similarity is not None and similarity >= WEIGHT_THRESHOLD:
        why.append(f"near-identical weights: median correlation {similarity:.2f} over {compared} matrices "
                   f"(independently trained models stay below {WEIGHT_THRESHOLD}; the same seed gives the same "
                   "starting weights)")
    if mistakes is not None:
        shared = mistakes.compare(a.student, b.student)
        row.update(shared_mistakes=shared["observed"], expected_shared_mistakes=shared["expected"],
                   shared_mistakes_z=shared["z"])
        if shared["others"] >= MISTAKES_MIN_OTHERS and shared["z"] >= MISTAKES_Z and \
                shared["observed"] >= max(MISTAKES_MIN, MISTAKES_RATIO * shared["expected"]):
            why.append(f"{shared['observed']} identical wrong answers on hidden items where independent models "
                       f"would share about {shared['expected']:.1f} (z = {min(shared['z'], 999):.1f})")
        if why:
            row["examples"] = [{"source": mistakes.items[i], "output": a.answers[i]}
                               for i in shared["shared"][:EXAMPLES]]
    row["flagged"] = bool(why)
    row["why"] = "; ".join(why)
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
