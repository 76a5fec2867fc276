"""Model similarity: did two students hand in the same trained model?

Code checks (MOSS, JPlag) compare what students wrote; a copied ``model.keras`` with renamed
layers, or trained one more epoch, passes them all. This module compares the models themselves,
every pair of a graded batch, three ways:

1. **Identical weights.** The fingerprint of :mod:`autograder.weights` (read in the sandbox,
   without running student code): the same numbers in every array, whatever the layers are
   called, in whatever order, in whatever file bytes, and whatever the order of the hidden units.
2. **Near-identical weights.** For each weight matrix of the model with fewer of them, the best
   :func:`matrix_similarity` with the other model's matrices of the same shape (0 where none has
   that shape), which lines the two up in two ways and keeps the better:

   - *the same positions*: the Pearson correlation ``|r|`` of the values at the same sampled
     positions (``|r|``, since flipping the signs of a hidden unit's weights in and out keeps the
     function): a model trained a few more epochs from another's weights keeps ``|r|`` near 1;
   - *hidden units matched*: each unit (a row or column of the matrix) of one model is matched to
     the unit of the other whose sorted magnitudes (its *profile*) are nearest, which neither the
     order of the units nor their signs change, and the two blocks of largest rows and columns are
     correlated once so aligned (:func:`aligned_correlation`): a copy whose hidden units were
     reordered, and perturbed by noise small enough to keep its outputs, stays near 1. What is
     correlated is ``log |w|`` less each row's and column's mean, so that units matched by their
     magnitudes do not correlate by their magnitudes alone.

   The pair's *weight similarity* is the median over those matrices, so a layer added or
   retrained does not hide the rest. Matrices start random, so two models trained from different
   seeds stay near 0 both ways (``benchmarks/similarity_calibration.py`` measures independent
   seeds, copies trained further and reordered copies, and sets :data:`WEIGHT_THRESHOLD`).
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
homework notebook asks for a seed of one's own). A model whose weights could not be compared (the
reader could not read them, or no evidence of them was kept) is not silently cleared: each of its
pairs that nothing else flags is ``not compared`` in ``similarity.csv`` (``why`` says whose weights
and why), and the class report lists those models.

What it does not catch: a copy whose hidden units are reordered *and* then retrained (one more
epoch left it at 0.13 in the calibration), or reordered and perturbed by noise large enough to
change each unit's sorted magnitudes: noise of 0.01 (about a tenth of the weights' typical size,
which moves the outputs by up to 0.26) still left lab 2's trained model at 0.71 (flagged), but
brought a small untrained random model to 0.3. The fingerprint, the positions and the profiles
then all change; only shared mistakes remain, and a near-perfect model makes too few of them to
tell. Nor a copy whose units are rescaled (a ReLU network keeps its function when a unit's
weights in are multiplied, and its weights out divided, by the same number).

The evidence each graded bundle leaves (its weights' fingerprint and matrices, each a sample, a
block and its profiles: under 10 kB a matrix, about 90 kB for a lab-2 model; its answers on the hidden
items) is kept in ``GRADES/similarity/<student>.json``, so that ``python -m autograder similarity
GRADES`` compares a batch again without running a model. A file an older grader kept (before
:data:`EVIDENCE_FORMAT` 2) still gives its answers; its weights are ``not compared``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autograder.status import GRADED
from autograder.weights import MAX_READ, Matrix
from labs.common.files import write_csv, write_json

WEIGHT_THRESHOLD = (
    0.5  # median per-matrix r; independent seeds stay near 0 (benchmarks/similarity_calibration.py)
)
MISTAKES_Z = 6.0  # shared wrong answers this many standard deviations above what independence predicts,
MISTAKES_MIN = 5  # at least this many of them,
MISTAKES_RATIO = 2.0  # and at least this many times the expected number,
MISTAKES_MIN_OTHERS = 8  # where at least this many other models make the prediction
COLLISION_PRIOR = 0.5  # the chance two wrong answers agree, before the rest of the class says (cautious)
EXAMPLES = 3  # shared wrong answers shown per flagged pair
EVIDENCE_FOLDER = "similarity"
EVIDENCE_FORMAT = 2  # 2: matrices with blocks and profiles, for aligning hidden units (1 had samples only)
COLUMNS = (
    "student_a",
    "student_b",
    "flagged",
    "why",
    "identical_weights",
    "architecture",
    "weight_similarity",
    "matrices_compared",
    "shared_mistakes",
    "expected_shared_mistakes",
    "shared_mistakes_z",
)
THRESHOLDS = {"weight_similarity": WEIGHT_THRESHOLD, "shared_mistakes_z": MISTAKES_Z}


@dataclass
class Evidence:
    """What one graded bundle leaves for the comparison."""

    student: str
    fingerprint: str | None
    matrices: list[Matrix]
    items: list[str]  # the hidden items, as text (the same for everyone)
    answers: list[str]  # the model's answer on each item
    right: np.ndarray  # bool, per item
    unread: str = ""  # why its weights cannot be compared ("" when they can)

    @property
    def shapes(self) -> tuple:
        return tuple(sorted(m.shape for m in self.matrices))


# --- the evidence files ----------------------------------------------------------------------------


def evidence_path(out: Path, student: str) -> Path:
    return Path(out) / EVIDENCE_FOLDER / f"{student}.json"


def save_evidence(out: Path, record: dict, weights: dict | None, answers: dict | None) -> None:
    """Keep what the comparison needs of one graded bundle; remove an older file when there is nothing to
    keep."""
    path = evidence_path(out, record["student"])
    if not weights and not answers:
        path.unlink(missing_ok=True)
        return
    weights = weights or {}
    path.parent.mkdir(
        exist_ok=True, mode=0o700
    )  # the hidden inputs and which answers were right: yours alone
    write_json(
        path,
        {
            "student": record["student"],
            "bundle_sha256": record.get("bundle_sha256", ""),
            "format": EVIDENCE_FORMAT,
            "fingerprint": weights.get("fingerprint"),
            "matrices": [m.to_json() for m in weights.get("matrices", [])],
            **(
                {
                    "items": answers["items"],
                    "answers": answers["answers"],
                    "right": [bool(r) for r in answers["right"]],
                }
                if answers
                else {"items": [], "answers": [], "right": []}
            ),
        },
    )


def load_evidence(out: Path, records: list[dict]) -> list[Evidence]:
    """The evidence of each record whose file is there, readable, and of the bundle that record graded; and of
    each graded record without one, an empty evidence that says why its weights cannot be compared."""
    found = []
    for record in sorted(records, key=lambda r: r["student"]):
        evidence = _read_evidence(out, record)
        if evidence is None and record.get("status") == GRADED:
            evidence = Evidence(
                record["student"],
                None,
                [],
                [],
                [],
                np.zeros(0, dtype=bool),
                unread=f"weights of {record['student']}: no evidence kept (grade again with --force)",
            )
        if evidence is not None:
            found.append(evidence)
    return found


def _read_evidence(out: Path, record: dict) -> Evidence | None:
    student = record["student"]
    try:
        data = json.loads(evidence_path(out, student).read_text(encoding="utf-8"))
        if not record.get("bundle_sha256") or data["bundle_sha256"] != record["bundle_sha256"]:
            return None
        items, answers, right = list(map(str, data["items"])), list(map(str, data["answers"])), data["right"]
        if not len(items) == len(answers) == len(right):
            return None
        fingerprint, matrices, unread = _read_weights(data, record)
        return Evidence(student, fingerprint, matrices, items, answers, np.asarray(right, dtype=bool), unread)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not the grader's file, or damaged
        return None


def _read_weights(data: dict, record: dict) -> tuple[str | None, list[Matrix], str]:
    """An evidence file's fingerprint and matrices, and why they cannot be compared ("" when they can)."""
    student = record["student"]
    if data.get("format") != EVIDENCE_FORMAT:
        return None, [], f"weights of {student} kept by an older grader (grade again with --force)"
    digest = data["fingerprint"]
    fingerprint = digest if isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest) else None
    matrices = [Matrix.from_json(item) for item in data["matrices"]]
    if None in matrices:
        return None, [], f"weights of {student} damaged in the evidence kept (grade again with --force)"
    if fingerprint is None and not matrices:
        parameters = record.get("parameters")
        more = (
            f" (more than {MAX_READ:,} values)"
            if isinstance(parameters, int) and parameters > MAX_READ
            else ""
        )
        return None, [], f"weights of {student} unreadable{more}"
    return fingerprint, matrices, ""


