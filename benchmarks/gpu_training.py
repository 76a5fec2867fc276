"""Each task's default configuration trained on a GPU: the GPU times beside the CPU ones.

The GPU machine lent to this project (one NVIDIA H100, no network) holds JAX and PyTorch but no TensorFlow,
and TensorFlow cannot travel there: its wheel is over 600 MB (a call carries 64 MiB) and is built for CUDA
12 (the machine's libraries are CUDA 13's). The kit's models are plain Keras 3, so they train there on
Keras' JAX backend; only the kit's input pipeline (tf.data) and its decoders (tf.function) need TensorFlow.
So the work is cut in three, and only the middle step runs on the GPU:

    python benchmarks/gpu_training.py prepare gpu-work        # here: each task's batches and first weights
    KERAS_BACKEND=jax python benchmarks/gpu_training.py train gpu-work --out OUT    # on the GPU machine
    python benchmarks/gpu_training.py evaluate gpu-work OUT   # here: the trained weights, scored

1. ``prepare`` runs each task's own ``train`` with its default configuration up to the point where it
   would fit, and stores what it would fit with: the batches of every epoch as Keras' fit reads them from
   its tf.data pipeline, the validation batches, the model's first variables (its weights and its dropout
   layers' seed states) and the configuration.
2. ``train`` builds each model with the kit's own builder, gives it those first variables, compiles it with
   the kit's ``compile_for_training`` (Adam, the cosine schedule) and fits it on the stored batches with
   validation after each epoch, as ``labs train`` does, timing each epoch. XLA compiles the training step
   once per batch shape, so the homework's batches (cut to their longest name) are padded up to a multiple
   of ``--pad-to`` letters: its loss masks padding (a test checks it), so the model learns the same, and
   there are fewer shapes to compile. (Lab 2's unrolled decoder does not mask its loss; its batches have
   one shape anyway, and are not padded.) Each epoch is timed, the compilations in it.
3. ``evaluate`` loads the trained weights into the kit's model (TensorFlow, here) and scores it with the
   metrics the task's own benchmark reports, then writes benchmarks/results/gpu_training.json, the CPU
   figures of those benchmarks beside.

On one backend the replay gives the weights ``labs train`` gives, epoch by epoch (tests/test_benchmarks.py).
What differs from the students' Colab GPU runtime is the backend, JAX in place of TensorFlow: its XLA
kernels (a generic loop for the masked LSTMs, where TensorFlow uses cuDNN), its dropout random numbers and
its Adam steps for the letter embeddings (the README's Results say how). The times say what a GPU does
with these models on JAX; the accuracies are the JAX backend's, not what Colab's TensorFlow gives.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import sys
import time
import types
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TASKS = ("date-generation", "date-translation", "name-transliteration")
RESULTS = Path(__file__).resolve().parent / "results"


# -- 1. prepare (here, with TensorFlow) ---------------------------------------------------------------------


class _Captured(Exception):
    """Raised in place of ``fit``: the task's ``train`` has built everything it fits with."""


def configuration(task_name: str, tiny: bool = False, epochs: int | None = None):
    """``task_name``'s default configuration (``tiny``: its tiny one), with ``epochs`` epochs if given."""
    from dataclasses import replace

    from labs import tasks

    config = tasks.get(task_name).config
    config = config.tiny() if tiny else config()
    return replace(config, epochs=epochs) if epochs else config


def capture(task_name: str, config) -> dict:
    """Run ``task_name``'s ``train`` with ``config`` up to ``fit``; what it would fit with.

    Returns ``{"model", "config", "options", "train", "validation", "vocabs"}``: the compiled model (its first
    weights), the configuration, ``compile_for_training``'s keyword options and the two tf.data pipelines."""
    from labs import tasks

    task = tasks.get(task_name)
    module = importlib.import_module(task.train.path.partition(":")[0])
    seen: dict = {}
    compile_for_training, fit = module.compile_for_training, module.fit

    def compile_and_keep(model, config, train_batches, **options):
        seen.update(model=model, config=config, options=options)
        compile_for_training(model, config, train_batches, **options)

    def stop_before_fitting(model, train_batches, validation_batches, config, **_):
        seen.update(train=train_batches, validation=validation_batches)
        raise _Captured

    module.compile_for_training, module.fit = compile_and_keep, stop_before_fitting
    try:
        task.train(config, verbose=0)
    except _Captured:
        pass
    finally:
        module.compile_for_training, module.fit = compile_for_training, fit
    seen["vocabs"] = task.vocabularies()
    return seen


