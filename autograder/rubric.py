"""Rubrics: one TOML file per task that instructors edit (defaults in ``autograder/rubrics/``).

A rubric names the task, the limits a bundle must keep (size, time, memory, processes, parameters), the
architecture it must have (layer classes, checked statically in ``config.json``; which
registered custom layers it may define), how predictions are made (beam width, samples), and
the metrics that earn points: each ``[[metric]]`` has ``thresholds``, a list of ``[value,
points]``, and earns the points of the best threshold reached (``direction = "lower"`` for
metrics where less is better, such as the character error rate).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from autograder.sandbox import Limits
from labs import tasks


class RubricError(ValueError):
    """A rubric file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    points: float
    thresholds: tuple[tuple[float, float], ...]   # (value, points), best first
    direction: str = "higher"

    def points_for(self, value: float) -> float:
        for threshold, points in self.thresholds:
            if (value >= threshold) if self.direction == "higher" else (value <= threshold):
                return points
        return 0.0

    def describe(self, show=lambda value: f"{value:g}") -> str:
        """The thresholds as a rule, ``">= 0.97: 35, >= 0.93: 30"``; ``show`` writes a threshold (as a percentage
        for a rate: :meth:`labs.tasks.Task.show_metric`)."""
        sign = ">=" if self.direction == "higher" else "<="
        return ", ".join(f"{sign} {show(t)}: {p:g}" for t, p in self.thresholds)


@dataclass(frozen=True)
class Rubric:
    task: str
    title: str
    limits: Limits
    bundle_mb: float
    max_parameters: int
    architecture_points: float
    require: tuple[str, ...]          # each entry: "A|B" means one of A or B
    custom_layers: tuple[str, ...]    # registered names a bundle may define in custom_layers.py
    grading: dict
    metrics: tuple[Metric, ...] = field(default_factory=tuple)
    path: str = ""
    scoring_seconds: float = 60.0     # the grader's own time to score one bundle's outputs

    @property
    def max_score(self) -> float:
        return self.architecture_points + sum(m.points for m in self.metrics)


def _need(table: dict, key: str, kind, where: str, default=None):
    if key not in table:
        if default is not None:
            return default
        raise RubricError(f"{where}: missing {key!r}")
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise RubricError(f"{where}: {key!r} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _metric(entry: dict, task: str, where: str) -> Metric:
    name = _need(entry, "name", str, where)
    known = tasks.get(task).metric_names
    if name not in known:
        raise RubricError(f"{where}: unknown metric {name!r} for {task}; choose from: {', '.join(known)}")
    direction = entry.get("direction", "higher")
    if direction not in ("higher", "lower"):
        raise RubricError(f"{where}: direction must be 'higher' or 'lower', got {direction!r}")
    thresholds = _need(entry, "thresholds", list, where)
    pairs = []
    for pair in thresholds:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, (int, float)) for x in pair)):
            raise RubricError(f"{where}: each threshold is [value, points], got {pair!r}")
        pairs.append((float(pair[0]), float(pair[1])))
    pairs.sort(reverse=direction == "higher")
    points = float(_need(entry, "points", (int, float), where))
    if any(p > points for _, p in pairs):
        raise RubricError(f"{where}: a threshold gives more than the metric's {points:g} points")
    return Metric(name, str(entry.get("label", name)), points, tuple(pairs), direction)


def load_rubric(path: str | Path | None = None, task: str | None = None) -> Rubric:
    """Load a rubric file, or the default one of ``task``."""
    if path is None:
        if task not in tasks.names():
            raise RubricError(f"unknown task {task!r}; choose one of: {', '.join(tasks.names())}")
        path = tasks.get(task).rubric_path
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RubricError(f"no rubric file at {str(path)!r}") from None
    except tomllib.TOMLDecodeError as error:
        raise RubricError(f"{path}: not valid TOML ({error})") from None
    where = str(path)
    rubric_task = _need(data, "task", str, where)
    if rubric_task not in tasks.names():
        raise RubricError(f"{where}: unknown task {rubric_task!r}; choose one of: {', '.join(tasks.names())}")
    if task is not None and rubric_task != task:
        raise RubricError(f"{where} is a rubric for {rubric_task}, not {task}")
    limits = _need(data, "limits", dict, where)
    architecture = _need(data, "architecture", dict, where)
    metrics = tuple(_metric(entry, rubric_task, f"{where} [[metric]] #{i + 1}")
                    for i, entry in enumerate(_need(data, "metric", list, where)))
    return Rubric(
        task=rubric_task, title=str(data.get("title", rubric_task)),
        limits=Limits(wall_seconds=float(_need(limits, "wall_seconds", (int, float), f"{where} [limits]")),
                      cpu_seconds=int(_need(limits, "cpu_seconds", int, f"{where} [limits]")),
                      memory_mb=int(_need(limits, "memory_mb", int, f"{where} [limits]")),
                      file_mb=int(_need(limits, "file_mb", int, f"{where} [limits]", Limits.file_mb)),
                      tasks=int(_need(limits, "tasks", int, f"{where} [limits]", Limits.tasks))),
        scoring_seconds=float(_need(limits, "scoring_seconds", (int, float), f"{where} [limits]", 60.0)),
        bundle_mb=float(_need(limits, "bundle_mb", (int, float), f"{where} [limits]")),
        max_parameters=int(_need(limits, "max_parameters", int, f"{where} [limits]")),
        architecture_points=float(_need(architecture, "points", (int, float), f"{where} [architecture]")),
        require=tuple(_need(architecture, "require", list, f"{where} [architecture]")),
        custom_layers=tuple(architecture.get("custom_layers", [])),
        grading=dict(data.get("grading", {})), metrics=metrics, path=where)
