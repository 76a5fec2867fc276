"""Judge a date translator; the autograder scores with these same functions.

- **exact match**: the output is the target, character for character;
- **per format and per locale**: exact match for each of the 40 formats and 3 locales;
- **per field**: year, month and day right on their own (an output that is not ``YYYY-MM-DD``
  gets no field right);
- **by input length**: where a model without attention, squeezing the whole date into one
  vector, loses most.

:func:`grading_metrics` gives the autograder the same figures from a graded model's outputs."""

from __future__ import annotations

import re

import pandas as pd

from labs.common.metrics import percent, share

FIELDS = {"year": slice(0, 4), "month": slice(5, 7), "day": slice(8, 10)}
_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}")
LENGTH_BINS = (0, 10, 15, 20, 25, 30, 100)


def exact_match(predictions: list[str], targets: list[str]) -> float:
    """Share of predictions equal to their target."""
    return share(p == t for p, t in zip(predictions, targets, strict=True))


def field_accuracy(predictions: list[str], targets: list[str]) -> dict[str, float]:
    """Share of predictions with the right year, month and day (each on its own)."""
    return {
        field: share(
            bool(_SHAPE.fullmatch(p)) and p[part] == t[part]
            for p, t in zip(predictions, targets, strict=True)
        )
        for field, part in FIELDS.items()
    }


def results_table(rows: list[dict], predictions: list[str]) -> pd.DataFrame:
    """One row per example: source, target, prediction, format, locale, length, correct."""
    table = pd.DataFrame(rows)[["source", "target", "format_id", "locale"]].copy()
    table["prediction"] = predictions
    table["length"] = table["source"].str.len()
    table["correct"] = table["prediction"] == table["target"]
    return table


def breakdown(table: pd.DataFrame, by: str) -> pd.DataFrame:
    """Exact match and count per value of ``by`` (``format_id``, ``locale`` or ``length_bin``), worst
    first."""
    if by == "length_bin":
        table = table.assign(length_bin=pd.cut(table["length"], LENGTH_BINS, right=True).astype(str))
    grouped = table.groupby(by, observed=True)["correct"].agg(exact_match="mean", examples="size")
    return grouped.sort_values(["exact_match", "examples"], ascending=[True, False])


def summary(table: pd.DataFrame) -> dict:
    """The headline numbers as a flat dict (what ``evaluate`` saves as JSON)."""
    fields = field_accuracy(table["prediction"].tolist(), table["target"].tolist())
    return {
        "examples": int(len(table)),
        "exact_match": float(table["correct"].mean()),
        **{f"{field}_accuracy": value for field, value in fields.items()},
        "per_locale": breakdown(table, "locale")["exact_match"].to_dict(),
        "per_format": breakdown(table, "format_id")["exact_match"].to_dict(),
    }


def format_summary(result: dict, title: str = "date translation") -> str:
    lines = [
        f"{title}: exact match {percent(result['exact_match'])} on {result['examples']:,} held-out pairs",
        "fields: " + ", ".join(f"{f} {percent(result[f'{f}_accuracy'])}" for f in FIELDS),
        "per locale: " + ", ".join(f"{k} {percent(v)}" for k, v in sorted(result["per_locale"].items())),
    ]
    worst = sorted(result["per_format"].items(), key=lambda kv: kv[1])[:5]
    lines.append("hardest formats: " + ", ".join(f"{k} {percent(v)}" for k, v in worst))
    return "\n".join(lines)


def compare_by_length(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Exact match by input length for several models side by side (columns: model names)."""
    columns = {name: breakdown(table, "length_bin")["exact_match"] for name, table in tables.items()}
    counts = breakdown(next(iter(tables.values())), "length_bin")["examples"]
    frame = pd.DataFrame(columns)
    frame["examples"] = counts
    order = sorted(frame.index, key=lambda b: float(b.strip("(]").split(",")[0]))
    return frame.loc[order]


def grading_metrics(result: dict, targets: list[dict]) -> dict:
    """The rubric's metrics of a graded model's best outputs against the hidden set's rows (``target``,
    ``locale``)."""
    best = [candidates[0] if candidates else "" for candidates in result["outputs"]]
    truth = [t["target"] for t in targets]
    per_locale = {
        locale: exact_match(
            [best[i] for i, t in enumerate(targets) if t["locale"] == locale],
            [truth[i] for i, t in enumerate(targets) if t["locale"] == locale],
        )
        for locale in sorted({t["locale"] for t in targets})
    }
    return {
        "exact_match": exact_match(best, truth),
        **{f"{field}_accuracy": value for field, value in field_accuracy(best, truth).items()},
        "per_locale": per_locale,
        "examples": len(best),
    }


def graded_answers(result: dict, targets: list[dict]) -> dict:
    """Each hidden input's best output and whether it is the target: what model similarity compares."""
    best = [candidates[0] if candidates else "" for candidates in result["outputs"]]
    return {
        "items": [t["source"] for t in targets],
        "answers": best,
        "right": [b == t["target"] for b, t in zip(best, targets, strict=True)],
    }


SHOWN = ["Saturday, 27 January 2018", "๒๗ ม.ค. ๒๕๖๑"]


def showcase(run, tiny: bool):
    """What ``make demo`` shows of a trained run: exact match on the public test split, and two heatmaps."""
    from labs.common.files import read_csv
    from labs.common.paths import DATASETS_DIR
    from labs.date_translation.translate import translate
    from labs.tasks import Showcase

    test = read_csv(DATASETS_DIR / "date-pairs" / "test.csv")[: 200 if tiny else 2000]
    table = results_table(
        test, [t.output for t in translate(run.model, run.vocabs, [r["source"] for r in test])]
    )
    return Showcase(
        format_summary(summary(table), "attention model").splitlines(),
        translations=translate(run.model, run.vocabs, SHOWN),
    )
