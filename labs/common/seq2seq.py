"""The encoder-decoder that lab 2 and the homework share: its encoder, how its halves are wired, how it
translates.

Each lab's ``model.py`` builds its network as two Keras models, and wires them once (:func:`connect`):

    encoder: source (batch, S) -> {"memory": [...], "state": [...]}
        memory: what every output step reads: the encoder states h_j (batch, S, 2u), the source
                mask (batch, S), and what is computed from h_j once (lab 2's keys U_a h_j)
        state:  the decoder's first state (the encoder's final states)
    decoder: {"target_in": (batch, T), "memory": [...], "state": [...]}
        -> {"probabilities": (batch, T, V), "attention": (batch, T, S), "state": [...]}

(a model without attention has no ``"attention"``, and may need no ``"memory"``). Two kinds of
decoder are special: one that reads a *single* character per call (Bahdanau's, whose step needs
the previous step's context: ``target_in`` is (batch, 1)) is unrolled over the target
(:func:`unroll`); one with no ``"state"`` (the Transformer's) re-reads its whole prefix at every
step. From that one definition come three uses:

- the training model: ``(source, target_in) -> probabilities``, the decoder over the whole
  target at once, with teacher forcing;
- the attention view (:func:`attention_model`): the same with the weights as a second output;
- the step decoder (:func:`step_decoder`): the encoder once per input, then the same decoder on
  one character at a time, carrying its state (what greedy and beam search drive).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from labs.common.decoding import beam_search, decode_steps, full_model_step
from labs.common.vocab import Vocabulary


def inputs():
    """The translation signature's two inputs: ``source`` (batch, S) and ``target_in`` (batch, T)."""
    import keras

    return (
        keras.Input(shape=(None,), dtype="int32", name="source"),
        keras.Input(shape=(None,), dtype="int32", name="target_in"),
    )


def encode_source(source, vocab_size: int, embedding_dim: int, units: int, dropout: float = 0.0):
    """The shared encoder: source (batch, S) -> h (batch, S, 2u), first decoder state [(batch, 2u)] * 2, mask
    (batch, S).

    A bidirectional LSTM reads the source characters both ways, so each h_j knows its
    neighbours on both sides; its two final states, side by side, start the decoder. With
    ``dropout``, training drops that share of the source embeddings (the model cannot lean on
    any one of them, which helps it with words it never saw).
    """
    import keras

    source_mask = keras.ops.not_equal(source, 0)  # (batch, S)
    x = keras.layers.Embedding(vocab_size, embedding_dim, mask_zero=True, name="source_embedding")(source)
    if dropout:
        x = keras.layers.Dropout(dropout, name="source_dropout")(x)  # (batch, S, e)
    h, forward_h, forward_c, backward_h, backward_c = keras.layers.Bidirectional(
        keras.layers.LSTM(units, return_sequences=True, return_state=True), name="bilstm"
    )(x)  # h (batch, S, 2u)
    state = [
        keras.layers.Concatenate(name="first_h")([forward_h, backward_h]),  # (batch, 2u)
        keras.layers.Concatenate(name="first_c")([forward_c, backward_c]),
    ]  # (batch, 2u)
    return h, state, source_mask


def connect(encoder, decoder, source, target_in, steps: int | None = None) -> dict:
    """The decoder over ``target_in`` after the encoder over ``source``: the decoder's outputs (a dict).

    A one-character decoder is unrolled over ``steps`` positions (the longest ``target_in``).
    """
    if reads_one_step(decoder):
        if steps is None:
            raise ValueError(
                "a decoder that reads one character per call needs the number of steps to unroll"
            )
        return unroll(decoder, encoder(source), target_in, steps)
    inputs = {"target_in": target_in, **encoder(source)}
    return decoder(
        {name: value for name, value in inputs.items() if name in decoder.input}
    )  # no "state": a Transformer


def reads_one_step(decoder) -> bool:
    """Whether ``decoder`` takes one character per call (``target_in`` of shape (batch, 1))."""
    return decoder.input["target_in"].shape[1:] == (1,)


