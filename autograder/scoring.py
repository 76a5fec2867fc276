"""Turn a sandboxed model's predictions into metrics (the labs' own functions) and rubric points."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

from autograder.rubric import Rubric

CHUNK = 100   # outputs scored between two looks at the clock


class ScoringTimeout(Exception):
    """Scoring one bundle's outputs took longer than the rubric allows."""


@dataclass
class Line:
    """One line of the rubric as applied to one bundle."""

    name: str
    label: str
    points: float
    max_points: float
    value: float | None = None
    rule: str = ""
    message: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def date_generation_metrics(samples: list[str], next_token_probabilities: list[list[float]]) -> dict:
    from labs.date_generation.data import IsoDateDistribution
    from labs.date_generation.evaluate import uniqueness, validity

    probabilities = [p for row in next_token_probabilities for p in row]
    bits = -sum(math.log2(min(max(p, 1e-30), 1.0)) for p in probabilities) / max(len(probabilities), 1)
    bound = IsoDateDistribution().entropy_bits_per_token
    return {"validity": validity(samples), "uniqueness": uniqueness(samples), "bits_per_token": bits,
            "cross_entropy_gap": bits / bound - 1, "samples": len(samples)}


def date_translation_metrics(outputs: list[list[str]], targets: list[dict]) -> dict:
    from labs.date_translation import evaluate

    best = [candidates[0] if candidates else "" for candidates in outputs]
    truth = [t["target"] for t in targets]
    per_locale = {}
    for locale in sorted({t["locale"] for t in targets}):
        rows = [i for i, t in enumerate(targets) if t["locale"] == locale]
        per_locale[locale] = evaluate.exact_match([best[i] for i in rows], [truth[i] for i in rows])
    return {"exact_match": evaluate.exact_match(best, truth), **{f"{f}_accuracy": v for f, v in
                                                                 evaluate.field_accuracy(best, truth).items()},
            "per_locale": per_locale, "examples": len(best)}


def name_transliteration_metrics(outputs: list[list[str]], targets: list[dict], deadline: float | None = None) -> dict:
    import pandas as pd

    from labs.name_transliteration import evaluate

    tables = []
    for first in range(0, len(targets), CHUNK):   # edit distances cost the square of the lengths: mind the clock
        if deadline is not None and time.monotonic() > deadline:
            raise ScoringTimeout
        tables.append(evaluate.results_table(targets[first:first + CHUNK], outputs[first:first + CHUNK]))
    summary = evaluate.summary(pd.concat(tables, ignore_index=True))
    metrics = dict(summary["all"])
    for stratum, headline in summary["per_stratum"].items():
        metrics.update({f"{key}_{stratum}": value for key, value in headline.items() if key != "examples"})
    return metrics


def compute_metrics(task: str, data: dict, targets: list[dict], seconds: float | None = None) -> dict:
    """The rubric's metrics of a checked result; raises :class:`ScoringTimeout` after ``seconds``."""
    deadline = None if seconds is None else time.monotonic() + seconds
    if task == "date-generation":
        return date_generation_metrics(data["samples"], data["next_token_probabilities"])
    if task == "date-translation":
        return date_translation_metrics(data["outputs"], targets)
    return name_transliteration_metrics(data["outputs"], targets, deadline)


def architecture_line(rubric: Rubric, classes: set[str], parameters: int | None) -> Line:
    """The architecture item: required layer classes present (statically) and the parameter budget kept."""
    missing = [need for need in rubric.require if not set(need.split("|")) & classes]
    rule = f"uses {' and '.join(r.replace('|', ' or ') for r in rubric.require)}; at most {rubric.max_parameters:,} parameters"
    if missing:
        return Line("architecture", "required architecture", 0.0, rubric.architecture_points, rule=rule,
                    message=f"the model has no {', '.join(m.replace('|', ' or ') for m in missing)} layer")
    if parameters is not None and parameters > rubric.max_parameters:
        return Line("architecture", "required architecture", 0.0, rubric.architecture_points, float(parameters), rule,
                    f"the model has {parameters:,} parameters, over the budget of {rubric.max_parameters:,}")
    return Line("architecture", "required architecture", rubric.architecture_points, rubric.architecture_points,
                None if parameters is None else float(parameters), rule, "")


def metric_lines(rubric: Rubric, metrics: dict | None) -> list[Line]:
    """One line per rubric metric; all zero when there are no metrics (the model could not be run)."""
    lines = []
    for metric in rubric.metrics:
        value = None if metrics is None else metrics.get(metric.name)
        points = 0.0 if value is None or not math.isfinite(value) else metric.points_for(value)
        lines.append(Line(metric.name, metric.label, points, metric.points, value, metric.describe()))
    return lines
