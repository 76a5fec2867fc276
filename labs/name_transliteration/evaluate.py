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
``unseen`` stratum (a word never seen in training), and by name length. The headline figures
(:func:`headline`) are computed by the functions below, and so are the grades
(:func:`grading_metrics`): one definition of each metric.
"""

from __future__ import annotations

import pandas as pd

from labs.common.metrics import edit_distance, lcs_length, percent, share

STRATA = ("seen", "unseen")
LENGTH_BINS = (0, 10, 15, 20, 25, 100)  # Thai characters, the space included


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
    accepted = accepted_spellings(row)
    if prediction in accepted:  # no edits: the usual case, and no table to fill
        return prediction, 0
    return min(((s, edit_distance(prediction, s)) for s in accepted), key=lambda pair: pair[1])


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
    accepted = accepted_spellings(row)
    if prediction and prediction in accepted:  # P = R = 1
        return 1.0
    best = 0.0
    for spelling in accepted:
        common = lcs_length(prediction, spelling)
        if common:
            precision, recall = common / len(prediction), common / len(spelling)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def mean_f_score(predictions: list[str], rows: list[dict]) -> float:
    """The NEWS mean F-score: :func:`f_score` of each output, averaged over names (1 = every output exact)."""
    scores = [f_score(p, row) for p, row in zip(predictions, rows, strict=True)]
    return sum(scores) / len(scores) if scores else 0.0


def reciprocal_rank(candidates: list[str], row: dict) -> float:
    """``1 / rank`` of the first accepted spelling among ``candidates`` (best first); 0 when none is."""
    accepted = set(accepted_spellings(row))
    return next((1 / rank for rank, c in enumerate(candidates, start=1) if c in accepted), 0.0)


def top_k_accuracy(candidate_lists: list[list[str]], rows: list[dict]) -> float:
    """Share of names with an accepted spelling among their outputs (best first, up to k of them)."""
    return share(reciprocal_rank(c, row) > 0 for c, row in zip(candidate_lists, rows, strict=True))


def mean_reciprocal_rank(candidate_lists: list[list[str]], rows: list[dict]) -> float:
    ranks = [reciprocal_rank(c, row) for c, row in zip(candidate_lists, rows, strict=True)]
    return sum(ranks) / len(ranks) if ranks else 0.0


def results_table(rows: list[dict], candidate_lists: list[list[str]]) -> pd.DataFrame:
    """One row per name: source, target, prediction (the best candidate), stratum, length and every metric.

    ``candidate_lists`` holds each name's outputs, best first (one for greedy decoding, k for beam search)."""
    return pd.DataFrame.from_records(_per_name(rows, candidate_lists))


def _per_name(rows: list[dict], candidate_lists: list[list[str]]) -> list[dict]:
    """Each name's figures, from the functions above: computed once, then summed per stratum and per length
    (a model that writes 64 letters for every name costs a table of 64 x 20 cells per spelling)."""
    records = []
    for row, candidates in zip(rows, candidate_lists, strict=True):
        prediction = candidates[0] if candidates else ""
        spelling, edits = nearest_spelling(prediction, row)
        rank = reciprocal_rank(candidates, row)
        records.append(
            {
                "source": row["source"],
                "target": row["target"],
                "prediction": prediction,
                "stratum": row.get("stratum", "seen"),
                "length": len(row["source"]),
                "exact": prediction == row["target"],
                "correct": prediction in accepted_spellings(row),
                "edits": edits,
                "reference_length": len(spelling),
                "f_score": f_score(prediction, row),
                "reciprocal_rank": rank,
                "in_top_k": rank > 0,
                "candidates": len(candidates),
            }
        )
    return records


def headline(records: list[dict]) -> dict:
    """The headline figures of a set of names, from their figures (:func:`_per_name`); these are what rubrics
    score. Each is the same sum, in the same order, as the metric's own function (:func:`accuracy`,
    :func:`character_error_rate`, ...) makes it."""
    if not records:
        return {"examples": 0}
    n, k = len(records), max(r["candidates"] for r in records)
    characters = sum(r["reference_length"] for r in records)
    return {
        "examples": n,
        "exact_match": share(r["exact"] for r in records),
        "accuracy": share(r["correct"] for r in records),
        "cer": sum(r["edits"] for r in records) / characters if characters else 0.0,
        "mean_f_score": sum(r["f_score"] for r in records) / n,
        "mrr": sum(r["reciprocal_rank"] for r in records) / n,
        f"top_{k}_accuracy": share(r["in_top_k"] for r in records),
    }


