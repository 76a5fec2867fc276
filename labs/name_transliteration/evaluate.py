"""Judge a name transliterator; the autograder scores with these same functions.

A Thai name has more than one fair English spelling (``Thanaphong`` and ``Tanapong``), so most
metrics accept any spelling in a row's ``target`` or ``alternatives`` column:

- **exact match**: the output is the main target, character for character;
- **accuracy**: the output is one of the accepted spellings;
- **character error rate (CER)**: edits (insertions, deletions, substitutions) from the output
  to the nearest accepted spelling, summed over names, divided by the summed length of those
  spellings;
- **mean F-score** (NEWS shared task): per name, with ``LCS`` the longest common subsequence of
  the output and a spelling, ``P = LCS / len(output)``, ``R = LCS / len(spelling)``,
  ``F = 2PR / (P + R)``, taking the accepted spelling with the best F; then the mean over names;
- **MRR** (mean reciprocal rank) over the top-k outputs of a beam search: ``1 / rank`` of the
  first accepted output, 0 when none is; and **top-k accuracy**: some output in the top k is accepted.

Each is reported for all names, for the ``seen`` stratum (both words occur in training) and the
``unseen`` stratum (a word never seen in training), and by name length.
"""

from __future__ import annotations

import pandas as pd

from labs.common.metrics import edit_distance, lcs_length, share

STRATA = ("seen", "unseen")
LENGTH_BINS = (0, 10, 15, 20, 25, 100)   # Thai characters, the space included


def accepted_spellings(row: dict) -> list[str]:
    """The main target, then the alternatives (the ``|``-separated column)."""
    alternatives = row.get("alternatives") or ""
    return [row["target"], *(a for a in alternatives.split("|") if a)]


def exact_match(predictions: list[str], targets: list[str]) -> float:
    """Share of predictions equal to the main target."""
    return share(p == t for p, t in zip(predictions, targets, strict=True))


def accuracy(predictions: list[str], rows: list[dict]) -> float:
    """Share of predictions that are one of their row's accepted spellings."""
    return share(p in accepted_spellings(row) for p, row in zip(predictions, rows, strict=True))


def nearest_spelling(prediction: str, row: dict) -> tuple[str, int]:
    """The accepted spelling with the fewest edits from ``prediction``, and that number of edits."""
    return min(((s, edit_distance(prediction, s)) for s in accepted_spellings(row)), key=lambda pair: pair[1])


def character_error_rate(predictions: list[str], rows: list[dict]) -> float:
    """Edits to the nearest accepted spelling, over the characters of those spellings (0 = perfect).

    >>> character_error_rate(["Somchay Jaidee"], [{"target": "Somchai Jaidee", "alternatives": ""}])
    0.07142857142857142
    """
    nearest = [nearest_spelling(p, row) for p, row in zip(predictions, rows, strict=True)]
    characters = sum(len(spelling) for spelling, _ in nearest)
    return sum(edits for _, edits in nearest) / characters if characters else 0.0


def f_score(prediction: str, row: dict) -> float:
    """NEWS F-score of one output: the best LCS-based F against any accepted spelling (1 = exact)."""
    best = 0.0
    for spelling in accepted_spellings(row):
        common = lcs_length(prediction, spelling)
        if common:
            precision, recall = common / len(prediction), common / len(spelling)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def mean_f_score(predictions: list[str], rows: list[dict]) -> float:
    scores = [f_score(p, row) for p, row in zip(predictions, rows, strict=True)]
    return sum(scores) / len(scores) if scores else 0.0


def reciprocal_rank(candidates: list[str], row: dict) -> float:
    """``1 / rank`` of the first accepted spelling among ``candidates`` (best first); 0 when none is."""
    accepted = set(accepted_spellings(row))
    return next((1 / rank for rank, c in enumerate(candidates, start=1) if c in accepted), 0.0)


def mean_reciprocal_rank(candidate_lists: list[list[str]], rows: list[dict]) -> float:
    ranks = [reciprocal_rank(c, row) for c, row in zip(candidate_lists, rows, strict=True)]
    return sum(ranks) / len(ranks) if ranks else 0.0


def results_table(rows: list[dict], candidate_lists: list[list[str]]) -> pd.DataFrame:
    """One row per name: source, target, prediction (the best candidate), stratum, length and every metric.

    ``candidate_lists`` holds each name's outputs, best first (one for greedy decoding, k for beam search).
    """
    records = []
    for row, candidates in zip(rows, candidate_lists, strict=True):
        prediction = candidates[0] if candidates else ""
        spelling, edits = nearest_spelling(prediction, row)
        records.append({
            "source": row["source"], "target": row["target"], "prediction": prediction,
            "stratum": row.get("stratum", "seen"), "length": len(row["source"]),
            "exact": prediction == row["target"], "correct": prediction in accepted_spellings(row),
            "edits": edits, "reference_length": len(spelling), "f_score": f_score(prediction, row),
            "reciprocal_rank": reciprocal_rank(candidates, row),
            "in_top_k": reciprocal_rank(candidates, row) > 0, "candidates": len(candidates),
        })
    return pd.DataFrame.from_records(records)


def _headline(table: pd.DataFrame) -> dict:
    if table.empty:
        return {"examples": 0}
    return {"examples": int(len(table)), "exact_match": float(table["exact"].mean()),
            "accuracy": float(table["correct"].mean()),
            "cer": float(table["edits"].sum() / max(int(table["reference_length"].sum()), 1)),
            "mean_f_score": float(table["f_score"].mean()), "mrr": float(table["reciprocal_rank"].mean()),
            f"top_{int(table['candidates'].max())}_accuracy": float(table["in_top_k"].mean())}


def by_length(table: pd.DataFrame) -> pd.DataFrame:
    """Accuracy, CER and count per bin of name length (Thai characters)."""
    bins = pd.cut(table["length"], LENGTH_BINS, right=True).astype(str)
    grouped = table.assign(length_bin=bins).groupby("length_bin", observed=True)
    frame = grouped.agg(accuracy=("correct", "mean"), edits=("edits", "sum"), characters=("reference_length", "sum"),
                        examples=("correct", "size"))
    frame["cer"] = frame["edits"] / frame["characters"]
    order = sorted(frame.index, key=lambda b: float(b.strip("(]").split(",")[0]))
    return frame.loc[order, ["accuracy", "cer", "examples"]]


def summary(table: pd.DataFrame) -> dict:
    """The headline numbers for all names, per stratum and by length (what ``evaluate`` saves as JSON)."""
    return {"all": _headline(table),
            "per_stratum": {s: _headline(table[table["stratum"] == s]) for s in STRATA if (table["stratum"] == s).any()},
            "by_length": by_length(table).to_dict(orient="index") if len(table) else {}}


def format_summary(result: dict, title: str = "name transliteration") -> str:
    def line(name: str, h: dict) -> str:
        top = next((f", {k.replace('_', ' ')} {v:.2%}" for k, v in h.items() if k.startswith("top_")), "")
        return (f"{name}: accuracy {h['accuracy']:.2%} (exact match {h['exact_match']:.2%}), CER {h['cer']:.2%}, "
                f"mean F {h['mean_f_score']:.4f}, MRR {h['mrr']:.4f}{top} on {h['examples']:,} names")

    lines = [line(title, result["all"])]
    lines += [line(f"  {stratum} words", h) for stratum, h in result["per_stratum"].items()]
    lines.append("  by length: " + ", ".join(f"{b} {v['accuracy']:.1%}" for b, v in result["by_length"].items()))
    return "\n".join(lines)
