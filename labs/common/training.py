"""What every lab's ``train.py`` shares: seeding, the compile recipe, a timed fit, and the run folder.

A lab's ``train`` reads top to bottom (data, model, compile, fit, save); the steps that are the
same for every lab are the functions here:

    set_seed(config.seed)
    model = build_model(...)
    compile_for_training(model, config, train_batches)

    def save(history, seconds) -> TrainedRun:   # after every whole epoch, and at the end
        run = TrainedRun(TASK, model, vocabs, config, history, "nats per character", seconds,
        device_description())
        save_run(run, out_dir, title="...", history_key="loss_nats_per_char")
        return run

    history, seconds = fit(model, train_batches, validation_batches, config, description="an LSTM",
    each_epoch=save)
    return save(history, seconds)

A run folder is written after every whole epoch, so that an interrupted run (Ctrl-C, the notebook's stop
button, a lost Colab session) leaves the model of its last whole epoch there, ready to export."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import keras
import tensorflow as tf

from labs.common.errors import InputError
from labs.common.files import check_out_folder, check_run_folder, read_run_metrics, run_folder_hint


@dataclass
class TrainedRun:
    """What every lab's ``train`` returns: the model and everything needed to use, judge or save it."""

    task: str
    model: object
    vocabs: dict  # name ("source", "target") -> Vocabulary
    config: object  # the lab's configuration dataclass
    history: dict[str, list[float]]  # "train" and "validation" loss, one value per epoch, in ``unit``
    unit: str  # "bits per token" or "nats per character"
    seconds: float
    device: str
    layer_sha256: str | None = None  # the custom layer file it was trained with (homework 3.1)

    @property
    def epochs_done(self) -> int:
        return len(self.history["train"])

    @property
    def interrupted(self) -> bool:
        return self.epochs_done < self.config.epochs

    def summary(self) -> str:
        """One line for the end of training."""
        epochs = (
            f"{self.epochs_done} of {self.config.epochs} epochs"
            if self.interrupted
            else f"{self.epochs_done} epoch{'s' if self.epochs_done != 1 else ''}"
        )
        return (
            f"Trained {epochs} in {self.seconds:.1f} s on the {self.device}; validation loss "
            f"{self.history['validation'][-1]:.4f} {self.unit}."
        )


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and TensorFlow, and make TensorFlow's ops deterministic.

    With the same seed, the same data and the same machine, training gives the same weights."""

    keras.utils.set_random_seed(int(seed))
    tf.config.experimental.enable_op_determinism()


def compile_for_training(
    model,
    config,
    train_batches,
    *,
    metrics: list[str] | None = None,
    average: float = 0.0,
    smoothing: float = 0.0,
) -> None:
    """Compile with Adam whose learning rate decays to zero along a cosine over the whole run.

    ``config`` gives ``learning_rate`` and ``epochs``; the run is ``epochs`` passes over ``train_batches``.
    Late, small steps stop the gradient noise from blurring the fine detail of what the model has learned (lab
    1: how often September comes up; lab 2: the last digit of a year). With ``average`` above 0, Adam also
    keeps a moving average of the weights (each step, average * old + (1 - average) * new) and the model
    ends a finished run with it (``fit``'s last step); what :func:`fit` saves after each epoch, and an
    interrupted run, keep the plain weights. With ``smoothing`` (epsilon) above 0, the target is smoothed
    (:class:`SmoothedCrossentropy`): the cross-entropy against 1 - epsilon + epsilon / K for the right token
    and epsilon / K for each of the K - 1 others (padding and the start and end tokens included, as in
    Keras' own smoothing). The losses per epoch and the training curve are then that smoothed loss, higher
    than a plain run's for the same model."""

    steps = config.epochs * int(train_batches.cardinality())
    schedule = keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps=steps)
    averaging = {"use_ema": True, "ema_momentum": average} if average > 0 else {}
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, **averaging),
        loss=SmoothedCrossentropy(smoothing) if smoothing > 0 else "sparse_categorical_crossentropy",
        metrics=metrics or [],
    )


