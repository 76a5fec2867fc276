"""The encoder-decoder that lab 2 and homework 3.1 share, and the machinery to train and run it.

Both labs read a source string and write a target string, one character at a time:

    source (batch, S) -> Embedding -> bidirectional LSTM -> encoder states (batch, S, 2u)
    target_in (batch, T) -> Embedding -> LSTM (starts from the encoder's final states)
        -> decoder states (batch, T, 2u)
    attention (what each lab teaches) -> context (batch, T, c)
    output: softmax(Dense(tanh(Dense([decoder state; context]))))      (batch, T, vocab)

What differs is only the attention step, so each lab's ``model.py`` builds its attention and
calls the pieces here for the rest: the layers, the encoder, the decoder LSTM, the output
layers, the fast step decoder, teacher forcing and translation with greedy or beam search.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from labs.common.decoding import beam_search, decode_steps, full_model_step
from labs.common.pipeline import batches
from labs.common.vocab import Vocabulary

CORE_LAYERS = ("source_embedding", "encoder", "target_embedding", "decoder", "combine", "next_char", "dropout")


def create_core_layers(embedding_dim: int, units: int, source_vocab_size: int, target_vocab_size: int,
                       dropout: float = 0.0) -> dict:
    """The encoder, decoder and output layers, by name (``units`` per encoder direction).

    With ``dropout > 0``, training drops that share of the source embeddings and of the features
    before the output layers: the model cannot lean on any one of them, which helps it spell
    words it never saw (homework 3.1's unseen stratum).
    """
    import keras

    layers = {
        "source_embedding": keras.layers.Embedding(source_vocab_size, embedding_dim, mask_zero=True,
                                                   name="source_embedding"),
        "encoder": keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True, return_state=True),
                                              name="encoder"),
        "target_embedding": keras.layers.Embedding(target_vocab_size, embedding_dim, mask_zero=True,
                                                   name="target_embedding"),
        "decoder": keras.layers.LSTM(2 * units, return_sequences=True, return_state=True, name="decoder"),
        "combine": keras.layers.Dense(2 * units, activation="tanh", name="combine"),
        "next_char": keras.layers.Dense(target_vocab_size, activation="softmax", name="next_char"),
    }
    if dropout > 0:
        layers["dropout"] = keras.layers.Dropout(dropout, name="dropout")
    return layers


def layers_of(model, names) -> dict:
    """The layers of ``model`` called ``names`` (those it has), by name: to rebuild views of a trained model."""
    present = {layer.name for layer in model.layers}
    return {name: model.get_layer(name) for name in names if name in present}


def model_inputs():
    """The translation signature's two inputs: ``source`` (batch, S) and ``target_in`` (batch, T)."""
    import keras

    return (keras.Input(shape=(None,), dtype="int32", name="source"),
            keras.Input(shape=(None,), dtype="int32", name="target_in"))


def encode(layers: dict, source):
    """source (batch, S) -> encoder states (batch, S, 2u), initial decoder state [h, c], source mask (batch, S)."""
    import keras

    source_mask = keras.ops.not_equal(source, 0)                                     # (batch, S)
    embedded = _maybe_dropout(layers, layers["source_embedding"](source))            # (batch, S, e)
    states, forward_h, forward_c, backward_h, backward_c = layers["encoder"](embedded)
    initial = [keras.ops.concatenate([forward_h, backward_h], axis=-1),              # (batch, 2u)
               keras.ops.concatenate([forward_c, backward_c], axis=-1)]              # (batch, 2u)
    return states, initial, source_mask


def _maybe_dropout(layers: dict, tensor):
    """Dropout (active in training only) when the model has it."""
    return layers["dropout"](tensor) if "dropout" in layers else tensor


def run_decoder(layers: dict, target_in, initial):
    """target_in (batch, T) -> decoder states (batch, T, 2u) and the final [h, c]."""
    decoder_states, h, c = layers["decoder"](layers["target_embedding"](target_in), initial_state=initial)
    return decoder_states, [h, c]


def next_char_probabilities(layers: dict, decoder_states, context=None):
    """Decoder states (batch, T, 2u) and context (batch, T, c) or None -> probabilities (batch, T, vocab)."""
    import keras

    features = decoder_states if context is None else keras.ops.concatenate([decoder_states, context], axis=-1)
    features = _maybe_dropout(layers, features)
    return layers["next_char"](layers["combine"](features))


def step_inputs(units: int, memory_shapes: dict[str, tuple]):
    """Inputs of a one-step decoder model: the token (batch, 1), fixed memory tensors, and h, c (batch, units)."""
    import keras

    token = keras.Input(shape=(1,), dtype="int32", name="token")
    memory = [keras.Input(shape=shape, dtype=dtype, name=name) for name, (shape, dtype) in memory_shapes.items()]
    return token, memory, keras.Input(shape=(units,), name="h"), keras.Input(shape=(units,), name="c")


_COMPILED = weakref.WeakKeyDictionary()   # model -> its compiled encoder and step, built once


def step_decoder(model, source: np.ndarray, build_step_models: Callable, *, attention: bool = True):
    """A :mod:`labs.common.decoding` step function for ``source`` (batch, S), and its first state.

    ``build_step_models(model)`` returns two Keras models sharing ``model``'s layers:

    - encoder: ``source -> [*memory, h, c]``, run once per input (memory: the encoder states and
      whatever else every step reads, such as projected keys and the source mask);
    - step: ``[token (batch, 1), *memory, h, c] -> [probabilities (batch, V), weights (batch, S), h, c]``.

    Both are compiled to TensorFlow graphs once per model: run layer by layer (eagerly), the
    encoder alone costs more than all the decoding steps. The state stays as tensors on the device
    between steps; only the small outputs (probabilities, attention weights) come back to NumPy.
    """
    import tensorflow as tf

    if model not in _COMPILED:
        encoder, step_model = build_step_models(model)
        # No Python control flow inside, so nothing for autograph to convert.
        _COMPILED[model] = (tf.function(lambda x: encoder(x, training=False), reduce_retracing=True, autograph=False),
                            tf.function(lambda x: step_model(x, training=False), reduce_retracing=True, autograph=False))
    run_encoder, run_step = _COMPILED[model]
    state = list(run_encoder(tf.convert_to_tensor(np.asarray(source))))

    def step(tokens, state):
        probabilities, weights, h, c = run_step([tf.convert_to_tensor(tokens[:, None]), *state])
        return probabilities.numpy(), [*state[:-2], h, c], weights.numpy() if attention else None

    return step, state


def teacher_forcing_arrays(pairs: list[dict], vocabs: dict[str, Vocabulary], source_length: int | None = None):
    """``source`` (n, S), ``target_in`` = ``<s>`` + target (n, T), ``target_out`` = target + ``</s>`` (n, T).

    The target at step t is the input at step t + 1: the decoder always sees the *true* previous
    character in training, never its own guess.
    """
    source = vocabs["source"].encode_batch([p["source"] for p in pairs], length=source_length)
    target_in = vocabs["target"].encode_batch([p["target"] for p in pairs], add_start=True)
    target_out = vocabs["target"].encode_batch([p["target"] for p in pairs], add_end=True)
    return source, target_in, target_out


def make_dataset(pairs: list[dict], vocabs: dict[str, Vocabulary], batch_size: int, shuffle_seed: int | None = None):
    """A tf.data pipeline of ``((source, target_in), target_out)`` batches."""
    source, target_in, target_out = teacher_forcing_arrays(pairs, vocabs)
    return batches((source, target_in), target_out, batch_size, shuffle_seed)


@dataclass
class Translation:
    source: str
    output: str                     # the best output
    attention: np.ndarray | None    # (len(output) + 1, len(source)): one row per output character and </s>
    alternatives: list[str]         # every beam's output, best first (just [output] for greedy)


def full_rerun(model) -> Callable:
    """A ``make_step`` for :func:`translate` that re-runs the whole ``model`` on every prefix.

    Slow, but it needs nothing from the model but the translation signature: it is how the
    autograder drives any student's model, and how the tests check a lab's fast step decoder.
    """
    return lambda source: full_model_step(model, source)


def translate(sources: list[str], vocabs: dict[str, Vocabulary], make_step: Callable, *, max_length: int,
              beam: int = 1, batch_size: int = 10_000) -> list[Translation]:
    """Translate ``sources`` in batches; ``beam > 1`` uses beam search and returns the top ``beam`` outputs.

    ``make_step(source (batch, S)) -> (step, state)`` gives the step function to decode with
    (a lab's fast step decoder, or :func:`labs.common.decoding.full_model_step`). Characters
    outside the source vocabulary become ``<unk>``.
    """
    results: list[Translation] = []
    for first in range(0, len(sources), batch_size):
        batch = sources[first:first + batch_size]
        step, state = make_step(vocabs["source"].encode_batch(batch, unknown="unk"))   # source (batch, S)
        if beam > 1:
            ranked = beam_search(step, state, len(batch), beam_width=beam, max_length=max_length)
        else:
            ranked = [decode_steps(step, state, len(batch), max_length=max_length, greedy=True)]
        for row, text in enumerate(batch):
            outputs = [vocabs["target"].decode(decoded.tokens[row]) for decoded in ranked]
            attention = ranked[0].attention
            weights = None if attention is None else attention[row, :len(outputs[0]) + 1, :len(text)]
            results.append(Translation(text, outputs[0], weights, outputs))
    return results


@dataclass
class TrainedTranslator:
    """What a translation lab's ``train`` returns: the model and everything needed to use or judge it."""

    model: object
    vocabs: dict[str, Vocabulary]
    config: object                    # the lab's configuration dataclass
    history: dict[str, list[float]]   # "train" and "validation" loss (nats per character), one value per epoch
    seconds: float
    device: str


def train_translator(config, out_dir=None, *, task: str, vocabularies: Callable, build_model: Callable,
                     sample: Callable, description: str, title: str, verbose: int = 1) -> TrainedTranslator:
    """The whole of a translation lab's ``train``: seed, build, train with teacher forcing, save.

    ``config`` is the lab's dataclass (``seed``, ``train_size``, ``val_size``, ``epochs``,
    ``batch_size``, ``learning_rate``); ``vocabularies()`` gives the source and target
    vocabularies; ``build_model(config, source_size, target_size)`` the model; ``sample(n, seed,
    split=...)`` the training pairs (train split) and validation pairs (dev split). With
    ``out_dir``, the run folder gets ``model.keras``, ``vocab.json``, ``metrics.json`` and
    ``training_curve.png`` (titled ``title``).
    """
    from labs.common.training import prepare_run_folder, set_seed, train_model

    if out_dir is not None:
        out_dir = prepare_run_folder(out_dir)
    set_seed(config.seed)
    vocabs = vocabularies()
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))
    training_pairs = sample(config.train_size, config.seed, split="train")
    validation_pairs = sample(config.val_size, config.seed, split="dev")
    history, seconds, device = train_model(
        model, config, make_dataset(training_pairs, vocabs, config.batch_size, shuffle_seed=config.seed),
        make_dataset(validation_pairs, vocabs, config.batch_size), examples=len(training_pairs),
        description=f"the {description}", metrics=["accuracy"], verbose=verbose)
    run = TrainedTranslator(model, vocabs, config, history, seconds, device)
    if out_dir is not None:
        save_translator_run(run, out_dir, task, title)
    return run


def save_translator_run(run: TrainedTranslator, out_dir, task: str, title: str) -> None:
    """Write ``model.keras``, ``vocab.json``, ``metrics.json`` and ``training_curve.png`` into ``out_dir``."""
    import matplotlib.pyplot as plt

    from labs.common.files import write_json
    from labs.common.plots import plot_training_curves
    from labs.common.training import save_model_atomically
    from labs.common.vocab import save_vocabularies

    save_model_atomically(run.model, out_dir / "model.keras")
    save_vocabularies(out_dir / "vocab.json", task, run.vocabs)
    write_json(out_dir / "metrics.json", {
        "task": task, "config": run.config.to_dict(), "device": run.device, "training_seconds": round(run.seconds, 2),
        "parameters": run.model.count_params(),
        "loss_nats_per_char": {name: [round(v, 6) for v in values] for name, values in run.history.items()},
    })
    figure = plot_training_curves(run.history, unit="cross-entropy (nats per character)", title=title,
                                  path=out_dir / "training_curve.png")
    plt.close(figure)
