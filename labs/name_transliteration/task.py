"""Homework 3.1 in the task registry (:mod:`labs.tasks`): what the rest of the kit knows about it."""

from labs.common.paths import REPO_ROOT
from labs.tasks import TRANSLATION, Dataset, Ref, Task

TASK = Task(
    name="name-transliteration",
    title="Homework 3.1: Thai names with key-value attention",
    description="Train homework 3.1's encoder-decoder with the key-value attention layer of "
    "homework/kv_attention.py.",
    signature=TRANSLATION,
    max_output_length=64,  # characters, </s> included; the longest name in the table needs 47
    dataset=Dataset(
        "thai-names",
        columns=("source", "target", "alternatives", "gender", "stratum"),
        sizes={"train": 15_000, "dev": 2_000, "test": 4_000},
        generate=Ref("labs.name_transliteration.data:generate"),
        breakdown=("stratum", "gender"),
    ),
    vocabularies=Ref("labs.name_transliteration.data:vocabularies"),
    vocabulary_names=("source", "target"),
    config=Ref("labs.name_transliteration.config:NameTransliterationConfig"),
    train=Ref("labs.name_transliteration.train:train"),
    load=Ref("labs.name_transliteration.train:load_run"),
    decode=Ref("labs.name_transliteration.transliterate:transliterate"),
    grading_metrics=Ref("labs.name_transliteration.evaluate:grading_metrics"),
    graded_answers=Ref("labs.name_transliteration.evaluate:graded_answers"),
    metric_names=(
        "accuracy",
        "accuracy_seen",
        "accuracy_unseen",
        "cer",
        "cer_seen",
        "cer_unseen",
        "exact_match",
        "mean_f_score",
        "mrr",
    ),
    rates=("accuracy", "accuracy_seen", "accuracy_unseen", "cer", "cer_seen", "cer_unseen", "exact_match"),
    hidden_rows=Ref("labs.name_transliteration.data:hidden_rows"),
    hidden_columns=("alternatives", "stratum"),
    commands=Ref("labs.name_transliteration.commands:add_commands"),
    showcase=Ref("labs.name_transliteration.evaluate:showcase"),
    feedback_examples=Ref("labs.name_transliteration.evaluate:feedback_examples"),
    attention_view="labs.common.seq2seq:attention_model",
    custom_layer_module=REPO_ROOT / "homework" / "kv_attention.py",
    layer_selftest=Ref("labs.name_transliteration.selftest:failures"),
    student_kit=Ref("labs.name_transliteration.data:student_kit"),
    next_step='python -m labs translate --model {out} "สมชาย ใจดี" --beam 3 --plot attention.png',
    advice={
        "accuracy_seen": "Names whose words occur in training should be nearly perfect: train longer, or "
        "check the "
        "self-test (python -m labs selftest homework).",
        "accuracy_unseen": "Unseen words need rules, not memory: more epochs, a larger value_dim, or dropout "
        "help the "
        "model learn how Thai letters sound.",
        "cer_unseen": "Near misses on unseen words: compare your outputs with the accepted spellings in the "
        "dev set.",
    },
    class_scatter=(
        "accuracy_seen",
        "accuracy_unseen",
    ),  # who memorised names, who learned the letters' sounds
)