def by_length(table: pd.DataFrame) -> pd.DataFrame:
    """Accuracy, CER and count per bin of name length (Thai characters)."""
    bins = pd.cut(table["length"], LENGTH_BINS, right=True).astype(str)
    grouped = table.assign(length_bin=bins).groupby("length_bin", observed=True)
    frame = grouped.agg(
        accuracy=("correct", "mean"),
        edits=("edits", "sum"),
        characters=("reference_length", "sum"),
        examples=("correct", "size"),
    )
    frame["cer"] = frame["edits"] / frame["characters"]
    order = sorted(frame.index, key=lambda b: float(b.strip("(]").split(",")[0]))
    return frame.loc[order, ["accuracy", "cer", "examples"]]


def summary(rows: list[dict], candidate_lists: list[list[str]], *, lengths: bool = True) -> dict:
    """The headline figures for all names, per stratum and (``lengths``) by length: what ``evaluate`` saves
    as JSON. Each name's figures are worked out once."""
    records = _per_name(rows, candidate_lists)
    strata = {stratum: [r for r in records if r["stratum"] == stratum] for stratum in STRATA}
    figures = {
        "all": headline(records),
        "per_stratum": {stratum: headline(picked) for stratum, picked in strata.items() if picked},
    }
    if lengths:
        figures["by_length"] = (
            by_length(pd.DataFrame.from_records(records)).to_dict(orient="index") if rows else {}
        )
    return figures


def grading_metrics(result: dict, targets: list[dict]) -> dict:
    """The rubric's metrics of a graded model's outputs (best first) against the hidden rows: the headline
    figures of all names, and per stratum as ``accuracy_seen``, ``cer_unseen``, ..."""
    figures = summary(targets, result["outputs"], lengths=False)
    metrics = dict(figures["all"])
    for stratum, values in figures["per_stratum"].items():
        metrics.update({f"{name}_{stratum}": value for name, value in values.items() if name != "examples"})
    return metrics


def graded_answers(result: dict, targets: list[dict]) -> dict:
    """Each hidden name's best spelling and whether it is an accepted one: what model similarity compares."""
    best = [candidates[0] if candidates else "" for candidates in result["outputs"]]
    return {
        "items": [row["source"] for row in targets],
        "answers": best,
        "right": [b in accepted_spellings(row) for b, row in zip(best, targets, strict=True)],
    }


def feedback_examples(rows: list[dict], n: int) -> list[dict]:
    """The public examples every student's feedback shows: half with seen words, half with unseen ones."""
    return [r for r in rows if r["stratum"] == "seen"][: n // 2] + [
        r for r in rows if r["stratum"] == "unseen"
    ][: n - n // 2]


SHOWN = ["สมชาย ใจดี", "ปวีณา รัตนพงศ์"]


def showcase(run, tiny: bool):
    """What ``make demo`` shows of a trained run: the NEWS metrics on the public test split (beam 3), two
    heatmaps."""
    from labs.common.files import read_csv
    from labs.common.paths import DATASETS_DIR
    from labs.name_transliteration.transliterate import transliterate
    from labs.tasks import Showcase

    test = read_csv(DATASETS_DIR / "thai-names" / "test.csv")
    test = test[:100] + test[-100:] if tiny else test  # both strata
    results = transliterate(run.model, run.vocabs, [r["source"] for r in test], beam=3)
    return Showcase(
        format_summary(summary(test, [r.alternatives for r in results])).splitlines(),
        translations=transliterate(run.model, run.vocabs, SHOWN),
    )


def format_summary(result: dict, title: str = "name transliteration") -> str:
    def line(name: str, h: dict) -> str:
        top = next(
            (f", {k.replace('_', ' ')} {percent(v)}" for k, v in h.items() if k.startswith("top_")), ""
        )
        return (
            f"{name}: accuracy {percent(h['accuracy'])} (exact match {percent(h['exact_match'])}), "
            f"CER {percent(h['cer'])}, mean F {h['mean_f_score']:.4f}, MRR {h['mrr']:.4f}{top} "
            f"on {h['examples']:,} names"
        )

    lines = [line(title, result["all"])]
    lines += [line(f"  {stratum} words", h) for stratum, h in result["per_stratum"].items()]
    lines.append(
        "  by length: " + ", ".join(f"{b} {v['accuracy']:.1%}" for b, v in result["by_length"].items())
    )
    return "\n".join(lines)
