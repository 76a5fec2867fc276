"""Lab 2 in the task registry (:mod:`labs.tasks`): what the rest of the kit knows about it."""

from labs.tasks import TRANSLATION, Dataset, Ref, Task

TASK = Task(
    name="date-translation",
    title="Lab 2: date translation with attention",
    description="Train lab 2's encoder-decoder: with --attention, one of the lecture's attentions "
    "(--no-attention: "
    "its baseline).",
    signature=TRANSLATION,
    max_output_length=11,  # ten characters and </s>
    dataset=Dataset(
        "date-pairs",
        columns=("source", "target", "format_id", "locale"),
        sizes={"train": 30_000, "dev": 5_000, "test": 10_000},
        generate=Ref("labs.date_translation.data:generate"),
        breakdown=("format_id", "locale"),
    ),
    vocabularies=Ref("labs.date_translation.data:vocabularies"),
    vocabulary_names=("source", "target"),
    config=Ref("labs.date_translation.config:DateTranslationConfig"),
    train=Ref("labs.date_translation.train:train"),
    load=Ref("labs.date_translation.train:load_run"),
    decode=Ref("labs.date_translation.translate:translate"),
    grading_metrics=Ref("labs.date_translation.evaluate:grading_metrics"),
    graded_answers=Ref("labs.date_translation.evaluate:graded_answers"),
    metric_names=("exact_match",),
    rates=("exact_match",),
    hidden_rows=Ref("labs.date_translation.data:hidden_rows"),
    hidden_columns=("format_id", "locale"),
    commands=Ref("labs.date_translation.commands:add_commands"),
    showcase=Ref("labs.date_translation.evaluate:showcase"),
    attention_view="labs.date_translation.model:attention_model",
    next_step='python -m labs translate --model {out} "27 January 2018" "๒๗ ม.ค. ๖๑" --plot attention.png',
    advice={
        "exact_match": "Look at the formats your model gets wrong (python -m labs evaluate "
        "date-translation): more "
        "training data, more epochs, or a larger attention size usually fix the hardest ones.",
    },
)