# --- the three measures ----------------------------------------------------------------------------


def correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two samples (0 when either is constant)."""
    x, y = x - x.mean(), y - y.mean()
    scale = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / scale if scale > 0 else 0.0


def weight_similarity(a: Evidence, b: Evidence) -> tuple[float | None, int]:
    """The median, over the matrices of the model with fewer, of the best :func:`matrix_similarity` with a
    matrix of the same shape in the other (0 where none has it), and how many matrices had one; ``(None, 0)``
    when none had one."""
    if not a.matrices or not b.matrices:
        return None, 0
    fewer, other = (a, b) if len(a.matrices) <= len(b.matrices) else (b, a)
    best = [
        max(
            (matrix_similarity(m, partner) for partner in other.matrices if partner.shape == m.shape),
            default=None,
        )
        for m in fewer.matrices
    ]
    compared = sum(r is not None for r in best)
    return (float(np.median([r or 0.0 for r in best])), compared) if compared else (None, 0)


def matrix_similarity(a: Matrix, b: Matrix) -> float:
    """How alike two matrices of the same shape are, from 0 to 1: the better of two ways to line them up.

    - The same positions: ``|r|`` of the sampled values (a copy trained further keeps its units where they
    were;
      ``|r|``, since flipping the signs of a hidden unit's weights in and out keeps the function).
    - Hidden units matched: :func:`aligned_correlation` (a copy whose units were reordered keeps what each
      unit looks like, wherever it is).
    """
    return min(
        max(abs(correlation(a.sample, b.sample)), aligned_correlation(a, b)), 1.0
    )  # r can round past 1


def aligned_correlation(a: Matrix, b: Matrix) -> float:
    """Pearson's r of ``a``'s block and ``b``'s, with ``b``'s rows and columns put in the order of ``a``'s:
    each of ``a``'s rows takes the row of ``b``'s block whose profile is nearest (the same for columns).

    Rows matched by their magnitudes would correlate by their magnitudes alone, whoever trained them; so what
    is correlated is what the units' scales leave, the blocks' :attr:`~autograder.weights.Matrix.pattern`
    (``log |w|`` less its row's and its column's mean): where each unit's large and small weights are. Not
    negative (0 for less than none); 0 where a block has fewer than two rows or columns (a single row's or
    column's values, matched by magnitude, would line up in any two models).
    """
    if min(a.block.shape) < 2 or a.block.shape != b.block.shape:
        return 0.0
    rows, columns = _nearest(a.rows, b.rows), _nearest(a.columns, b.columns)  # (R,), (C,)
    return max(correlation(a.pattern.ravel(), b.pattern[rows][:, columns].ravel()), 0.0)


def _nearest(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, k), (n, k) -> (n,): for each row of ``a``, the index of the nearest row of ``b`` (Euclidean)."""
    distances = (b * b).sum(axis=1)[None, :] - 2.0 * a @ b.T  # (n, n): |a_i - b_j|^2 less |a_i|^2
    return distances.argmin(axis=1)


class SharedMistakes:
    """The class's wrong answers per hidden item, to set any pair against what the rest of the class predicts.

    For ``n`` models and ``N`` items (every array below is over the whole class; ``compare`` takes the pair
    out again):

    - ``wrong[m, i]``  (n, N) bool: model m's answer on item i is wrong;
    - ``answer[m, i]`` (n, N) int: model m's answer, as a number (equal answers, equal numbers);
    - ``agree[m, i]``  (n, N) int: how many models (m too) gave m's wrong answer on item i; 0 where m is
    right;
    - ``wrong_count[i]`` (N,): models wrong on item i;
    - ``agreeing_pairs[i]`` (N,): pairs of models with the same wrong answer on item i.
    """

    def __init__(self, models: list[Evidence]):
        self.index = {m.student: k for k, m in enumerate(models)}
        self.items = models[0].items if models else []
        numbers: dict[str, int] = {}
        n, N = len(models), len(self.items)
        self.answer = np.array(
            [[numbers.setdefault(a, len(numbers)) for a in m.answers] for m in models], dtype=np.int64
        ).reshape(n, N)
        self.wrong = ~np.array([m.right for m in models], dtype=bool).reshape(n, N)
        key = np.where(
            self.wrong, np.arange(N)[None, :] * (len(numbers) + 1) + self.answer, -1
        )  # (item, answer)
        self.agree = np.zeros_like(self.answer)
        if self.wrong.any():
            _, which, counts = np.unique(key[self.wrong], return_inverse=True, return_counts=True)
            self.agree[self.wrong] = counts[which]
        self.wrong_count = self.wrong.sum(axis=0)
        self.agreeing_pairs = np.where(self.wrong, self.agree - 1, 0).sum(axis=0) / 2.0

    def compare(self, a: str, b: str) -> dict:
        """``O``, ``E``, ``z`` and the items both got wrong the same way, for models ``a`` and ``b``."""
        i, j = self.index[a], self.index[b]
        wrong_a, wrong_b = self.wrong[i], self.wrong[j]  # (N,)
        same = wrong_a & wrong_b & (self.answer[i] == self.answer[j])  # (N,)
        others = len(self.index) - 2
        # The rest of the class: who is wrong on each item, and which of their wrong answers agree.
        wrong_others = self.wrong_count - wrong_a - wrong_b  # (N,)
        pairs_others = (
            self.agreeing_pairs - wrong_a * (self.agree[i] - 1) - wrong_b * (self.agree[j] - 1 - same)
        )
        agreement = float(
            (pairs_others.sum() + COLLISION_PRIOR)  # the class's rate
            / ((wrong_others * (wrong_others - 1) / 2.0).sum() + 1.0)
        )
        if others > 0:  # d_i, smoothed
            d = (wrong_others + wrong_others.sum() / (others * len(wrong_a))) / (others + 1.0)
        else:
            d = np.ones(len(wrong_a))
        difficulty = d / d.mean() if d.mean() > 0 else np.ones(len(wrong_a))  # d_i / mean(d)
        expected, spread = 0.0, 0.0
        for wrong_x, agree_x, wrong_y in (
            (wrong_a, self.agree[i], wrong_b),
            (wrong_b, self.agree[j], wrong_a),
        ):
            c = (np.where(wrong_x, agree_x - 1 - same, 0) + agreement) / (
                wrong_others + 1.0
            )  # c_i: x's answer
            p = np.where(wrong_x, np.clip(wrong_y.mean() * difficulty, 0, 1) * c, 0.0)  # P_y(i) c_i
            if p.sum() >= expected:  # the larger E
                expected, spread = float(p.sum()), math.sqrt(float((p * (1 - p)).sum()))
        observed = int(same.sum())
        z = (observed - expected) / spread if spread > 0 else (math.inf if observed > expected else 0.0)
        return {
            "observed": observed,
            "expected": expected,
            "z": z,
            "others": others,
            "shared": np.flatnonzero(same),
        }


def compare(models: list[Evidence]) -> list[dict]:
    """Every pair of ``models``: each measure, whether it is flagged and why (one row of ``similarity.csv``).

    Shared mistakes compare the models that answered the same hidden items (the most common list)."""
    answering = [m for m in models if m.items]
    lists = [tuple(m.items) for m in answering]
    common = max(set(lists), key=lambda items: (lists.count(items), items)) if lists else ()
    mistakes = SharedMistakes([m for m in answering if tuple(m.items) == common])
    return [
        _pair(a, b, mistakes if a.student in mistakes.index and b.student in mistakes.index else None)
        for k, a in enumerate(models)
        for b in models[k + 1 :]
    ]


def _pair(a: Evidence, b: Evidence, mistakes: SharedMistakes | None) -> dict:
    unread = {e.student: e.unread for e in (a, b) if e.unread}  # whose weights cannot be compared, and why
    identical = None if unread else bool(a.fingerprint) and a.fingerprint == b.fingerprint
    similarity, compared = weight_similarity(a, b)
    row = {
        "student_a": a.student,
        "student_b": b.student,
        "identical_weights": identical,
        "architecture": None if unread else "same" if a.matrices and a.shapes == b.shapes else "different",
        "weight_similarity": similarity,
        "matrices_compared": compared,
        "shared_mistakes": None,
        "expected_shared_mistakes": None,
        "shared_mistakes_z": None,
        "examples": [],
        "not_compared": unread,
    }
    why = []
    if identical:
        why.append(
            "identical weights: the same numbers in every array (a copy, or the same training run: the same "
            "seed, data and settings)"
        )
    elif similarity is not None and similarity >= WEIGHT_THRESHOLD:
        why.append(
            f"near-identical weights: median correlation {similarity:.2f} over {compared} matrices "
            f"(independently trained models stay below {WEIGHT_THRESHOLD}; the same seed gives the same "
            "starting weights)"
        )
    if mistakes is not None:
        shared = mistakes.compare(a.student, b.student)
        row.update(
            shared_mistakes=shared["observed"],
            expected_shared_mistakes=shared["expected"],
            shared_mistakes_z=shared["z"],
        )
        if (
            shared["others"] >= MISTAKES_MIN_OTHERS
            and shared["z"] >= MISTAKES_Z
            and shared["observed"] >= max(MISTAKES_MIN, MISTAKES_RATIO * shared["expected"])
        ):
            why.append(
                f"{shared['observed']} identical wrong answers on hidden items where independent models "
                f"would share about {shared['expected']:.1f} (z = {min(shared['z'], 999):.1f})"
            )
        if why:
            row["examples"] = [
                {"source": mistakes.items[i], "output": a.answers[i]} for i in shared["shared"][:EXAMPLES]
            ]
    row["flagged"] = bool(why)
    row["why"] = "; ".join(why + [f"not compared: {reason}" for reason in unread.values()])
    return row


# --- the outputs -----------------------------------------------------------------------------------


def write_similarity(out: Path, records: list[dict]) -> list[dict]:
    """Compare the graded batch in ``out`` (its records and evidence files); write ``similarity.csv``."""
    from autograder.reports import csv_cell

    pairs = compare(load_evidence(out, records))
    rows = [{**{key: _cell(pair[key]) for key in COLUMNS}, "flagged": _verdict(pair)} for pair in pairs]
    rows.sort(
        key=lambda r: (("yes", "not compared", "no").index(r["flagged"]), r["student_a"], r["student_b"])
    )
    write_csv(
        Path(out) / "similarity.csv",
        COLUMNS,
        [{k: csv_cell(v) for k, v in row.items()} for row in rows],
        private=True,  # the instructor's alone, whatever the folder
    )
    return pairs


def _verdict(pair: dict) -> str:
    """``similarity.csv``'s ``flagged``: ``yes``; ``not compared`` where a model's weights could not be
    compared (and nothing else flagged the pair: "no" would clear what was not looked at); else ``no``."""
    return "yes" if pair["flagged"] else "not compared" if pair["not_compared"] else "no"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.4f}"
    return str(value)