def flatten(batch) -> list[np.ndarray]:
    """A batch as its arrays: ``(x, y)`` (a language model) or ``((source, target_in), target_out)``."""
    inputs, targets = batch
    inputs = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    return [np.asarray(a) for a in (*inputs, targets)]


def store_batches(arrays: dict, name: str, batches) -> int:
    """Put one pass over ``batches`` into ``arrays`` under ``name``: each part's batches end to end (uint8,
    every vocabulary here has under 256 tokens) and each batch's shape. Returns the number of batches."""
    parts: list[list[np.ndarray]] = []
    for batch in batches:
        for i, array in enumerate(flatten(batch)):
            if len(parts) <= i:
                parts.append([])
            if array.max(initial=0) > 255:
                raise ValueError(f"{name}: a token id over 255 does not fit the stored uint8 arrays")
            parts[i].append(array.astype(np.uint8))
    for i, chunks in enumerate(parts):
        arrays[f"{name}/{i}/data"] = np.concatenate([c.ravel() for c in chunks])
        arrays[f"{name}/{i}/shapes"] = np.array([c.shape for c in chunks], dtype=np.int32)
    return len(parts[0])


def batches_fit_reads(batches, epochs: int) -> list[list]:
    """The batches ``model.fit(batches, epochs=epochs)`` reads from a tf.data pipeline, epoch by epoch.

    A pipeline that reshuffles gives each new iterator of it a new order, and Keras' fit makes its own (two
    an epoch, in Keras 3.15: one it reads, one it drops), so the orders are read from fit itself, with a
    model that keeps what it is given and learns nothing."""
    import keras

    read: list[list] = []

    class Reader(keras.Model):
        def train_step(self, data):
            read[-1].append(keras.tree.map_structure(np.asarray, data))
            return {"batches": len(read[-1])}  # fit wants a figure to log

    class EachEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            read.append([])

    reader = Reader()
    reader.compile(run_eagerly=True)
    reader.fit(batches, epochs=epochs, shuffle=False, verbose=0, callbacks=[EachEpoch()])
    return read


def prepare(work: Path, task_names: tuple[str, ...], tiny: bool = False, epochs: int | None = None) -> None:
    """Write ``work``/TASK.npz (batches, first variables) and TASK.json (configuration, sizes), each task."""
    work.mkdir(parents=True, exist_ok=True)
    for name in task_names:
        started = time.perf_counter()
        seen = capture(name, configuration(name, tiny, epochs))
        config = seen["config"]
        arrays: dict[str, np.ndarray] = {}
        read = batches_fit_reads(seen["train"], config.epochs)
        batches = [store_batches(arrays, f"train/{epoch}", read[epoch]) for epoch in range(config.epochs)]
        shapes = batch_shapes(read)
        store_batches(arrays, "validation", seen["validation"])
        for i, variable in enumerate(seen["model"].variables):  # the weights and the dropout seeds' states
            arrays[f"variables/{i}"] = np.asarray(variable)
        np.savez_compressed(work / f"{name}.npz", **arrays)
        (work / f"{name}.json").write_text(
            json.dumps(
                {
                    "task": name,
                    "config": config.to_dict(),
                    "compile_options": seen["options"],
                    "vocab_sizes": [
                        len(seen["vocabs"][k]) for k in ("source", "target") if k in seen["vocabs"]
                    ],
                    "batches_per_epoch": batches[0],
                    "parameters": seen["model"].count_params(),
                    "variables": len(seen["model"].variables),
                    "layer_sha256": layer_sha256(name),
                },
                indent=2,
            )
            + "\n"
        )
        size = (work / f"{name}.npz").stat().st_size
        print(
            f"{name}: {config.epochs} epochs of {batches[0]:,} batches ({shapes} batch shapes), "
            f"{size / 2**20:.1f} MiB, {time.perf_counter() - started:.0f} s",
            flush=True,
        )


def layer_sha256(task_name: str) -> str | None:
    """The SHA-256 of the task's custom layer file's code (the homework's key-value attention), as a run
    records it (``labs.common.submission.layer_sha256``), or None."""
    from labs import tasks
    from labs.common import submission

    path = tasks.get(task_name).custom_layer_module
    return submission.layer_sha256(path) if path else None


