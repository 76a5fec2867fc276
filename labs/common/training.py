"""Training helpers shared by the labs: seeding, the device in use, and saving a run's files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from labs.common.errors import InputError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's C++ start-up chatter out of lab output


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and TensorFlow, and make TensorFlow's ops deterministic.

    With the same seed, the same data and the same machine, training gives the same weights.
    """
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(int(seed))
    tf.config.experimental.enable_op_determinism()


def compile_for_training(model, *, learning_rate: float, epochs: int, train_size: int, batch_size: int,
                         metrics: list[str] | None = None) -> None:
    """Compile with Adam whose learning rate decays to zero along a cosine over the whole run.

    Late, small steps stop the gradient noise from blurring the fine detail of what the model
    has learned (lab 1: how often September comes up; lab 2: the last digit of a year).
    """
    import math

    import keras

    steps = epochs * math.ceil(train_size / batch_size)
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, decay_steps=steps)
    model.compile(optimizer=keras.optimizers.Adam(schedule), loss="sparse_categorical_crossentropy",
                  metrics=metrics or [])


def fit_timed(model, train_batches, validation_batches, epochs: int, verbose: int):
    """``model.fit`` on tf.data batches; returns ``(keras History, seconds)``."""
    import time

    started = time.perf_counter()
    fit = model.fit(train_batches, validation_data=validation_batches, epochs=epochs, verbose=verbose,
                    shuffle=False)  # the pipeline shuffles
    return fit, time.perf_counter() - started


def train_model(model, config, train_batches, validation_batches, *, examples: int, description: str,
                metrics: list[str] | None = None, verbose: int = 1) -> tuple[dict[str, list[float]], float, str]:
    """Compile ``model`` for ``config`` (its learning rate, epochs, batch size) and train it.

    Returns the loss per epoch in nats (``{"train": [...], "validation": [...]}``), the training
    time in seconds and the device. ``description`` completes "Training ..." in the first line
    printed (with ``verbose``), e.g. ``"an LSTM"`` or ``"the attention model"``.
    """
    compile_for_training(model, learning_rate=config.learning_rate, epochs=config.epochs, train_size=examples,
                         batch_size=config.batch_size, metrics=metrics)
    device = device_description()
    if verbose:
        print(f"Training {description} ({model.count_params():,} parameters) on {examples:,} examples, "
              f"{config.epochs} epochs, on the {device}.")
    fit, seconds = fit_timed(model, train_batches, validation_batches, config.epochs, verbose)
    history = {"train": list(map(float, fit.history["loss"])), "validation": list(map(float, fit.history["val_loss"]))}
    return history, seconds, device


def device_description() -> str:
    """``"GPU (NVIDIA H100 ...)"`` when TensorFlow sees a GPU, else ``"CPU"``."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "CPU"
    details = tf.config.experimental.get_device_details(gpus[0])
    return f"GPU ({details.get('device_name', gpus[0].name)})"


def prepare_run_folder(out_dir: str | Path) -> Path:
    """Create ``out_dir`` (and its parents) for a training run's files, or explain why not."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {str(out_dir)!r} is a file; give a folder for the model and its files")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the folder {str(out_dir)!r}: {error.strerror or error}") from None
    if not os.access(out_dir, os.W_OK):
        raise InputError(f"cannot write into {str(out_dir)!r}: the folder is not writable")
    return out_dir


def save_model_atomically(model, path: str | Path) -> None:
    """Save a Keras model to ``path`` (``.keras``) so that the file is complete or absent."""
    path = Path(path)
    scratch = Path(tempfile.mkdtemp(prefix=".saving-", dir=path.parent))
    try:
        model.save(scratch / path.name)
        os.replace(scratch / path.name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(scratch)


def load_run_folder(model_dir: str | Path, task: str, config_class):
    """Load ``(model, vocabularies, config)`` from a run folder written by a lab's ``train``.

    The model loads in Keras' safe mode; the configuration comes from ``metrics.json`` (the
    defaults when that file is missing).
    """
    from labs.common.vocab import load_vocabularies

    model_dir = Path(model_dir)
    if not (model_dir / "model.keras").is_file():
        raise InputError(f"no trained model in {str(model_dir)!r} (model.keras is missing); "
                         f"train one with: python -m labs train {task} --out {model_dir}")
    vocabularies = load_vocabularies(model_dir / "vocab.json", task=task)
    config = config_class()
    if (model_dir / "metrics.json").is_file():
        saved = json.loads((model_dir / "metrics.json").read_text(encoding="utf-8")).get("config", {})
        config = config_class.from_dict(saved)
    import keras

    return keras.saving.load_model(model_dir / "model.keras", safe_mode=True), vocabularies, config
