"""Rubrics: one TOML file per task that instructors edit (defaults in ``autograder/rubrics/``).

A rubric names the task, the limits a bundle must keep (size, time, memory, processes, parameters), the
architecture it must have (layer classes, checked statically in ``config.json``; which
registered custom layers it may define), how predictions are made (beam width, samples), and
the metrics that earn points: each ``[[metric]]`` has ``thresholds``, a list of ``[value,
points]``, and earns the points of the best threshold reached (``direction = "lower"`` for
metrics where less is better, such as the character error rate).

Two optional tables: ``[late]``, the penalty for a submission the LMS marks late (``percent`` of the maximum
off, flat; ``per_day_percent`` for each started day after ``due``, where the LMS gives the submission's time;
at most ``max_percent``), and ``[gradescope]``, what Gradescope's results carry (``visibility``;
``leaderboard``: the columns, each ``"score"`` or a metric, optionally ``"NAME:asc"``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
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
    thresholds: tuple[tuple[float, float], ...]  # (value, points), best first
    direction: str = "higher"

    def points_for(self, value: float) -> float:
        for threshold, points in self.thresholds:
            if (value >= threshold) if self.direction == "higher" else (value <= threshold):
                return points
        return 0.0

    def describe(self, show=lambda value: f"{value:g}") -> str:
        """The thresholds as a rule, ``">= 0.97: 35, >= 0.93: 30"``; ``show`` writes a threshold (as a
        percentage for a rate: :meth:`labs.tasks.Task.show_metric`)."""
        sign = ">=" if self.direction == "higher" else "<="
        return ", ".join(f"{sign} {show(t)}: {p:g}" for t, p in self.thresholds)


@dataclass(frozen=True)
class LatePolicy:
    """What a late submission loses, in percent of the maximum score (see the module's docstring)."""

    percent: float = 0.0
    per_day_percent: float = 0.0
    due: dt.datetime | None = None
    max_percent: float = 100.0

    def describe(self) -> str:
        parts = [f"{self.percent:g} %"] if self.percent else []
        if self.per_day_percent:
            parts.append(f"{self.per_day_percent:g} % a day after {self.due.isoformat()}")
        return " + ".join(parts) + (f", at most {self.max_percent:g} %" if self.max_percent < 100 else "")


GRADESCOPE_VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")


@dataclass(frozen=True)
class Rubric:
    task: str
    title: str
    limits: Limits
    bundle_mb: float
    max_parameters: int
    architecture_points: float
    require: tuple[str, ...]  # each entry: "A|B" means one of A or B
    custom_layers: tuple[str, ...]  # registered names a bundle may define in custom_layers.py
    grading: dict
    metrics: tuple[Metric, ...] = field(default_factory=tuple)
    path: str = ""
    scoring_seconds: float = 60.0  # the grader's own time to score one bundle's outputs
    late: LatePolicy | None = None  # no [late] table: lateness is shown, never charged
    visibility: str = "visible"  # Gradescope's results
    leaderboard: tuple[tuple[str, str], ...] | None = (
        None  # (name, "asc"|"desc"); None: the score and every metric
    )

    @property
    def max_score(self) -> float:
        return self.architecture_points + sum(m.points for m in self.metrics)

    def grading_digest(self) -> str:
        """SHA-256 of what decides a bundle's run and points: the rubric file's tables but ``[late]`` and
        ``[gradescope]`` (a late penalty or a leaderboard added later needs no model to run again)."""
        data = tomllib.loads(Path(self.path).read_text(encoding="utf-8"))
        kept = {key: value for key, value in data.items() if key not in ("late", "gradescope")}
        return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def _need(table: dict, key: str, kind, where: str, default=None):
    if key not in table:
        if default is not None:
            return default
        raise RubricError(f"{where}: missing {key!r}")
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise RubricError(
            f"{where}: {key!r} must be {_KINDS.get(kind, getattr(kind, '__name__', kind))}, got {value!r}"
        )
    return value


_KINDS = {
    (int, float): "a number",
    int: "a whole number",
    float: "a number",
    str: "text (in quotes)",
    list: "a list [...]",
    dict: "a table",
    bool: "true or false",
}
TABLES = ("task", "title", "limits", "architecture", "grading", "metric", "late", "gradescope")


def _known_keys(table: dict, known: tuple[str, ...], where: str) -> None:
    """A key the rubric does not use is a typo to say, not to ignore (``leaderbord`` would leave no
    leaderboard)."""
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise RubricError(f"{where}: unknown key {unknown[0]!r}; it takes {', '.join(known)}")


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


def _late(table: dict, where: str) -> LatePolicy:
    _known_keys(table, ("percent", "per_day_percent", "due", "max_percent"), where)
    values = {}
    for key in ("percent", "per_day_percent", "max_percent"):
        value = float(_need(table, key, (int, float), where, getattr(LatePolicy, key)))
        if not 0 <= value <= 100:
            raise RubricError(
                f"{where}: {key!r} is a percentage of the maximum score, 0 to 100; got {value:g}"
            )
        values[key] = value
    due = table.get("due")
    if isinstance(due, str):
        try:
            due = dt.datetime.fromisoformat(due)
        except ValueError:
            raise RubricError(
                f"{where}: 'due' must be a date and time such as 2026-12-01T23:59:00+07:00, got {due!r}"
            ) from None
    if isinstance(due, dt.date) and not isinstance(due, dt.datetime):
        due = dt.datetime.combine(due, dt.time(23, 59, 59))
    if due is not None and not isinstance(due, dt.datetime):
        raise RubricError(f"{where}: 'due' must be a date and time, got {due!r}")
    if due is not None and due.tzinfo is None:
        raise RubricError(
            f"{where}: 'due' needs its UTC offset (2026-12-01T23:59:00+07:00), or the hour is ambiguous"
        )
    if values["per_day_percent"] and due is None:
        raise RubricError(f"{where}: 'per_day_percent' counts days after 'due': give 'due' too")
    return LatePolicy(due=due, **values)


def _gradescope(table: dict, metrics: tuple[Metric, ...], where: str):
    _known_keys(table, ("visibility", "leaderboard"), where)
    visibility = _need(table, "visibility", str, where, "visible")
    if visibility not in GRADESCOPE_VISIBILITY:
        raise RubricError(
            f"{where}: 'visibility' must be one of {', '.join(GRADESCOPE_VISIBILITY)}; got {visibility!r}"
        )
    if "leaderboard" not in table:
        return visibility, None
    directions = {"score": "desc", **{m.name: "asc" if m.direction == "lower" else "desc" for m in metrics}}
    columns = []
    for entry in _need(table, "leaderboard", list, where):
        name, _, order = str(entry).partition(":")
        if name not in directions:
            raise RubricError(
                f"{where}: the leaderboard's {name!r} is neither 'score' nor a metric of this rubric "
                f"({', '.join(directions)})"
            )
        if order not in ("", "asc", "desc"):
            raise RubricError(f"{where}: {entry!r}: the order after ':' is 'asc' or 'desc'")
        if any(name == taken for taken, _ in columns):
            raise RubricError(f"{where}: the leaderboard names {name!r} twice")
        columns.append((name, order or directions[name]))
    if not columns:
        raise RubricError(
            f"{where}: the leaderboard names no column; leave 'leaderboard' out for the score and "
            "every metric"
        )
    return visibility, tuple(columns)


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
    _known_keys(data, TABLES, where)
    rubric_task = _need(data, "task", str, where)
    if rubric_task not in tasks.names():
        raise RubricError(f"{where}: unknown task {rubric_task!r}; choose one of: {', '.join(tasks.names())}")
    if task is not None and rubric_task != task:
        raise RubricError(f"{where} is a rubric for {rubric_task}, not {task}")
    limits = _need(data, "limits", dict, where)
    architecture = _need(data, "architecture", dict, where)
    metrics = tuple(
        _metric(entry, rubric_task, f"{where} [[metric]] #{i + 1}")
        for i, entry in enumerate(_need(data, "metric", list, where))
    )
    late = _late(_need(data, "late", dict, where), f"{where} [late]") if "late" in data else None
    visibility, leaderboard = _gradescope(
        _need(data, "gradescope", dict, where, {}), metrics, f"{where} [gradescope]"
    )
    return Rubric(
        task=rubric_task,
        title=str(data.get("title", rubric_task)),
        limits=Limits(
            wall_seconds=float(_need(limits, "wall_seconds", (int, float), f"{where} [limits]")),
            cpu_seconds=int(_need(limits, "cpu_seconds", int, f"{where} [limits]")),
            memory_mb=int(_need(limits, "memory_mb", int, f"{where} [limits]")),
            file_mb=int(_need(limits, "file_mb", int, f"{where} [limits]", Limits.file_mb)),
            tasks=int(_need(limits, "tasks", int, f"{where} [limits]", Limits.tasks)),
        ),
        scoring_seconds=float(_need(limits, "scoring_seconds", (int, float), f"{where} [limits]", 60.0)),
        bundle_mb=float(_need(limits, "bundle_mb", (int, float), f"{where} [limits]")),
        max_parameters=int(_need(limits, "max_parameters", int, f"{where} [limits]")),
        architecture_points=float(_need(architecture, "points", (int, float), f"{where} [architecture]")),
        require=tuple(_need(architecture, "require", list, f"{where} [architecture]")),
        custom_layers=tuple(architecture.get("custom_layers", [])),
        grading=dict(data.get("grading", {})),
        metrics=metrics,
        path=where,
        late=late,
        visibility=visibility,
        leaderboard=leaderboard,
    )
