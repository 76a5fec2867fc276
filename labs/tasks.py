"""The task registry: one record per lab, looked up by everything else.

The command line, the demo, submission export, the release and every autograder module find a
task here by name and use what its :class:`Task` declares; none of them branches on a task's
name or reaches into a lab's internals. A lab's code is named as ``"module:attribute"`` and
imported only when used (:class:`Ref`): TensorFlow is slow to import, and ``--help`` or the
grader's parent process need none of it.

    from labs import tasks
    task = tasks.get(name)                  # name as the command line spells it: tasks.names()
    run = task.train(task.config.tiny(), out_dir="runs/x")

Adding a lab is one new package (its data, config, model, train, evaluate modules and a
``task.py`` that declares its :class:`Task`) plus one line in :data:`LAB_PACKAGES`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labs.common.errors import InputError
from labs.common.paths import DATASETS_DIR, REPO_ROOT

LANGUAGE_MODEL = "language-model"  # tokens[B, T] -> next-token probabilities[B, T, V]
TRANSLATION = "translation"  # (source[B, S], target_in[B, T]) -> probabilities[B, T, V]
SIGNATURES = {LANGUAGE_MODEL: "tokens (batch, T)", TRANSLATION: "[source (batch, S), target_in (batch, T)]"}
RUBRICS_DIR = REPO_ROOT / "autograder" / "rubrics"

# The labs, in the order the kit presents them; each package's ``task`` module declares ``TASK``.
LAB_PACKAGES = ("labs.date_generation", "labs.date_translation", "labs.name_transliteration")


class Ref:
    """A function or class named ``"package.module:name"``, imported on first use.

    Calling a Ref calls what it names; its other attributes are those of what it names
    (``task.config.tiny()``), and :meth:`resolve` returns the object itself.
    """

    def __init__(self, path: str):
        module, _, name = path.partition(":")
        if not module or not name:
            raise ValueError(f"a Ref names 'module:attribute', got {path!r}")
        self.path = path

    def resolve(self) -> Any:
        module, _, name = self.path.partition(":")
        target: Any = importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        return target

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __repr__(self) -> str:
        return f"Ref({self.path!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Ref) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


@dataclass
class Showcase:
    """What ``make demo`` shows of a trained run: metric lines, and samples or translations."""

    lines: list[str]
    samples: list[str] = field(default_factory=list)
    translations: list = field(default_factory=list)  # labs.common.decoding.Translation, for heatmaps


@dataclass(frozen=True)
class Dataset:
    """A task's public splits under ``datasets/``: what ``data build`` writes and the grader reads."""

    name: str  # the folder (``datasets/NAME``) and the `data` command's name
    columns: tuple[str, ...]
    sizes: dict[str, int]  # split -> rows
    generate: Ref  # (n, seed, split) -> rows (dicts keyed by ``columns``)
    input_column: str = "source"  # what a model reads
    target_column: str = "target"  # what it should write
    breakdown: tuple[str, ...] = ()  # columns the datasheet counts rows by
    folder: Path | None = None  # default: DATASETS_DIR / name

    @property
    def path(self) -> Path:
        return self.folder or DATASETS_DIR / self.name


