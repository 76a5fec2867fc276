"""Lab 1 in the task registry (:mod:`labs.tasks`): what the rest of the kit knows about it."""

from labs.tasks import LANGUAGE_MODEL, Dataset, Ref, Task

TASK = Task(
    name="date-generation",
    title="Lab 1: date generation",
    description="Train lab 1's character RNN on generated ISO dates.",
    signature=LANGUAGE_MODEL,
    max_output_length=14,  # ten characters and </s>, and room for a model that does not stop
    dataset=Dataset(
        "iso-dates",
        columns=("date",),
        sizes={"train": 30_000, "dev": 5_000, "test": 10_000},
        generate=Ref("labs.date_generation.data:public_split"),
        input_column="date",
        target_column="date",
    ),
    vocabularies=Ref("labs.date_generation.data:vocabularies"),
    vocabulary_names=("target",),
    config=Ref("labs.date_generation.config:DateGenerationConfig"),
    train=Ref("labs.date_generation.train:train"),
    load=Ref("labs.date_generation.train:load_run"),
    decode=Ref("labs.date_generation.sampling:sample"),
    grading_metrics=Ref("labs.date_generation.evaluate:grading_metrics"),
    graded_answers=Ref("labs.date_generation.evaluate:graded_answers"),
    metric_names=("validity", "uniqueness", "cross_entropy_gap"),
    rates=("validity", "uniqueness", "cross_entropy_gap"),  # the gap is relative: 0.05 is 5% above the bound
    hidden_rows=Ref("labs.date_generation.data:hidden_rows"),
    hidden_size=2000,
    commands=Ref("labs.date_generation.commands:add_commands"),
    showcase=Ref("labs.date_generation.evaluate:showcase"),
    next_step="python -m labs sample --model {out} --n 20 --temperature 0.8",
    advice={
        "validity": "Many samples are not real dates: train longer, or lower the learning rate at the end of "
        "training "
        "(lab 1's cosine decay), and check the month-day combinations in your samples.",
        "uniqueness": "Your samples repeat: sample at temperature 1.0 rather than greedily, and check that "
        "the model "
        "is not collapsing onto a few years.",
        "cross_entropy_gap": "Your model is less certain than the data allows: train on more fresh dates or "
        "for more "
        "epochs.",
    },
)
