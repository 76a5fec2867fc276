"""What every lab's ``train.py`` shares: seeding, the compile recipe, a timed fit, and the run folder.

A lab's ``train`` reads top to bottom (data, model, compile, fit, save); the steps that are the
same for every lab are the functions here:

    set_seed(config.seed)
    model = build_model(...)
    compile_for_training(model, config, train_batches)
    history, seconds = fit(model, train_batches, validation_batches, config, description="an LSTM")
    run = TrainedRun(TASK, model, vocabs, config, history, "nats per character", seconds, device_description())
    save_run(run, out_dir, title="...", history_key="loss_nats_per_char")
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from labs.common.errors import InputError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's C++ start-up chatter out of lab output


@dataclass
class TrainedRun:
    """What every lab's ``train`` returns: the model and everything needed to use, judge or save it."""

    task: str
    model: object
    vocabs: dict                          # name ("source", "target") -> Vocabulary
    config: object                        # the lab's configuration dataclass
    history: dict[str, list[float]]       # "train" and "validation" loss, one value per epoch, in ``unit``
    unit: str                             # "bits per token" or "nats per character"
    seconds: float
    device: str

    def summary(self) -> str:
        """One line for the end of training."""
        return (f"Trained in {self.seconds:.1f} s on the {self.device}; validation loss "
                f"{self.history['validation'][-1]:.4f} {self.unit}.")


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and TensorFlow, and make TensorFlow's ops deterministic.

    With the same seed, the same data and the same machine, training gives the same weights.
    """
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(int(seed))
    tf.config.experimental.enable_op_determinism()


def compile_for_training(model, config, train_batches, *, metrics: list[str] | None = None) -> None:
    """Compile with Adam whose learning rate decays to zero along a cosine over the whole run.

    ``config`` gives ``learning_rate`` and ``epochs``; the run is ``epochs`` passes over
    ``train_batches``. Late, small steps stop the gradient noise from blurring the fine detail of
    what the model has learned (lab 1: how often September comes up; lab 2: the last digit of a year).
    """
    import keras

    steps = config.epochs * int(train_batches.cardinality())
    schedule = keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps=steps)
    model.compile(optimizer=keras.optimizers.Adam(schedule), loss="sparse_categorical_crossentropy",
                  metrics=metrics or [])


def fit(model, train_batches, validation_batches, config, *, description: str,
        verbose: int = 1) -> tuple[dict[str, list[float]], float]:
    """``model.fit`` for ``config.epochs``; returns the loss per epoch in nats and the seconds it took.

    ``description`` completes "Training ..." in the first line printed (with ``verbose``), e.g.
    ``"an LSTM"`` or ``"the attention model"``.
    """
    if verbose:
        print(f"Training {description} ({model.count_params():,} parameters), {config.epochs} epochs of "
              f"{int(train_batches.cardinality()):,} batches, on the {device_description()}.")
    started = time.perf_counter()
    fitted = model.fit(train_batches, validation_data=validation_batches, epochs=config.epochs, verbose=verbose,
                       shuffle=False)  # the pipeline shuffles
    seconds = time.perf_counter() - started
    return {"train": list(map(float, fitted.history["loss"])),
            "validation": list(map(float, fitted.history["val_loss"]))}, seconds


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


def save_run(run: TrainedRun, out_dir: str | Path, *, title: str, history_key: str, extra: dict | None = None,
             bound: float | None = None, bound_label: str = "lower bound") -> None:
    """Write ``model.keras``, ``vocab.json``, ``metrics.json`` and ``training_curve.png`` into ``out_dir``.

    ``metrics.json`` holds the task, the configuration, the device, the training time, the
    parameters, the losses per epoch under ``history_key``, and ``extra``.
    """
    import matplotlib.pyplot as plt

    from labs.common.files import write_json
    from labs.common.plots import plot_training_curves
    from labs.common.vocab import save_vocabularies

    out_dir = Path(out_dir)
    save_model_atomically(run.model, out_dir / "model.keras")
    save_vocabularies(out_dir / "vocab.json", run.task, run.vocabs)
    write_json(out_dir / "metrics.json", {
        "task": run.task, "config": run.config.to_dict(), "device": run.device,
        "training_seconds": round(run.seconds, 2), "parameters": run.model.count_params(),
        history_key: {name: [round(v, 6) for v in values] for name, values in run.history.items()}, **(extra or {}),
    })
    figure = plot_training_curves(run.history, unit=f"cross-entropy ({run.unit})", bound=bound, bound_label=bound_label,
                                  title=title, path=out_dir / "training_curve.png")
    plt.close(figure)


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
