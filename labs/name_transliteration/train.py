"""Train homework 3.1's name transliterator with teacher forcing.

    python -m labs train name-transliteration --out runs/names

Read :func:`train` top to bottom: data, model, compile, fit, save. Training names come fresh
from the name generator's train split (the public ``datasets/thai-names/train.csv`` is one such
draw); validation names from the dev split. A run folder holds ``model.keras``, ``vocab.json``,
``metrics.json`` and ``training_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

from labs.common.errors import InputError
from labs.common.files import check_out_folder
from labs.common.pipeline import translation_batches
from labs.common.training import (
    TrainedRun,
    compile_for_training,
    device_description,
    fit,
    load_run_folder,
    prepare_run_folder,
    save_run,
    set_seed,
    trained_run_from_folder,
)
from labs.name_transliteration.config import NameTransliterationConfig
from labs.name_transliteration.data import DEFAULT_TABLE, TASK, sample_names, vocabularies
from labs.name_transliteration.model import build_model, key_value_attention_class, load_layer
from labs.name_transliteration.selftest import failures

HISTORY_KEY = "loss_nats_per_char"  # metrics.json's losses per epoch: written by train, read by load_trained


def train(
    config: NameTransliterationConfig = NameTransliterationConfig(),
    out_dir: str | Path | None = None,
    verbose: int = 1,
    word_table: str | Path = DEFAULT_TABLE,
) -> TrainedRun:
    """Train on names from the train split (validation: the dev split); save to ``out_dir`` when given.

    ``word_table``: the words and spellings the training names are drawn from (the benchmarks try others)."""
    if out_dir is not None:
        check_out_folder(out_dir)  # at once; the folder itself is made once the layer passes its self-test
    set_seed(config.seed)

    # Data: ("สมชาย ใจดี", "Somchai Jaidee") pairs; training names use every seen word before repeating one,
    # and a share of them a dictionary word in place of one name, for more letter patterns to learn from.
    # Batches hold names of like length, cut to their longest: no work on padding.
    vocabs = vocabularies()  # {"source": Thai letters and the space, "target": ASCII}
    train_names = sample_names(
        config.train_size,
        config.seed,
        split="train",
        table=word_table,
        dictionary_share=config.dictionary_share,
    )
    train_batches = translation_batches(
        train_names, vocabs, config.batch_size, shuffle_seed=config.seed, sort_window=config.sort_window
    )
    validation_batches = translation_batches(
        sample_names(config.val_size, config.seed, split="dev"),
        vocabs,
        config.batch_size,
        sort_window=config.sort_window,
    )

    # Model: the encoder-decoder with the key-value attention of homework/kv_attention.py, read afresh
    # (the run records which version of the file it was trained with: export checks it) and self-tested:
    # minutes of training are no way to find a broken layer, and a refused run leaves no folder behind.
    layer_sha256 = load_layer()
    failed = failures()
    if failed:
        raise InputError(
            f"your layer fails the self-test ({len(failed)} check(s); first: {failed[0]}). Run the "
            "self-test (python -m labs selftest homework, or the notebook's cell), fix the file, then train"
        )
    out_dir = prepare_run_folder(out_dir, config) if out_dir is not None else None
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))

    # Compile and fit: Adam with a cosine-decaying learning rate; teacher forcing.
    compile_for_training(
        model,
        config,
        train_batches,
        metrics=["accuracy"],
        average=config.weight_average,
        smoothing=config.label_smoothing,
    )

    # Save, after every whole epoch and at the end: the model, its vocabularies, the losses per epoch and the
    # training curve (with label smoothing, the loss against the smoothed target, higher than a plain run's).
    def save(history: dict, seconds: float) -> TrainedRun:
        run = TrainedRun(
            TASK.name,
            model,
            vocabs,
            config,
            history,
            loss_unit(config),
            seconds,
            device_description(),
            layer_sha256,
        )
        if out_dir is not None:
            save_run(
                run,
                out_dir,
                history_key=HISTORY_KEY,
                title="Thai -> English names (key-value attention)",
            )
        return run

    history, seconds = fit(
        model,
        train_batches,
        validation_batches,
        config,
        verbose=verbose,
        each_epoch=save,
        description=f"the key-value attention model ({config.score} score)",
    )
    return save(history, seconds)


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    key_value_attention_class()  # registers the layer, so that Keras can rebuild the model
    return load_run_folder(model_dir, TASK.name, NameTransliterationConfig)


def loss_unit(config: NameTransliterationConfig) -> str:
    """What the losses per epoch are measured in (with label smoothing, against the smoothed target)."""
    smoothed = f", smoothed target ({config.label_smoothing:g})" if config.label_smoothing else ""
    return f"nats per character{smoothed}"


def load_trained(model_dir: str | Path = "runs/names") -> TrainedRun:
    """A run folder that :func:`train` (or ``python -m labs train name-transliteration``) wrote, as the
    :class:`TrainedRun` that ``train`` returned: the notebook's way to use a model trained in a terminal."""
    try:
        model, vocabs, config = load_run(model_dir)
    except InputError as error:
        raise InputError(
            f"{error} (in the notebook: set TRAIN = True in the training cell to train a model there)"
        ) from None
    return trained_run_from_folder(
        model_dir, TASK.name, model, vocabs, config, history_key=HISTORY_KEY, unit=loss_unit(config)
    )
