"""The toy lab's one registry entry."""

from pathlib import Path

from labs.tasks import TRANSLATION, Dataset, Ref, Task


def make_task(datasets: Path) -> Task:
    """The toy task, its public splits in ``datasets`` (the tests write them there)."""
    return Task(
        name="toy-reversal",
        title="Toy lab: reverse the digits",
        signature=TRANSLATION,
        max_output_length=8,
        dataset=Dataset(
            "toy-reversal",
            columns=("source", "target"),
            sizes={"train": 200, "dev": 50, "test": 50},
            generate=Ref("tests.toy_task.lab:generate"),
            folder=datasets / "toy-reversal",
        ),
        vocabularies=Ref("tests.toy_task.lab:vocabularies"),
        vocabulary_names=("source", "target"),
        config=Ref("tests.toy_task.lab:ToyConfig"),
        train=Ref("tests.toy_task.lab:train"),
        load=Ref("tests.toy_task.lab:load_run"),
        decode=Ref("tests.toy_task.lab:translate"),
        grading_metrics=Ref("tests.toy_task.lab:grading_metrics"),
        metric_names=("exact_match",),
        graded_answers=Ref("labs.date_translation.evaluate:graded_answers"),  # the best output against target
        hidden_rows=Ref("tests.toy_task.lab:hidden_rows"),
        hidden_size=40,
        rubric=Path(__file__).with_name("rubric.toml"),
    )
