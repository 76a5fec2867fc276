"""Train lab 2's date translator (or its no-attention baseline, or another attention) with teacher forcing.

    python -m labs train date-translation --out runs/translator
    python -m labs train date-translation --out runs/baseline --no-attention          # = --attention none
    python -m labs train date-translation --out runs/bahdanau --attention bahdanau --cell simple

Read :func:`train` top to bottom: data, model, compile, fit, save. A run folder holds
``model.keras``, ``vocab.json`` (source and target vocabularies), ``metrics.json`` and
``training_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

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
)
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import TASK, sample_pairs, vocabularies
from labs.date_translation.model import build_model


def train(
    config: DateTranslationConfig = DateTranslationConfig(),
    out_dir: str | Path | None = None,
    verbose: int = 1,
) -> TrainedRun:
    """Train on pairs from the train split of dates (validation: the dev split); save to ``out_dir``."""
    out_dir = prepare_run_folder(out_dir, config) if out_dir is not None else None
    set_seed(config.seed)

    # Data: ("27 January 2018", "2018-01-27") pairs, fresh from the generator; no test day is ever seen.
    vocabs = vocabularies()  # {"source": every character a format writes, "target": ISO}
    train_batches = translation_batches(
        sample_pairs(config.train_size, config.seed, split="train"),
        vocabs,
        config.batch_size,
        shuffle_seed=config.seed,
    )
    validation_batches = translation_batches(
        sample_pairs(config.val_size, config.seed, split="dev"), vocabs, config.batch_size
    )

    # Model: (source (batch, S), target_in (batch, T)) -> probabilities (batch, T, V).
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))

    # Compile and fit: Adam with a cosine-decaying learning rate; teacher forcing (target_in is the true
    # prefix).
    compile_for_training(model, config, train_batches, metrics=["accuracy"])

    # Save, after every whole epoch and at the end: the model, its vocabularies, the losses per epoch and the
    # training curve.
    def save(history: dict, seconds: float) -> TrainedRun:
        run = TrainedRun(
            TASK.name, model, vocabs, config, history, "nats per character", seconds, device_description()
        )
        if out_dir is not None:
            save_run(
                run,
                out_dir,
                history_key="loss_nats_per_char",
                title="Date translation"
                + (f" ({config.attention} attention)" if config.attends else " (baseline, no attention)"),
            )
        return run

    history, seconds = fit(
        model,
        train_batches,
        validation_batches,
        config,
        verbose=verbose,
        each_epoch=save,
        description=f"{config.attention} attention" if config.attends else "the baseline (no attention)",
    )
    return save(history, seconds)


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    return load_run_folder(model_dir, TASK.name, DateTranslationConfig)