def batch_shapes(epochs: list[list]) -> int:
    """How many different shapes the batches of ``epochs`` (one list of batches per epoch) come in: the
    training steps XLA compiles."""
    return len({tuple(a.shape for a in flatten(batch)) for batch_list in epochs for batch in batch_list})


# -- 2. train (on the GPU machine, Keras on JAX) ------------------------------------------------------------


@contextlib.contextmanager
def importable_without_tensorflow():
    """Import the kit's model modules where TensorFlow is not installed.

    ``labs.common.seq2seq`` and ``labs.common.training`` import TensorFlow for what they do beside building
    and compiling a model (decoding in a tf.function, naming the device). While they are imported, an empty
    module stands in for it; it is taken away again, so that Keras sees no TensorFlow (it checks)."""
    if importlib.util.find_spec("tensorflow") is not None:
        yield
        return
    before = sys.modules.get("tensorflow")
    sys.modules["tensorflow"] = types.ModuleType("tensorflow", "stand-in: TensorFlow is not installed here")
    try:
        yield
    finally:
        if before is None:
            del sys.modules["tensorflow"]
        else:
            sys.modules["tensorflow"] = before


def stored_batches(arrays, name: str, pad_to: int = 1) -> list[tuple]:
    """The batches ``store_batches`` wrote under ``name``, as Keras takes them, int32; every axis after the
    first padded with zeros (padding) up to a multiple of ``pad_to``."""
    parts = []
    i = 0
    while f"{name}/{i}/data" in arrays:
        data, shapes = arrays[f"{name}/{i}/data"], arrays[f"{name}/{i}/shapes"]
        offsets = np.concatenate([[0], np.cumsum(np.prod(shapes, axis=1))])
        chunks = []
        for shape, start, end in zip(shapes, offsets[:-1], offsets[1:]):
            array = data[start:end].reshape(shape).astype(np.int32)
            padding = [(0, 0)] + [(0, -n % pad_to) for n in shape[1:]]
            chunks.append(np.pad(array, padding))
        parts.append(chunks)
        i += 1
    if len(parts) == 2:  # a language model: (x, y)
        return list(zip(*parts))
    return [((s, t_in), t_out) for s, t_in, t_out in zip(*parts)]