@keras.saving.register_keras_serializable(package="attention_lab")
class SmoothedCrossentropy(keras.losses.Loss):
    """The loss of a softmax p (..., K) against the index y with a smoothed target:

        loss = (1 - epsilon) * -log p_y + epsilon * mean_k(-log p_k)

    Keras masks padded steps as it does for its own losses. Registered, so that a run folder's model.keras
    trained with it loads back."""

    def __init__(self, epsilon: float, name: str = "smoothed_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.epsilon = float(epsilon)

    def call(self, y, p):
        nll = keras.losses.sparse_categorical_crossentropy(y, p)  # -log p_y, (...)
        spread = -keras.ops.mean(keras.ops.log(keras.ops.clip(p, 1e-7, 1.0)), axis=-1)  # (...)
        return (1 - self.epsilon) * nll + self.epsilon * spread

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon}


def fit(
    model,
    train_batches,
    validation_batches,
    config,
    *,
    description: str,
    verbose: int = 1,
    each_epoch: Callable[[dict, float], object] | None = None,
) -> tuple[dict[str, list[float]], float]:
    """``model.fit`` for ``config.epochs``; returns the loss per epoch in nats and the seconds it took.

    ``description`` completes "Training ..." in the first line printed (with ``verbose``), e.g.
    ``"an LSTM"`` or ``"the attention model"``. After each whole epoch, ``each_epoch(history,
    seconds)`` runs (a lab saves its run folder there; its time is not counted as training).

    Interrupted (Ctrl-C, the notebook's stop button), training stops, the model gets back the
    weights of the last whole epoch, and the history so far is returned: fewer epochs than
    ``config.epochs`` say so. Interrupted before the first epoch ends, it raises
    KeyboardInterrupt: there is nothing to keep. When output is not a terminal or a notebook (a
    log file, CI), one line per epoch replaces Keras' progress bar.
    """

    lines = verbose == 1 and not interactive()
    if verbose:
        print(
            f"Training {description} ({model.count_params():,} parameters), {config.epochs} "
            f"epoch{'s' if config.epochs != 1 else ''} of {int(train_batches.cardinality()):,} batches, "
            f"on the {device_description()}.",
            flush=True,
        )
    history: dict[str, list[float]] = {"train": [], "validation": []}
    kept, started, saving = {}, time.perf_counter(), [0.0]

    class KeepEachEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            kept["epoch started"] = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            history["train"].append(float(logs["loss"]))
            history["validation"].append(float(logs["val_loss"]))
            kept["weights"] = self.model.get_weights()
            seconds = time.perf_counter() - started - saving[0]
            if lines:
                print(
                    epoch_line(epoch + 1, config.epochs, logs, time.perf_counter() - kept["epoch started"]),
                    flush=True,
                )
            if each_epoch is not None:
                before = time.perf_counter()
                with interrupts_held():  # the run folder's files are written together, whole
                    each_epoch({name: list(values) for name, values in history.items()}, seconds)
                saving[0] += time.perf_counter() - before

    try:
        model.fit(
            train_batches,
            validation_data=validation_batches,
            epochs=config.epochs,
            shuffle=False,  # the pipeline shuffles
            verbose=0 if lines else verbose,
            callbacks=[KeepEachEpoch()],
        )
    except KeyboardInterrupt:
        if "weights" not in kept:
            print(
                "\nStopped before the first epoch ended: this run has no model to keep (its folder is as it "
                "was).",
                flush=True,
            )
            raise
        model.set_weights(kept["weights"])
        print(
            f"\nStopped during epoch {len(history['train']) + 1} of {config.epochs}: kept the model of epoch "
            f"{len(history['train'])}, the last whole one.",
            flush=True,
        )
    return history, time.perf_counter() - started - saving[0]


@contextlib.contextmanager
def interrupts_held():
    """Ctrl-C (the notebook's stop button) held while the body runs, and raised as KeyboardInterrupt when it
    ends: an interrupt that lands inside a C library (matplotlib drawing the training curve, Keras writing
    the model) comes out of it as another error ("Invalid affine transformation matrix"), a traceback for
    the student and a run folder half written. Off the main thread, where no signal arrives, it holds
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def interactive() -> bool:
    """Whether Keras' progress bar has somewhere to draw: a terminal or a notebook."""
    return sys.stdout.isatty() or "ipykernel" in sys.modules


