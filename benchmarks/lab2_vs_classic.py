"""Lab 2's model against the classic course architecture: time to reach 99 % and 99.9 % exact match.

    python benchmarks/lab2_vs_classic.py        # ~20 minutes on a 2-core CPU

**The classic architecture**, written here from its description in widely used course notebooks
(date translation with attention): the source is one-hot encoded and padded to a fixed length
Tx; a bidirectional LSTM (32 units per direction) reads it; then, for each of the Ty = 10 output
characters, a per-step attention block repeats the previous post-attention state Tx times
(``RepeatVector``), concatenates it with every encoder state, scores them with
``Dense(10, tanh)`` and ``Dense(1, relu)``, takes a softmax over the Tx positions and a weighted
sum (``Dot``); a post-attention LSTM (64 units) takes one step on that context, and a softmax
layer writes the character. There is no teacher forcing: the decoder never sees the characters
it wrote. It trains twice: with the notebooks' own recipe (Adam, learning rate 0.005 decayed as
``0.005 / (1 + 0.01 * step)``, batch size 100), and with the kit's recipe (Adam 0.003 with cosine
decay over 20 epochs, batch size 128), so that the architecture is not judged by its optimizer.

**The kit's model** is ``DateTranslationConfig()`` (lab 2's default: teacher forcing, a
128-unit decoder LSTM, additive attention over projected keys, cosine-decayed Adam).

Both train on the same 60,000 pairs, one epoch at a time; after each epoch, exact match is
measured on the same 2,000 held-out pairs (greedy decoding; evaluation time is not counted).
The time to reach 99 % and 99.9 % is the training time up to the end of the first epoch that
gets there. Each model trains for at most its epoch budget (kit: its 6 scheduled epochs;
classic: 20 epochs or 7 minutes, whichever comes first).

Prints a table; writes benchmarks/results/lab2_vs_classic.json.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import write_results  # noqa: E402

from labs.common.pipeline import translation_batches  # noqa: E402
from labs.common.training import compile_for_training, device_description, set_seed  # noqa: E402
from labs.date_translation.config import DateTranslationConfig  # noqa: E402
from labs.date_translation.data import sample_pairs, vocabularies  # noqa: E402
from labs.date_translation.evaluate import exact_match  # noqa: E402
from labs.date_translation.model import build_model  # noqa: E402
from labs.date_translation.translate import translate  # noqa: E402

TY = 10  # YYYY-MM-DD
HELD_OUT = 2_000
CLASSIC_EPOCHS, CLASSIC_SECONDS = 20, 420
TARGETS = (0.99, 0.999)


def build_classic_model(tx: int, source_vocab: int, target_vocab: int, n_a: int = 32, n_s: int = 64):
    """The course notebooks' model: ``[one-hot source (B, Tx, V_in), s0 (B, n_s), c0 (B, n_s)] -> Ty
    softmaxes``."""
    import keras
    from keras import layers

    repeat = layers.RepeatVector(tx)
    concatenate = layers.Concatenate(axis=-1)
    score_hidden = layers.Dense(10, activation="tanh")
    score = layers.Dense(1, activation="relu")
    softmax_over_time = layers.Softmax(axis=1)
    weighted_sum = layers.Dot(axes=1)
    post_attention = layers.LSTM(n_s, return_state=True)
    output_layer = layers.Dense(target_vocab, activation="softmax")

    source = keras.Input(shape=(tx, source_vocab), name="source_one_hot")  # (B, Tx, V_in)
    s0, c0 = keras.Input(shape=(n_s,), name="s0"), keras.Input(shape=(n_s,), name="c0")
    encoder_states = layers.Bidirectional(layers.LSTM(n_a, return_sequences=True))(source)  # (B, Tx, 2 n_a)
    s, c, outputs = s0, c0, []
    for _ in range(TY):
        energies = score(score_hidden(concatenate([encoder_states, repeat(s)])))  # (B, Tx, 1)
        context = weighted_sum([softmax_over_time(energies), encoder_states])  # (B, 1, 2 n_a)
        s, _, c = post_attention(context, initial_state=[s, c])  # (B, n_s)
        outputs.append(output_layer(s))  # (B, V_out)
    return keras.Model([source, s0, c0], outputs, name="classic_course_model")


def classic_arrays(pairs, vocabs, tx: int):
    """One-hot sources (n, Tx, V_in), zero initial states, and Ty targets (n,) each (character ids)."""
    source = vocabs["source"].encode_batch([p["source"] for p in pairs], length=tx, unknown="unk")
    one_hot = np.eye(len(vocabs["source"]), dtype="float32")[source]
    one_hot[source == 0] = 0.0  # padding: all zeros
    target = vocabs["target"].encode_batch([p["target"] for p in pairs])  # (n, 10)
    zeros = np.zeros((len(pairs), 64), dtype="float32")
    return [one_hot, zeros, zeros], [target[:, t] for t in range(TY)]


def time_to_targets(log: list[dict]) -> dict:
    return {
        f"{target:.3f}": next((e["training_seconds"] for e in log if e["exact_match"] >= target), None)
        for target in TARGETS
    }


def run_kit(config, train_pairs, test_pairs, vocabs) -> list[dict]:
    set_seed(config.seed)
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))
    compile_for_training(
        model,
        learning_rate=config.learning_rate,
        epochs=config.epochs,
        train_size=len(train_pairs),
        batch_size=config.batch_size,
    )
    dataset = translation_batches(train_pairs, vocabs, config.batch_size, shuffle_seed=config.seed)
    log, trained = [], 0.0
    for epoch in range(config.epochs):
        started = time.perf_counter()
        model.fit(
            dataset, epochs=epoch + 1, initial_epoch=epoch, verbose=0, shuffle=False
        )  # the pipeline shuffles
        trained += time.perf_counter() - started
        outputs = [t.output for t in translate(model, vocabs, [p["source"] for p in test_pairs])]
        log.append(
            {
                "epoch": epoch + 1,
                "training_seconds": trained,
                "exact_match": exact_match(outputs, [p["target"] for p in test_pairs]),
            }
        )
        print(
            f"  kit      epoch {epoch + 1:2d}: {trained:6.0f} s, exact match {log[-1]['exact_match']:.2%}",
            flush=True,
        )
    return log, model.count_params()


def run_classic(train_pairs, test_pairs, vocabs, seed: int, recipe: str) -> list[dict]:
    """Train the classic model with the course notebooks' recipe (``"course"``) or the kit's (``"kit"``)."""
    import keras

    set_seed(seed)
    tx = max(len(p["source"]) for p in train_pairs + test_pairs)
    model = build_classic_model(tx, len(vocabs["source"]), len(vocabs["target"]))
    batch_size = 100 if recipe == "course" else 128
    if recipe == "course":
        schedule = keras.optimizers.schedules.InverseTimeDecay(0.005, decay_steps=1, decay_rate=0.01)
    else:
        steps = CLASSIC_EPOCHS * -(-len(train_pairs) // batch_size)
        schedule = keras.optimizers.schedules.CosineDecay(3e-3, decay_steps=steps)
    model.compile(optimizer=keras.optimizers.Adam(schedule), loss=["sparse_categorical_crossentropy"] * TY)
    inputs, targets = classic_arrays(train_pairs, vocabs, tx)
    test_inputs, _ = classic_arrays(test_pairs, vocabs, tx)
    log, trained = [], 0.0
    for epoch in range(CLASSIC_EPOCHS):
        started = time.perf_counter()
        model.fit(
            inputs,
            targets,
            batch_size=batch_size,
            epochs=epoch + 1,
            initial_epoch=epoch,
            verbose=0,
            shuffle=True,
        )
        trained += time.perf_counter() - started
        predicted = np.stack(
            [p.argmax(-1) for p in model.predict(test_inputs, batch_size=1000, verbose=0)], axis=1
        )
        outputs = [vocabs["target"].decode(row, stop_at_end=False) for row in predicted]
        log.append(
            {
                "epoch": epoch + 1,
                "training_seconds": trained,
                "exact_match": exact_match(outputs, [p["target"] for p in test_pairs]),
            }
        )
        print(
            f"  classic ({recipe} recipe) epoch {epoch + 1:2d}: {trained:6.0f} s, exact match "
            f"{log[-1]['exact_match']:.2%}",
            flush=True,
        )
        if trained > CLASSIC_SECONDS or log[-1]["exact_match"] >= TARGETS[-1]:
            break
    return log, model.count_params()


def main() -> None:
    config = DateTranslationConfig()
    vocabs = vocabularies()
    train_pairs = sample_pairs(config.train_size, config.seed, split="train")
    test_pairs = sample_pairs(HELD_OUT, seed=3, split="test")
    print("lab 2's model (default configuration):")
    kit_log, kit_parameters = run_kit(config, train_pairs, test_pairs, vocabs)
    report = {
        "kit": {"parameters": kit_parameters, "epochs": kit_log, "seconds_to": time_to_targets(kit_log)}
    }
    for recipe in ("course", "kit"):
        print(f"the classic course architecture, {recipe} recipe:")
        log, parameters = run_classic(train_pairs, test_pairs, vocabs, config.seed, recipe)
        reached = time_to_targets(log)
        report[f"classic_{recipe}_recipe"] = {
            "parameters": parameters,
            "epochs": log,
            "seconds_to": reached,
            "over_kit": {
                t: reached[t] / report["kit"]["seconds_to"][t]
                if reached[t] and report["kit"]["seconds_to"][t]
                else None
                for t in reached
            },
        }
    print(f"\n{'':22} {'parameters':>10} {'to 99 %':>12} {'to 99.9 %':>12} {'best':>8}")
    for name in ("kit", "classic_course_recipe", "classic_kit_recipe"):
        side = report[name]
        cells = [f"{s:.0f} s" if s else "not reached" for s in side["seconds_to"].values()]
        best = max(e["exact_match"] for e in side["epochs"])
        print(f"{name:22} {side['parameters']:>10,} {cells[0]:>12} {cells[1]:>12} {best:>8.2%}")
    kit = report["kit"]["seconds_to"]
    checks = {"kit_reaches_99.9": kit["0.999"] is not None}
    write_results("lab2_vs_classic", config.to_dict(), report, checks, device_description())


if __name__ == "__main__":
    main()