def train(work: Path, out: Path, task_names: tuple[str, ...], pad_to: int, epochs: int | None = None) -> None:
    """Fit each task's model on the stored batches, epoch by epoch; write its weights and times into ``out``.

    ``epochs``: that many epochs instead of the configuration's (its schedule over them), the stored epochs
    taken again in turn: the same names, in the stored orders."""
    import keras

    from labs import tasks

    with importable_without_tensorflow():
        from labs.common.training import compile_for_training

    out.mkdir(parents=True, exist_ok=True)
    report = {
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "pad_to": pad_to,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "tasks": {},
    }
    if keras.backend.backend() == "jax":
        import jax

        report["jax"] = jax.__version__
        # float32 matrix products: "highest" is full float32; None, XLA's default (TF32 on an H100)
        report["matmul_precision"] = jax.config.jax_default_matmul_precision
        report["device"] = str(jax.devices()[0].device_kind)
    for name in task_names:
        saved = json.loads((work / f"{name}.json").read_text())
        arrays = np.load(work / f"{name}.npz")
        task = tasks.get(name)
        config = task.config.resolve().from_dict(
            {**saved["config"], **({"epochs": epochs} if epochs else {})}
        )
        if layer_sha256(name) != saved["layer_sha256"]:
            raise SystemExit(f"{name}: its layer file is not the one prepare ran with; run prepare again")
        keras.utils.set_random_seed(config.seed)
        model = model_module(name).build_model(config, *saved["vocab_sizes"])
        if len(model.variables) != saved["variables"]:
            raise SystemExit(f"{name}: {len(model.variables)} variables here, {saved['variables']} stored")
        for i, variable in enumerate(model.variables):
            variable.assign(arrays[f"variables/{i}"])
        # only batches cut to their longest (the homework's) vary in shape; its loss masks the padding. Not
        # with TensorFlow (a check): Keras' PyDataset adapter fixes the shapes it saw in its first batches.
        pad = pad_to if getattr(config, "sort_window", 0) and keras.backend.backend() != "tensorflow" else 1
        stored = [stored_batches(arrays, f"train/{e}", pad) for e in range(saved["config"]["epochs"])]
        validation = stored_batches(arrays, "validation", pad)
        train_batches = epoch_batches(stored)
        compile_for_training(model, config, train_batches, **saved["compile_options"])
        times, history = [], {"train": [], "validation": []}

        class Timed(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                train_batches.epoch = epoch  # the batches of the stored epoch, in turn
                self.started = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                times.append(time.perf_counter() - self.started)
                history["train"].append(float(logs["loss"]))
                history["validation"].append(float(logs["val_loss"]))
                print(
                    f"{name}: epoch {epoch + 1}/{config.epochs}, {times[-1]:.1f} s, loss {logs['loss']:.4f}, "
                    f"validation loss {logs['val_loss']:.4f}",
                    flush=True,
                )

        started = time.perf_counter()
        model.fit(
            train_batches,
            validation_data=epoch_batches([validation]),
            epochs=config.epochs,
            shuffle=False,
            verbose=0,
            callbacks=[Timed()],
        )
        seconds = time.perf_counter() - started
        np.savez(out / f"{name}-weights.npz", *model.get_weights())
        report["tasks"][name] = {
            "epochs": config.epochs,
            "training_seconds": seconds,
            "epoch_seconds": times,
            "history": history,
            "shapes": batch_shapes(stored),
            "peak_device_bytes": peak_device_bytes(),
        }
        print(f"{name}: {seconds:.1f} s in all", flush=True)
        (out / "gpu_training.json").write_text(json.dumps(report, indent=2) + "\n")  # after each task


def peak_device_bytes() -> int | None:
    """The most memory the accelerator has held so far in this process (JAX's allocator: tasks trained
    before count), or None (no such figure)."""
    import keras

    if keras.backend.backend() != "jax":
        return None
    import jax

    return (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")


def epoch_batches(epochs: list[list]):
    """Stored batches, one list per epoch, as a Keras ``PyDataset``: while ``.epoch`` is e, the batches of
    ``epochs[e % len(epochs)]``. The caller sets it as each epoch begins (a callback): Keras calls
    ``on_epoch_end`` once before the first epoch too, so counting there would start at the second."""
    import keras

    class EpochBatches(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.epoch = 0

        def __len__(self):
            return len(epochs[0])

        def __getitem__(self, i):
            return epochs[self.epoch % len(epochs)][i]

        def cardinality(self):  # what compile_for_training reads from a tf.data pipeline
            return len(self)

    return EpochBatches()


# -- 3. evaluate (here, with TensorFlow) ---------------------------------------------------------------------


def score(name: str, model, vocabs, config) -> dict:
    """What the task's own benchmark reports of its trained model, on the same data."""
    from labs.common.files import read_csv
    from labs.common.paths import DATASETS_DIR

    if name == "date-generation":
        from labs.date_generation.evaluate import evaluate as lab1_metrics

        # the samples and seed date_generation.py scores with
        report = lab1_metrics(model, vocabs, config, n=10_000, temperature=1.0, seed=0)
        return {k: report[k] for k in ("validity", "heldout_bits_per_token", "tv_year", "tv_month", "tv_day")}
    if name == "date-translation":
        from date_translation import HELD_OUT

        from labs.date_translation import evaluate as lab2_metrics
        from labs.date_translation.data import sample_pairs
        from labs.date_translation.translate import translate

        pairs = sample_pairs(HELD_OUT, seed=3, split="test")  # as date_translation.py
        outputs = [r.output for r in translate(model, vocabs, [p["source"] for p in pairs])]
        return {
            "exact_match": lab2_metrics.summary(lab2_metrics.results_table(pairs, outputs))["exact_match"]
        }
    from labs.name_transliteration import evaluate as homework_metrics
    from labs.name_transliteration.transliterate import transliterate

    test = read_csv(DATASETS_DIR / "thai-names" / "test.csv")  # as name_transliteration.py: beam 3
    beam = transliterate(model, vocabs, [row["source"] for row in test], beam=3)
    per_stratum = homework_metrics.summary(test, [r.alternatives for r in beam])["per_stratum"]
    return {f"{stratum}_accuracy": per_stratum[stratum]["accuracy"] for stratum in ("seen", "unseen")}


CPU_FIGURES = {  # the task's own benchmark results file -> its training time on the CPU
    "date-generation": ("date_generation", lambda r: r["report"]["training_seconds"]),
    "date-translation": ("date_translation", lambda r: r["report"]["attention"]["training_seconds"]),
    "name-transliteration": ("name_transliteration", lambda r: r["report"]["training_seconds"]),
}


def evaluate(work: Path, trained: Path, task_names: tuple[str, ...], out: Path | None = RESULTS) -> dict:
    """Score each task's weights from ``trained`` (``train``'s output folder) with the kit's TensorFlow model;
    write ``out``/gpu_training.json (None: write nothing). Returns the report."""
    from labs import tasks

    report = json.loads((trained / "gpu_training.json").read_text())
    for name in task_names:
        task, saved = tasks.get(name), json.loads((work / f"{name}.json").read_text())
        config = task.config.resolve().from_dict(saved["config"])
        model = model_module(name).build_model(config, *saved["vocab_sizes"])
        weights = np.load(trained / f"{name}-weights.npz")
        model.set_weights([weights[f"arr_{i}"] for i in range(len(weights.files))])
        figures = report["tasks"][name]
        figures["scores"] = score(name, model, task.vocabularies(), config)
        # the training batch shapes XLA would meet without the padding
        arrays = np.load(work / f"{name}.npz")
        figures["shapes_unpadded"] = batch_shapes(
            [stored_batches(arrays, f"train/{epoch}") for epoch in range(config.epochs)]
        )
        results_name, cpu_seconds = CPU_FIGURES[name]
        cpu = json.loads((RESULTS / f"{results_name}.json").read_text())
        figures["cpu"] = {
            "training_seconds": cpu_seconds(cpu),
            "date": cpu["date"],
            "machine": cpu["machine"],
        }
        print(
            f"{name}: trained in {figures['training_seconds']:.1f} s on the GPU (the CPU benchmark's "
            f"{cpu_seconds(cpu):.0f} s, {cpu['date']}); {figures['scores']}",
            flush=True,
        )
    if out is not None:
        libraries = f"Keras {report['keras']} on {report['backend']}" + (
            f" {report['jax']}" if "jax" in report else ""
        )
        record = {
            "benchmark": "gpu_training",
            "report": report,
            "checks": {},
            # the day train ran (a run made before train recorded it: the day its file was written)
            "date": report.get("date")
            or datetime.fromtimestamp((trained / "gpu_training.json").stat().st_mtime, timezone.utc).strftime(
                "%Y-%m-%d"
            ),
            "machine": f"{report.get('device', 'an accelerator')}, {libraries}; scored with TensorFlow, CPU",
            "command": "python benchmarks/gpu_training.py prepare gpu-work; KERAS_BACKEND=jax python "
            "benchmarks/gpu_training.py train gpu-work --out OUT (on the GPU machine); python "
            "benchmarks/gpu_training.py evaluate gpu-work OUT",
        }
        (out / "gpu_training.json").write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {out / 'gpu_training.json'}")
    return report


def model_module(task_name: str):
    """The task's ``model`` module (its ``build_model``), beside the ``train`` module the registry names."""
    from labs import tasks

    package = tasks.get(task_name).train.path.partition(":")[0].rsplit(".", 1)[0]
    with importable_without_tensorflow():
        return importlib.import_module(f"{package}.model")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("prepare", "train", "evaluate"))
    parser.add_argument("work", type=Path, help="the folder prepare writes and train reads")
    parser.add_argument("trained", type=Path, nargs="?", help="evaluate: the folder train wrote")
    parser.add_argument("--out", type=Path, help="train: the folder to write the weights and times into")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=TASKS)
    parser.add_argument(
        "--tiny", action="store_true", help="prepare: the tasks' tiny configurations (a check)"
    )
    parser.add_argument("--epochs", type=int, help="train: this many epochs, not the configuration's")
    parser.add_argument("--pad-to", type=int, default=8, help="train: pad batches up to a multiple of this")
    args = parser.parse_args()
    names = tuple(args.tasks)
    if args.step == "prepare":
        prepare(args.work, names, args.tiny)
    elif args.step == "train":
        if args.out is None:
            parser.error("train needs --out FOLDER")
        train(args.work, args.out, names, args.pad_to, args.epochs)
    else:
        if args.trained is None:
            parser.error("evaluate needs the folder train wrote")
        evaluate(args.work, args.trained, names)


if __name__ == "__main__":
    main()