def unroll(decoder, encoded: dict, target_in, steps: int) -> dict:
    """Teacher forcing for a one-character decoder: the same decoder at every position, its state carried.

    ``target_in`` (B, T), T <= ``steps``, is padded to ``steps`` columns, the decoder runs on
    each in turn, and the outputs are cut back to T: (B, T, V) probabilities, (B, T, S) weights.
    A longer ``target_in`` is an error (:func:`translate` never writes past ``max_length``).
    """
    import keras
    from keras import ops

    padding = ops.tile(ops.zeros_like(target_in[:, :1]), [1, steps])  # (B, steps) of <pad>
    padded = ops.concatenate([target_in, padding], axis=1)[:, :steps]  # (B, steps)
    memory, state, written = encoded.get("memory", []), encoded["state"], {}
    for t in range(steps):  # y_{t-1} -> s_t, c_t, p_t
        outputs = decoder({"target_in": padded[:, t : t + 1], "memory": memory, "state": state})
        state = outputs["state"]
        for name in ("probabilities", "attention"):
            if name in outputs:
                written.setdefault(name, []).append(outputs[name])  # (B, 1, ...)
    # T is unknown while the graph is built, so the positions to keep are counted from the data.
    first_T = ops.cumsum(ops.ones_like(target_in[0]), axis=0) - 1  # 0, 1, ..., T-1
    return {
        name: ops.take(keras.layers.Concatenate(axis=1)(parts), first_T, axis=1)  # (B, T, ...)
        for name, parts in written.items()
    }


def is_two_part(model) -> bool:
    """Whether ``model`` is built from an encoder and a decoder (the kit's since 0.2; a student's may not
    be)."""
    return {"encoder", "decoder"} <= {layer.name for layer in model.layers}


def attention_model(model, steps: int | None = None):
    """``model`` with its attention weights: ``(source, target_in) -> [probabilities, weights[B, T, S]]``, or
    None.

    ``steps``: how far to unroll a one-character decoder (the task's longest target). The view
    is an :class:`AttentionView`: called like a model, or through ``predict_on_batch``.
    """
    if not is_two_part(model):
        return None
    encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
    if "attention" not in decoder.output or (reads_one_step(decoder) and steps is None):
        return None
    return AttentionView(encoder, decoder, steps)


class AttentionView:
    """A model's encoder and decoder run on the inputs it gets, the weights kept: a second output.

    It calls the model's own two halves on tensors (compiled to a TensorFlow graph once, as
    :func:`step_decoder` does); it does not wire them into a new Keras graph. Keras 3.13 (Colab's
    release) cannot wire its attention layers again once they have run with
    ``return_attention_scores=True``: ``Cannot convert '((None, 1, 32), (None, 1, None))' to a shape``.
    """

    def __init__(self, encoder, decoder, steps: int | None = None):
        import tensorflow as tf

        def encode(
            source,
        ):  # plain tensors out: the decoder takes the source mask as an input, not as h_j's Keras mask
            return tf.nest.map_structure(tf.identity, encoder(source))

        def run(source, target_in):
            outputs = connect(encode, decoder, source, target_in, steps)
            return outputs["probabilities"], outputs["attention"]  # (B, T, V), (B, T, S)

        self._run = tf.function(
            run, reduce_retracing=True, autograph=False
        )  # no Python control flow on tensors

    def __call__(self, inputs):
        """``[source (B, S), target_in (B, T)]`` -> ``[probabilities (B, T, V), weights (B, T, S)]`` as
        tensors."""
        import tensorflow as tf

        source, target_in = (tf.convert_to_tensor(np.asarray(x), dtype=tf.int32) for x in inputs)
        return list(self._run(source, target_in))

    def predict_on_batch(self, inputs):
        """The same as NumPy arrays (what :func:`labs.common.decoding.full_model_step` calls)."""
        return [np.asarray(x) for x in self(inputs)]


_COMPILED = weakref.WeakKeyDictionary()  # model -> its encoder and decoder, each compiled once


