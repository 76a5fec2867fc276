"""Train lab 2's date translator (or its no-attention baseline) with teacher forcing.

    python -m labs train date-translation --out runs/translator
    python -m labs train date-translation --out runs/baseline --no-attention

A run folder holds ``model.keras``, ``vocab.json`` (source and target vocabularies),
``metrics.json`` and ``training_curve.png``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labs.common.files import write_json
from labs.common.pipeline import batches
from labs.common.plots import plot_training_curves
from labs.common.training import (compile_for_training, device_description, fit_timed, load_run_folder,
                                  prepare_run_folder, save_model_atomically, set_seed)
from labs.common.vocab import Vocabulary, save_vocabularies
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import TASK, sample_pairs, vocabularies
from labs.date_translation.model import build_model

TARGET_LENGTH = len("YYYY-MM-DD") + 1   # <s> + 10 characters in, 10 characters + </s> out


def teacher_forcing_arrays(pairs: list[dict], vocabs: dict[str, Vocabulary], source_length: int | None = None):
    """``source`` (n, S), ``target_in`` = ``<s>`` + target (n, 11), ``target_out`` = target + ``</s>`` (n, 11)."""
    source = vocabs["source"].encode_batch([p["source"] for p in pairs], length=source_length)
    target_in = vocabs["target"].encode_batch([p["target"] for p in pairs], add_start=True)
    target_out = vocabs["target"].encode_batch([p["target"] for p in pairs], add_end=True)
    return source, target_in, target_out


def make_dataset(pairs: list[dict], vocabs: dict[str, Vocabulary], batch_size: int, shuffle_seed: int | None = None):
    """A tf.data pipeline of ``((source, target_in), target_out)`` batches."""
    source, target_in, target_out = teacher_forcing_arrays(pairs, vocabs)
    return batches((source, target_in), target_out, batch_size, shuffle_seed)


@dataclass
class TrainedTranslator:
    model: object
    vocabs: dict[str, Vocabulary]
    config: DateTranslationConfig
    history: dict[str, list[float]]   # "train" and "validation" loss (nats per character), one value per epoch
    seconds: float
    device: str


def train(config: DateTranslationConfig = DateTranslationConfig(), out_dir: str | Path | None = None,
          verbose: int = 1) -> TrainedTranslator:
    """Train on pairs from the train split of dates (validation: the dev split); save to ``out_dir``."""
    if out_dir is not None:
        out_dir = prepare_run_folder(out_dir)
    set_seed(config.seed)
    vocabs = vocabularies()
    training_pairs = sample_pairs(config.train_size, config.seed, split="train")
    validation_pairs = sample_pairs(config.val_size, config.seed, split="dev")
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))
    compile_for_training(model, learning_rate=config.learning_rate, epochs=config.epochs,
                         train_size=config.train_size, batch_size=config.batch_size, metrics=["accuracy"])
    device = device_description()
    if verbose:
        kind = "attention model" if config.attention else "baseline (no attention)"
        print(f"Training the {kind} ({model.count_params():,} parameters) on {len(training_pairs):,} pairs, "
              f"{config.epochs} epochs, on the {device}.")
    fit, seconds = fit_timed(model, make_dataset(training_pairs, vocabs, config.batch_size, shuffle_seed=config.seed),
                             make_dataset(validation_pairs, vocabs, config.batch_size), config.epochs, verbose)
    history = {"train": list(map(float, fit.history["loss"])), "validation": list(map(float, fit.history["val_loss"]))}
    run = TrainedTranslator(model, vocabs, config, history, seconds, device)
    if out_dir is not None:
        save_run(run, out_dir)
    return run


def save_run(run: TrainedTranslator, out_dir: Path) -> None:
    import matplotlib.pyplot as plt

    save_model_atomically(run.model, out_dir / "model.keras")
    save_vocabularies(out_dir / "vocab.json", TASK, run.vocabs)
    write_json(out_dir / "metrics.json", {
        "task": TASK, "config": run.config.to_dict(), "device": run.device, "training_seconds": round(run.seconds, 2),
        "parameters": run.model.count_params(),
        "loss_nats_per_char": {name: [round(v, 6) for v in values] for name, values in run.history.items()},
    })
    title = "Date translation" + ("" if run.config.attention else " (baseline, no attention)")
    figure = plot_training_curves(run.history, unit="cross-entropy (nats per character)", title=title,
                                  path=out_dir / "training_curve.png")
    plt.close(figure)


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    return load_run_folder(model_dir, TASK, DateTranslationConfig)
