"""Turn a sandboxed model's predictions into metrics (the labs' own functions) and rubric points."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from autograder.rubric import Rubric


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


def name_transliteration_metrics(outputs: list[list[str]], targets: list[dict]) -> dict:
    from labs.name_transliteration import evaluate

    summary = evaluate.summary(evaluate.results_table(targets, outputs))
    metrics = dict(summary["all"])
    for stratum, headline in summary["per_stratum"].items():
        metrics.update({f"{key}_{stratum}": value for key, value in headline.items() if key != "examples"})
    return metrics


def compute_metrics(task: str, data: dict, targets: list[dict]) -> dict:
    if task == "date-generation":
        return date_generation_metrics(data["samples"], data["next_token_probabilities"])
    if task == "date-translation":
        return date_translation_metrics(data["outputs"], targets)
    return name_transliteration_metrics(data["outputs"], targets)


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