def step_decoder(model, source: np.ndarray):
    """A :mod:`labs.common.decoding` step function for ``source`` (batch, S), and its first state.

    The state is ``[*memory, *decoder state]``: the encoder's output, computed once, then the
    decoder's state after each step; for a decoder without a state (a Transformer), the prefix
    written so far, which it re-reads at every step. Encoder and decoder are compiled to TensorFlow graphs
    once
    per model (run layer by layer, eagerly, the encoder alone would cost more than all the
    steps); the state stays as tensors on the device between steps, and only the small outputs
    (probabilities, attention weights) come back to NumPy.
    """
    import tensorflow as tf

    if not is_two_part(model):  # a model from elsewhere: re-run it whole on every prefix
        return full_model_step(model, source)
    if model not in _COMPILED:
        encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
        # No Python control flow inside, so nothing for autograph to convert.
        _COMPILED[model] = (
            tf.function(lambda x: encoder(x, training=False), reduce_retracing=True, autograph=False),
            tf.function(lambda x: decoder(x, training=False), reduce_retracing=True, autograph=False),
        )
    run_encoder, run_decoder = _COMPILED[model]
    encoded = run_encoder(tf.convert_to_tensor(np.asarray(source)))
    memory = list(encoded.get("memory", []))
    n = len(memory)
    rereads_prefix = "state" not in model.get_layer("decoder").input

    def step(tokens, state):
        tokens = tf.convert_to_tensor(tokens[:, None], dtype=tf.int32)  # (batch, 1)
        if rereads_prefix:
            prefix = tf.concat([state[n], tokens], axis=1)  # (batch, t)
            inputs = {"target_in": prefix}
        else:
            inputs = {"target_in": tokens, "state": list(state[n:])}
        if n:
            inputs["memory"] = list(state[:n])
        outputs = run_decoder(inputs)
        attention = outputs.get("attention")
        carried = [prefix] if rereads_prefix else outputs["state"]
        return (
            outputs["probabilities"][:, -1].numpy(),
            [*state[:n], *carried],
            None if attention is None else attention[:, -1].numpy(),
        )

    first = [tf.zeros((len(source), 0), dtype=tf.int32)] if rereads_prefix else list(encoded["state"])
    return step, [*memory, *first]


@dataclass
class Translation:
    source: str
    output: str  # the best output
    attention: np.ndarray | None  # (len(output) + 1, len(source)): one row per output character and </s>
    alternatives: list[str]  # every beam's output, best first (just [output] for greedy)


def translate(
    model,
    vocabs: dict[str, Vocabulary],
    texts: list[str],
    *,
    max_length: int,
    beam: int = 1,
    batch_size: int = 10_000,
    step_decoding: bool = True,
) -> list[Translation]:
    """Translate ``texts`` in batches; ``beam > 1`` uses beam search and keeps the top ``beam`` outputs.

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder
    the autograder uses on any model with the translation signature); the outputs are the same.
    Characters outside the source vocabulary become ``<unk>``.
    """
    if step_decoding:

        def make_step(source):
            return step_decoder(model, source)
    else:
        viewed = attention_model(model, steps=max_length) or model  # prefixes are at most max_length long

        def make_step(source):
            return full_model_step(viewed, source)

    return _decode_texts(texts, vocabs, make_step, max_length=max_length, beam=beam, batch_size=batch_size)


def _decode_texts(
    texts: list[str],
    vocabs: dict[str, Vocabulary],
    make_step: Callable,
    *,
    max_length: int,
    beam: int,
    batch_size: int,
) -> list[Translation]:
    results: list[Translation] = []
    for first in range(0, len(texts), batch_size):
        batch = texts[first : first + batch_size]
        step, state = make_step(vocabs["source"].encode_batch(batch, unknown="unk"))  # source (batch, S)
        if beam > 1:
            ranked = beam_search(step, state, len(batch), beam_width=beam, max_length=max_length)
        else:
            ranked = [decode_steps(step, state, len(batch), max_length=max_length, greedy=True)]
        for row, text in enumerate(batch):
            outputs = [vocabs["target"].decode(decoded.tokens[row]) for decoded in ranked]
            attention = ranked[0].attention
            weights = None if attention is None else attention[row, : len(outputs[0]) + 1, : len(text)]
            results.append(Translation(text, outputs[0], weights, outputs))
    return results
