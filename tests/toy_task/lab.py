"""The toy lab's pieces: data, vocabularies, configuration, model, training and metrics, as a lab has them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from labs.common import decoding, seq2seq
from labs.common.config import LabConfig
from labs.common.pipeline import translation_batches
from labs.common.seeding import rng_for
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
from labs.common.vocab import Vocabulary

NAME = "toy-reversal"
COLUMNS = ("source", "target")


def generate(n: int, seed: int, split: str = "train") -> list[dict]:
    """``n`` rows ``123 -> 321``; splits by the first digit's parity (train even, dev and test odd)."""
    rng = rng_for(seed, f"{NAME}/{split}")
    rows, seen = [], set()
    while len(rows) < n:
        text = "".join(rng.choice("0123456789") for _ in range(rng.randrange(3, 7)))
        if (int(text[0]) % 2 == 0) == (split == "train") and text not in seen:
            seen.add(text)
            rows.append({"source": text, "target": text[::-1]})
    return rows


def hidden_rows(n: int, seed: int, public: set[str]) -> list[dict]:
    return [row for row in generate(2 * n, seed + 1000, "test") if row["source"] not in public][:n]


def vocabularies() -> dict[str, Vocabulary]:
    return {
        "source": Vocabulary.from_characters("0123456789", name=f"{NAME} source"),
        "target": Vocabulary.from_characters("0123456789", name=f"{NAME} target"),
    }


@dataclass(frozen=True)
class ToyConfig(LabConfig):
    units: int = 16
    train_size: int = 2000
    val_size: int = 100
    epochs: int = 2
    batch_size: int = 64
    learning_rate: float = 1e-2
    seed: int = 1

    @classmethod
    def tiny(cls, **overrides):
        return replace(cls(), **overrides)

    demo = tiny


def build_model(config: ToyConfig, vocabs: dict[str, Vocabulary]):
    import keras

    source, target_in = seq2seq.inputs()
    _, state, _ = seq2seq.encode_source(source, len(vocabs["source"]), 8, config.units)
    y = keras.layers.Embedding(len(vocabs["target"]), 8)(target_in)
    s = keras.layers.LSTM(2 * config.units, return_sequences=True)(y, initial_state=state)
    return keras.Model(
        [source, target_in], keras.layers.Dense(len(vocabs["target"]), activation="softmax")(s)
    )


def train(config: ToyConfig = ToyConfig(), out_dir=None, verbose: int = 0) -> TrainedRun:
    set_seed(config.seed)
    vocabs = vocabularies()
    train_batches = translation_batches(
        generate(config.train_size, config.seed), vocabs, config.batch_size, config.seed
    )
    validation_batches = translation_batches(
        generate(config.val_size, config.seed, "dev"), vocabs, config.batch_size
    )
    model = build_model(config, vocabs)
    compile_for_training(model, config, train_batches)
    folder = prepare_run_folder(out_dir, config) if out_dir is not None else None

    def save(history, seconds):
        run = TrainedRun(
            NAME, model, vocabs, config, history, "nats per character", seconds, device_description()
        )
        if folder is not None:
            save_run(run, folder, title="Toy", history_key="loss_nats_per_char")
        return run

    history, seconds = fit(
        model,
        train_batches,
        validation_batches,
        config,
        description="the toy",
        verbose=verbose,
        each_epoch=save,
    )
    return save(history, seconds)


def load_run(folder):
    return load_run_folder(folder, NAME, ToyConfig)


def translate(model, vocabs, texts, *, beam: int = 1, batch_size: int = 1000, step_decoding: bool = True):
    make_step = seq2seq.stepper(model, steps=8, step_decoding=step_decoding)
    return decoding.translate_texts(texts, vocabs, make_step, max_length=8, beam=beam, batch_size=batch_size)


def grading_metrics(result: dict, targets: list[dict]) -> dict:
    best = [candidates[0] for candidates in result["outputs"]]
    return {"exact_match": sum(b == t["target"] for b, t in zip(best, targets)) / len(targets)}