def epoch_line(epoch: int, epochs: int, logs: dict, seconds: float) -> str:
    """``epoch 3/8: loss 0.4123, validation loss 0.3987, accuracy 87.12 %, validation accuracy 86.40 % (61
    s)``."""
    parts = []
    for key, value in logs.items():
        if "learning_rate" in key:
            continue
        name = key.replace("val_", "validation ").replace("_", " ")
        parts.append(f"{name} {value:.2%}".replace("%", " %") if "accuracy" in key else f"{name} {value:.4f}")
    return f"epoch {epoch}/{epochs}: {', '.join(parts)} ({seconds:.0f} s)"


def trained(run: TrainedRun | None) -> TrainedRun:
    """``run`` itself, when training left a model; otherwise an error that says what to do.

    A notebook's later cells call it, so that a training cell stopped before its first epoch ended (``run =
    None``) gives that sentence rather than a NameError or an AttributeError."""
    if run is None:
        raise InputError(
            "there is no trained model yet: the training cell was stopped before its first epoch ended "
            "(or has not run). Run the training cell, and let at least one epoch finish"
        )
    return run


def evaluated(table):
    """``table`` itself, when the notebook's evaluation cell has scored the names; otherwise an error that
    says which cell to run (the heatmaps and the explorers look at names it scored)."""
    if table is None:
        raise InputError(
            'the names have not been scored yet: run the evaluation cell above ("How good is it?") first'
        )
    return table


def device_description() -> str:
    """``"GPU (NVIDIA H100 ...)"`` when TensorFlow sees a GPU, else ``"CPU"``."""

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "CPU"
    details = tf.config.experimental.get_device_details(gpus[0])
    return f"GPU ({details.get('device_name', gpus[0].name)})"


def prepare_run_folder(out_dir: str | Path, config) -> Path:
    """Check, before training, that a run of ``config`` can write ``out_dir``, or explain why not; say so when
    it replaces an earlier run (:meth:`LabConfig.replacing`: a ``--tiny`` run never replaces a real one).

    The folders it has to make are made to prove they can be, then removed again: :func:`save_run` makes
    them with the first whole epoch, so a run stopped (Ctrl-C, the notebook's stop button) or failing
    before then leaves no empty folder behind."""
    out_dir = Path(out_dir)
    check_out_folder(out_dir)
    if note := config.replacing(out_dir):
        print(note)
    missing = [folder for folder in (out_dir, *out_dir.parents) if not folder.exists()]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the folder {str(out_dir)!r}: {error.strerror or error}") from None
    writable = os.access(out_dir, os.W_OK)
    for folder in missing:  # innermost first; each is empty, as it was made a moment ago
        with contextlib.suppress(OSError):
            folder.rmdir()
    if not writable:
        raise InputError(f"cannot write into {str(out_dir)!r}: the folder is not writable")
    return out_dir