@dataclass(frozen=True)
class Task:
    """Everything the rest of the kit may know about one lab.

    The shapes of the functions named here, by the task's ``signature``:

    - ``train(config, out_dir=None, verbose=1) -> TrainedRun`` (:mod:`labs.common.training`);
    - ``load(run_folder) -> (model, vocabs, config)``;
    - ``decode``: for a translation task ``(model, vocabs, texts, *, beam=1) -> [Translation]``;
      for a language model ``(model, vocabs, n, *, temperature=1.0, top_k=None, greedy=False,
      seed=0) -> [str]``;
    - ``grading_metrics(result, targets) -> {metric: value}``: the rubric's metrics of a checked
      result (translation: ``{"outputs": [[best, ...], ...]}``; language model: ``{"samples": [...],
      "next_token_probabilities": [...], "next_token_guesses": [...]}``) against the hidden set's target rows;
    - ``graded_answers(result, targets) -> {"items": [...], "answers": [...], "right": [...]}``: each
      hidden item (as text), what the model answered there and whether that was right: what model
      similarity compares;
    - ``hidden_rows(n, seed, public_inputs) -> rows`` with ``source``, ``target`` and ``hidden_columns``;
    - ``commands(commands)``: adds the task's own commands to ``python -m labs``
      (:class:`labs.common.arguments.Commands`);
    - ``showcase(run, tiny) -> Showcase``: what ``make demo`` shows of a trained run.
    """

    name: str
    title: str
    signature: str  # LANGUAGE_MODEL or TRANSLATION
    max_output_length: int  # tokens a decoder writes at most, </s> included
    dataset: Dataset
    vocabularies: Ref  # () -> {"source"?: Vocabulary, "target": Vocabulary}
    vocabulary_names: tuple[str, ...]  # the names in that dict, and in every vocab.json of the task
    config: Ref  # the configuration dataclass (with .tiny() and .demo())
    train: Ref
    load: Ref
    decode: Ref
    grading_metrics: Ref
    metric_names: tuple[str, ...]  # what a rubric may score
    graded_answers: Ref  # (checked result, target rows) -> per hidden item: answer, right or not
    hidden_rows: Ref
    rates: tuple[str, ...] = ()  # the metrics that are fractions (accuracy, CER): shown as percentages
    hidden_columns: tuple[str, ...] = ()  # target columns of a hidden set beyond ``target`` (for breakdowns)
    description: str = ""  # what `train TASK` trains, for --help
    hidden_size: int = 1000
    commands: Ref | None = None
    showcase: Ref | None = None  # (run, tiny) -> Showcase: what the demo shows
    feedback_examples: Ref | None = None  # (dev rows, n) -> the public examples shown in feedback
    attention_view: str | None = None  # "module:function": model -> (probabilities, attention weights)
    custom_layer_module: Path | None = None  # the file a bundle carries as custom_layers.py
    layer_selftest: Ref | None = (
        None  # (layer file) -> [failed check: message]: export runs it before writing
    )
    student_kit: Ref | None = None  # (kit, student kit) -> words no released file may hold
    next_step: str = ""  # what to run after training, with {out} for the run folder
    advice: dict[str, str] = field(default_factory=dict)  # metric -> what to try, in a student's feedback
    class_scatter: tuple[str, str] | None = None  # two metrics the class report plots per student (x, y)
    rubric: Path | None = None  # default: autograder/rubrics/NAME.toml

    @property
    def rubric_path(self) -> Path:
        return self.rubric or RUBRICS_DIR / f"{self.name}.toml"

    @property
    def translates(self) -> bool:
        return self.signature == TRANSLATION

    def show_metric(self, name: str, value: float) -> str:
        """A metric's value as people read it: a rate as a percentage, as the labs print it (``3.37%``), any
        other value with four decimals (``0.8312``). Data files (CSV, JSON) keep the number itself."""
        from labs.common.metrics import percent

        return percent(value) if name in self.rates else f"{value:.4f}"


_registry: dict[str, Task] = {}


def _load() -> dict[str, Task]:
    if not _registry:
        for package in LAB_PACKAGES:
            task = importlib.import_module(f"{package}.task").TASK
            _registry[task.name] = task
    return _registry


def all_tasks() -> list[Task]:
    """Every registered task, in the kit's order."""
    return list(_load().values())


def names() -> tuple[str, ...]:
    return tuple(_load())


def get(name: str) -> Task:
    """The task called ``name``; InputError naming the choices otherwise."""
    tasks = _load()
    if name not in tasks:
        raise InputError(f"unknown task {name!r}; choose one of: {', '.join(tasks)}")
    return tasks[name]


def register(task: Task) -> None:
    """Add ``task`` (a course's own lab, or a test's), after the kit's."""
    _load()[task.name] = task


def unregister(name: str) -> None:
    _load().pop(name, None)
