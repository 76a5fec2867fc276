"""Train lab 1's date language model with teacher forcing, and save the run.

    python -m labs train date-generation --out runs/dates        # defaults: under two minutes on a CPU

Read :func:`train` top to bottom: data, model, compile, fit, save. A run folder holds
``model.keras``, ``vocab.json``, ``metrics.json`` (configuration, losses per epoch in bits per
token, time, device) and ``training_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

from labs.common.metrics import nats_to_bits
from labs.common.pipeline import language_model_batches
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
from labs.date_generation.config import DateGenerationConfig
from labs.date_generation.data import TASK, IsoDateDistribution, vocabularies
from labs.date_generation.model import build_model

# Validation and held-out dates come from the seeds after the training seed: with the default
# seed 1 they are exactly the public dev (seed 2) and test (seed 3) splits.
VALIDATION_SEED_OFFSET, HELD_OUT_SEED_OFFSET = 1, 2


def distribution(config: DateGenerationConfig) -> IsoDateDistribution:
    return IsoDateDistribution(config.start_date, config.end_date)


def train(
    config: DateGenerationConfig = DateGenerationConfig(), out_dir: str | Path | None = None, verbose: int = 1
) -> TrainedRun:
    """Train on fresh samples from the date generator; save the run to ``out_dir`` when given."""
    out_dir = prepare_run_folder(out_dir, config) if out_dir is not None else None
    set_seed(config.seed)

    # Data: dates drawn from the generator, as "<s> 2018-03-19" in, "2018-03-19 </s>" out.
    dates = distribution(config)
    vocabs = vocabularies()  # {"target": digits and "-"}
    train_batches = language_model_batches(
        dates.sample(config.train_size, config.seed),
        vocabs["target"],
        config.batch_size,
        shuffle_seed=config.seed,
    )
    validation_batches = language_model_batches(
        dates.sample(config.val_size, config.seed + VALIDATION_SEED_OFFSET),
        vocabs["target"],
        config.batch_size,
    )

    # Model: tokens (batch, T) -> next-token probabilities (batch, T, V).
    model = build_model(config, len(vocabs["target"]))

    # Compile and fit: Adam with a cosine-decaying learning rate, cross-entropy of the next token.
    compile_for_training(model, config, train_batches)

    # Save, after every whole epoch and at the end: the model, its vocabulary, the losses in bits per
    # token beside the data's entropy.
    def save(nats: dict, seconds: float) -> TrainedRun:
        history = {name: [nats_to_bits(v) for v in values] for name, values in nats.items()}
        run = TrainedRun(
            TASK.name, model, vocabs, config, history, "bits per token", seconds, device_description()
        )
        if out_dir is not None:
            bound = dates.entropy_bits_per_token
            save_run(
                run,
                out_dir,
                title="Date generation: teacher-forced loss",
                history_key="bits_per_token",
                extra={"entropy_bound_bits_per_token": round(bound, 5)},
                bound=bound,
                bound_label="entropy of the data",
            )
        return run

    nats, seconds = fit(
        model,
        train_batches,
        validation_batches,
        config,
        verbose=verbose,
        each_epoch=save,
        description=f"{'an' if config.cell == 'lstm' else 'a'} {config.cell.upper()}",
    )
    return save(nats, seconds)


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    return load_run_folder(model_dir, TASK.name, DateGenerationConfig)
