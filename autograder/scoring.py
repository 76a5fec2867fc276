"""Turn a sandboxed model's predictions into metrics (the labs' own functions, named by the task registry) and
rubric points."""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import asdict, dataclass

from autograder.rubric import Rubric
from labs import tasks


class ScoringTimeout(Exception):
    """Scoring one bundle's outputs took longer than the rubric allows."""


@dataclass
class Line:
    """One line of the rubric as applied to one bundle: what was measured, shown as what the label says."""

    name: str
    label: str  # the rubric's label, and for a metric the set it was scored on
    points: float
    max_points: float
    value: float | None = None  # the metric's value (the architecture's: its parameter count)
    rule: str = ""
    message: str = ""
    shown: str = ""  # the value as a reader takes it: "99.50%", "uses AdditiveAttention; 13,039 parameters"

    def to_dict(self) -> dict:
        return asdict(self)


def compute_metrics(task: str, result: dict, targets: list[dict], seconds: float | None = None) -> dict:
    """The task's grading metrics of a checked result; :class:`ScoringTimeout` after ``seconds`` of the
    grader's time.

    The metrics are the lab's own functions (the ones the lab prints). The budget is a wait: the
    result's outputs are capped in length and number (:mod:`autograder.claims`), so the work
    left behind after a timeout is bounded too.
    """
    grading_metrics = tasks.get(task).grading_metrics
    if seconds is None:
        return grading_metrics(result, targets)
    answer: dict = {}

    def score():
        try:
            answer["metrics"] = grading_metrics(result, targets)
        except Exception as error:  # raised again in the grader's thread, inside the bundle's barrier
            answer["error"] = error

    worker = threading.Thread(target=score, name="scoring", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ScoringTimeout
    if "error" in answer:
        raise answer["error"]
    return answer["metrics"]


def architecture_line(
    rubric: Rubric, classes: set[str], parameters: int | None, counted: bool = True
) -> Line:
    """The architecture item: required layer classes on the model's graph, and the parameter budget kept.

    Parameters that could not be counted (``None``) earn no points: a bundle whose weights the reader cannot
    read would otherwise be spared the budget that the same model, readable, fails. ``counted``: whether the
    reader ran (a bundle refused before it, for its code or the machine's isolation, was never counted)."""
    required = [need.replace("|", " or ") for need in rubric.require]
    missing = [need.replace("|", " or ") for need in rubric.require if not set(need.split("|")) & classes]
    rule = f"uses {' and '.join(required)}; at most {rubric.max_parameters:,} parameters"
    found = [need for need in required if need not in missing]
    count = "parameters unknown" if parameters is None else f"{parameters:,} parameters"
    shown = f"uses {', '.join(found)}; {count}" if found else count
    line = Line(
        "architecture",
        "required architecture",
        rubric.architecture_points,
        rubric.architecture_points,
        None if parameters is None else float(parameters),
        rule,
        "",
        shown,
    )
    if missing:
        line.points, line.message = 0.0, f"the model has no {', '.join(missing)} layer"
    elif parameters is None and not counted:
        line.points, line.message = (
            0.0,
            "the parameter budget was not checked: the bundle was refused before that",
        )
    elif parameters is None:  # fail closed: unreadable weights must not buy the budget's points
        line.points, line.message = (
            0.0,
            (
                "the grader could not count the parameters in model.keras, so the budget "
                "cannot be checked; export the model with the kit's export"
            ),
        )
    elif parameters > rubric.max_parameters:
        line.points, line.message = (
            0.0,
            (f"the model has {parameters:,} parameters, over the budget of {rubric.max_parameters:,}"),
        )
    return line


def metric_lines(rubric: Rubric, metrics: dict | None, scored_on: str = "the hidden test set") -> list[Line]:
    """One line per rubric metric, labelled with the set it was scored on; all zero without metrics
    (the model could not be run). The value and the thresholds are shown as the labs print them (a rate as a
    percentage: :meth:`labs.tasks.Task.show_metric`); ``value`` keeps the number."""
    task = tasks.get(rubric.task)
    lines = []
    for metric in rubric.metrics:
        value = None if metrics is None else metrics.get(metric.name)
        usable = value is not None and math.isfinite(value)
        show = functools.partial(task.show_metric, metric.name)
        lines.append(
            Line(
                metric.name,
                f"{metric.label}, on {scored_on}",
                metric.points_for(value) if usable else 0.0,
                metric.points,
                value,
                metric.describe(show),
                shown=show(value) if usable else "",
            )
        )
    return lines