def save_model_atomically(model, path: str | Path, *, for_inference: bool = False) -> None:
    """Save a Keras model to ``path`` (``.keras``) so that the file is complete or absent.

    With ``for_inference`` (a bundle's model), what only training uses is left out: the optimizer's state
    (two numbers per weight, with Adam) and the loss and metrics it was compiled with (a custom loss, such
    as :class:`SmoothedCrossentropy`, is no object the grader loads). The saved file is read back without
    them and saved again. A model that Keras will not read back (a Lambda layer, a layer class it cannot
    find) is saved whole, as before: the grader's check then says what it refuses, and why."""
    path = Path(path)
    scratch = Path(tempfile.mkdtemp(prefix=".saving-", dir=path.parent))
    try:
        saved = scratch / path.name
        model.save(saved)
        if for_inference and getattr(model, "compiled", False):  # compile() gave it an optimizer and a loss
            try:
                bare = keras.saving.load_model(saved, compile=False, safe_mode=True)
                bare.save(scratch / f"inference-{path.name}")
                saved = scratch / f"inference-{path.name}"
            except Exception as error:  # noqa: BLE001 (whatever Keras raises, the whole model is a bundle as before)
                why = f"{type(error).__name__}: {str(error)[:200]}"
                warnings.warn(
                    f"the model could not be read back without its training settings ({why}); it is saved "
                    "whole, optimizer state and loss included. Check the bundle as the grader will: "
                    "python -m autograder check BUNDLE --task TASK",
                    stacklevel=2,
                )
        os.replace(saved, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(scratch)


def save_run(
    run: TrainedRun,
    out_dir: str | Path,
    *,
    title: str,
    history_key: str,
    extra: dict | None = None,
    bound: float | None = None,
    bound_label: str = "lower bound",
) -> None:
    """Write ``model.keras``, ``vocab.json``, ``metrics.json`` and ``training_curve.png`` into ``out_dir``.

    ``metrics.json`` holds the task, the configuration, the device, the training time, the
    parameters, the losses per epoch under ``history_key``, and ``extra``.
    """
    import matplotlib.pyplot as plt

    from labs.common.files import write_json
    from labs.common.plots import plot_training_curves
    from labs.common.vocab import save_vocabularies

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)  # the first epoch's save makes it (prepare_run_folder)
    save_model_atomically(run.model, out_dir / "model.keras")
    save_vocabularies(out_dir / "vocab.json", run.task, run.vocabs)
    write_json(
        out_dir / "metrics.json",
        {
            "task": run.task,
            "config": run.config.to_dict(),
            "device": run.device,
            "training_seconds": round(run.seconds, 2),
            "epochs_done": run.epochs_done,
            "parameters": run.model.count_params(),
            **({"layer_sha256": run.layer_sha256} if run.layer_sha256 else {}),
            history_key: {name: [round(v, 6) for v in values] for name, values in run.history.items()},
            **(extra or {}),
        },
    )
    figure = plot_training_curves(
        run.history,
        unit=f"cross-entropy ({run.unit})",
        bound=bound,
        bound_label=bound_label,
        title=title,
        path=out_dir / "training_curve.png",
    )
    plt.close(figure)


def trained_run_from_folder(
    model_dir: str | Path, task: str, model, vocabs: dict, config, *, history_key: str, unit: str
) -> TrainedRun:
    """The :class:`TrainedRun` that a lab's ``train`` returned, rebuilt from the run folder it wrote (the
    model, vocabularies and configuration already loaded by the lab): for a notebook that uses a model
    trained elsewhere (``python -m labs train``, or before the kernel restarted)."""
    metrics = read_run_metrics(model_dir)
    history = metrics.get(history_key)
    try:
        history = {name: [float(value) for value in history[name]] for name in ("train", "validation")}
        if not history["train"] or len(history["train"]) != len(history["validation"]):
            raise ValueError
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"{str(model_dir)!r} holds no record of its training (metrics.json is missing or not a training "
            "run's): train the model again"
        ) from None
    seconds = metrics.get("training_seconds")
    return TrainedRun(
        task,
        model,
        vocabs,
        config,
        history,
        unit,
        float(seconds) if isinstance(seconds, (int, float)) else 0.0,
        str(metrics.get("device") or "unknown device"),
        metrics.get("layer_sha256") if isinstance(metrics.get("layer_sha256"), str) else None,
    )


def load_run_folder(model_dir: str | Path, task: str, config_class):
    """Load ``(model, vocabularies, config)`` from a run folder written by a lab's ``train``.

    The model loads in Keras' safe mode; the configuration comes from ``metrics.json`` (the
    defaults when that file is missing).
    """
    from labs.common.vocab import load_vocabularies

    model_dir = Path(model_dir)
    check_run_folder(model_dir)
    if not (model_dir / "model.keras").is_file():
        raise InputError(
            f"no trained model in {str(model_dir)!r} (model.keras is missing); {run_folder_hint(model_dir)}"
        )
    vocabularies = load_vocabularies(model_dir / "vocab.json", task=task)
    config = config_class()
    if (model_dir / "metrics.json").is_file():
        saved = json.loads((model_dir / "metrics.json").read_text(encoding="utf-8")).get("config", {})
        config = config_class.from_dict(saved)

    return keras.saving.load_model(model_dir / "model.keras", safe_mode=True), vocabularies, config
