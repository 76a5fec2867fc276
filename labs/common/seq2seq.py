"""The encoder-decoder contract that lab 2 and the homework share: its encoder, how its halves are wired, and
one step of decoding.

Each lab's ``model.py`` builds its network as two Keras models, and wires them once (:func:`connect`):

    encoder: source (B, S) -> {"memory": {...}, "state": [...]}
        memory: what every output step reads, computed once per source: the encoder states
                ``h`` (B, S, 2u), the ``source_mask`` (B, S), and what a score computes from h_j
                alone (lab 2's ``keys``, U_a h_j)
        state:  the decoder's first state (the encoder's final states)
    decoder: {"target_in": (B, T), "memory": {...}, "state": [...]}
        -> {"probabilities": (B, T, V), "attention": (B, T, S), "state": [...]}

(a model without attention has no ``"attention"`` and no ``"memory"``; run folders saved before
the memory was named hold it as a list, ``[h, keys, source_mask]``, which works the same: nothing
here looks inside it). Two kinds of decoder are special: one that reads a *single* character per call
(Bahdanau's, whose step needs the previous step's context: ``target_in`` is (B, 1)) is unrolled
over the target for training (:func:`unroll`); one with no ``"state"`` (the Transformer's)
re-reads its whole prefix at every step. From that one definition come:

- the training model: ``(source, target_in) -> probabilities``, the decoder over the whole
  target at once, with teacher forcing (:func:`connect`);
- the attention view (:func:`attention_model`): the same with the weights as a second output;
- decoding, one step at a time: :func:`encode` once per source gives a :class:`DecoderState`,
  and :func:`step` writes one character from it. That is all a greedy loop needs::

      state = seq2seq.encode(model, source)            # source (B, S)
      y = <s> for every row                            # (B,)
      for t in range(max_length):
          p, state, a = seq2seq.step(model, y, state)  # p (B, V), a (B, S)
          y = the next character, chosen from p

  and all that :mod:`labs.common.decoding` (greedy, sampling, beam search, in batches) drives
  through :func:`step_function`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from labs.common import decoding
from labs.common.errors import InputError


def inputs():
    """The translation signature's two inputs: ``source`` (batch, S) and ``target_in`` (batch, T)."""
    return (
        keras.Input(shape=(None,), dtype="int32", name="source"),
        keras.Input(shape=(None,), dtype="int32", name="target_in"),
    )


def inputs_like(structure, names: tuple[str, ...] = ()):
    """Keras inputs shaped like ``structure``'s tensors (an encoder's outputs), for the decoder to take.

    A dict's inputs are named by its keys; a list's by ``names``, in order.
    """
    if isinstance(structure, dict):
        return {
            name: keras.Input(shape=t.shape[1:], dtype=t.dtype, name=name) for name, t in structure.items()
        }
    return [keras.Input(shape=t.shape[1:], dtype=t.dtype, name=name) for t, name in zip(structure, names)]


def encode_source(
    source,
    vocab_size: int,
    embedding_dim: int,
    units: int,
    dropout: float = 0.0,
    cell: str = "lstm",
    layers: int = 1,
):
    """The shared encoder: source (B, S) -> h (B, S, 2u), the decoder's first state, the source mask.

    A bidirectional LSTM (or GRU, ``cell="gru"``) reads the source characters both ways, so each h_j
    knows its neighbours on both sides; its two final states, side by side, start the decoder: [h, c]
    (B, 2u) each for an LSTM, [h] for a GRU. With ``dropout``, training drops that share of the source
    embeddings (the model cannot lean on any one of them, which helps it with words it never saw). With
    ``layers`` above 1, that many bidirectional RNNs are stacked, each reading the one below; the top one
    gives h_j and the states.
    """
    # (B, S)
    source_mask = keras.ops.not_equal(source, 0)
    # (B, S, e)
    x = keras.layers.Embedding(vocab_size, embedding_dim, mask_zero=True, name="source_embedding")(source)
    if dropout:
        x = keras.layers.Dropout(dropout, name="source_dropout")(x)
    rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
    for i in range(1, layers):  # the lower layers, numbered from the bottom; the top one is bi{cell} below
        # (B, S, 2u): read by the layer above
        x = keras.layers.Bidirectional(rnn(units, return_sequences=True), name=f"bi{cell}_{i}")(x)
    if cell == "gru":
        bigru = keras.layers.Bidirectional(
            keras.layers.GRU(units, return_sequences=True, return_state=True), name="bigru"
        )
        # h_j (B, S, 2u); each direction's final h (B, u)
        h, forward_h, backward_h = bigru(x)
        return h, [keras.layers.Concatenate(name="first_h")([forward_h, backward_h])], source_mask
    bilstm = keras.layers.Bidirectional(
        keras.layers.LSTM(units, return_sequences=True, return_state=True), name="bilstm"
    )
    # h_j (B, S, 2u); each direction's final h and c (B, u)
    h, forward_h, forward_c, backward_h, backward_c = bilstm(x)
    # [h, c] (B, 2u) each
    state = [
        keras.layers.Concatenate(name="first_h")([forward_h, backward_h]),
        keras.layers.Concatenate(name="first_c")([forward_c, backward_c]),
    ]
    return h, state, source_mask


def connect(encoder, decoder, source, target_in, steps: int | None = None) -> dict:
    """The decoder over ``target_in`` after the encoder over ``source``: the decoder's outputs (a dict).

    A one-character decoder is unrolled over ``steps`` positions (the longest ``target_in``)."""
    if reads_one_step(decoder):
        if steps is None:
            raise ValueError(
                "a decoder that reads one character per call needs the number of steps to unroll"
            )
        return unroll(decoder, encoder(source), target_in, steps)
    inputs = {"target_in": target_in, **encoder(source)}
    # a Transformer's decoder takes no "state"; a baseline's no "memory"
    return decoder({name: value for name, value in inputs.items() if name in decoder.input})


def reads_one_step(decoder) -> bool:
    """Whether ``decoder`` takes one character per call (``target_in`` of shape (batch, 1))."""
    return decoder.input["target_in"].shape[1:] == (1,)


def unroll(decoder, encoded: dict, target_in, steps: int) -> dict:
    """Teacher forcing for a one-character decoder: the same decoder at every position, its state carried.

    ``target_in`` (B, T), T <= ``steps``, is padded to ``steps`` columns, the decoder runs on each in turn,
    and the outputs are cut back to T: (B, T, V) probabilities, (B, T, S) weights. A longer ``target_in`` is
    an error (decoding never writes past the task's longest output)."""
    ops = keras.ops
    # (B, steps): target_in, then <pad>
    padding = ops.tile(ops.zeros_like(target_in[:, :1]), [1, steps])
    padded = ops.concatenate([target_in, padding], axis=1)[:, :steps]
    memory, state, written = encoded.get("memory", []), encoded["state"], {}
    # y_{t-1} -> s_t, c_t, p_t, one position at a time
    for t in range(steps):
        outputs = decoder({"target_in": padded[:, t : t + 1], "memory": memory, "state": state})
        state = outputs["state"]
        for name in ("probabilities", "attention"):
            if name in outputs:
                # (B, 1, ...)
                written.setdefault(name, []).append(outputs[name])
    # T is unknown while the graph is built, so the positions to keep are counted from the data: 0 .. T-1.
    first_T = ops.cumsum(ops.ones_like(target_in[0]), axis=0) - 1
    # (B, T, ...)
    return {
        name: ops.take(keras.layers.Concatenate(axis=1)(parts), first_T, axis=1)
        for name, parts in written.items()
    }


def is_two_part(model) -> bool:
    """Whether ``model`` is built from an encoder and a decoder (the kit's since 0.2; a student's may not
    be)."""
    return {"encoder", "decoder"} <= {layer.name for layer in model.layers}


def max_source_length(model) -> int | None:
    """The longest source ``model`` reads: a Transformer's position table; None (any length) otherwise."""
    if not is_two_part(model):
        return None
    encoder = model.get_layer("encoder")
    names = {layer.name for layer in encoder.layers}
    return encoder.get_layer("source_positions").input_dim if "source_positions" in names else None


def check_source_length(model, texts) -> None:
    """Raise InputError naming the first of ``texts`` longer than ``model`` reads (a Transformer's limit)."""
    limit = max_source_length(model)
    too_long = next((t for t in texts if limit is not None and isinstance(t, str) and len(t) > limit), None)
    if too_long is not None:
        raise InputError(
            f"{too_long[:40]!r}... has {len(too_long):,} characters; this model reads at most {limit}"
        )


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

    It calls the model's own two halves on tensors (compiled to a TensorFlow graph once, as :func:`step`
    does); it does not wire them into a new Keras graph. Keras 3.13 (Colab's release) cannot wire its
    attention layers again once they have run with ``return_attention_scores=True``: ``Cannot convert '((None,
    1, 32), (None, 1, None))' to a shape``."""

    def __init__(self, encoder, decoder, steps: int | None = None):
        # plain tensors out: the decoder takes the source mask as an input, not as h_j's Keras mask
        def encode(source):
            return tf.nest.map_structure(tf.identity, encoder(source))

        # (B, T, V), (B, T, S)
        def run(source, target_in):
            outputs = connect(encode, decoder, source, target_in, steps)
            return outputs["probabilities"], outputs["attention"]

        # no Python control flow on tensors: nothing for autograph to convert
        self._run = tf.function(run, reduce_retracing=True, autograph=False)
        self._heads = None
        if "heads" in decoder.output:  # several heads (multi-head, Transformer): each head's weights too
            # (B, H, T, S)
            def heads(source, target_in):
                return connect(encode, decoder, source, target_in, steps)["heads"]

            self._heads = tf.function(heads, reduce_retracing=True, autograph=False)

    def __call__(self, inputs):
        """``[source (B, S), target_in (B, T)]`` -> ``[probabilities (B, T, V), weights (B, T, S)]``."""
        source, target_in = (tf.convert_to_tensor(np.asarray(x), dtype=tf.int32) for x in inputs)
        return list(self._run(source, target_in))

    def predict_on_batch(self, inputs):
        """The same as NumPy arrays (what :func:`labs.common.decoding.full_model_step` calls)."""
        return [np.asarray(x) for x in self(inputs)]

    def heads(self, inputs) -> np.ndarray | None:
        """``[source (B, S), target_in (B, T)]`` -> each head's weights (B, H, T, S); None for one head."""
        if self._heads is None:
            return None
        source, target_in = (tf.convert_to_tensor(np.asarray(x), dtype=tf.int32) for x in inputs)
        return np.asarray(self._heads(source, target_in))


class DecoderState(NamedTuple):
    """What decoding carries from one step to the next, batch first in every array.

    ``memory``: the encoder's output that every step reads, as the encoder gives it (h_j, the
    source mask, keys), unchanged from step to step; ``carried``: the decoder's recurrent state
    after the last step ([s, c] for an LSTM), or, for a decoder without one (a Transformer), the
    prefix written so far (B, t), which it re-reads.
    """

    memory: Any
    carried: list


def rereads_prefix(decoder) -> bool:
    """Whether ``decoder`` keeps no state between steps (a Transformer's): each step re-reads its prefix."""
    return "state" not in decoder.input


def encode(model, source) -> DecoderState:
    """The encoder, once per source (B, S): the first :class:`DecoderState`."""
    run_encoder, _, rereads = _compiled(model)
    encoded = run_encoder(tf.convert_to_tensor(np.asarray(source), dtype=tf.int32))
    if rereads:
        return DecoderState(encoded.get("memory"), [tf.zeros((len(source), 0), dtype=tf.int32)])
    return DecoderState(encoded.get("memory"), list(encoded["state"]))


def step(model, tokens, state: DecoderState):
    """One output step: the last characters written, tokens (B,) -> p_t (B, V), the next state, a_t (B, S).

    The attention weights a_t are None for a model without attention. The state stays as tensors
    on the device; only p_t and a_t come back as NumPy arrays.
    """
    _, run_decoder, rereads = _compiled(model)
    # (B, 1): the character each sequence wrote last
    y = tf.convert_to_tensor(np.asarray(tokens)[:, None], dtype=tf.int32)
    if rereads:
        # (B, t): the whole prefix, the newest character last
        prefix = tf.concat([state.carried[0], y], axis=1)
        inputs = {"target_in": prefix}
    else:
        inputs = {"target_in": y, "state": list(state.carried)}
    if state.memory is not None:
        inputs["memory"] = state.memory
    outputs = run_decoder(inputs)
    # what the next step starts from: the decoder's new state, or the longer prefix
    carried = [prefix] if rereads else list(outputs["state"])
    attention = outputs.get("attention")
    return (
        outputs["probabilities"][:, -1].numpy(),
        DecoderState(state.memory, carried),
        None if attention is None else attention[:, -1].numpy(),
    )


def step_function(model, source):
    """A :mod:`labs.common.decoding` step function over ``model`` for ``source`` (B, S), and its first state.

    A model that is not built from an encoder and a decoder (a student's may not be) is re-run
    whole on every prefix instead (:func:`labs.common.decoding.full_model_step`).
    """
    if not is_two_part(model):
        return decoding.full_model_step(model, source)
    return (lambda tokens, state: step(model, tokens, state)), encode(model, source)


def stepper(model, *, steps: int, step_decoding: bool = True):
    """``source (B, S) -> (step function, first state)`` for :func:`labs.common.decoding.translate_texts`.

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder the
    autograder uses on any model with the translation signature); the outputs are the same. ``steps``: the
    longest output, how far a one-character decoder's attention view unrolls."""
    if step_decoding:
        return lambda source: step_function(model, source)
    viewed = attention_model(model, steps=steps) or model
    return lambda source: decoding.full_model_step(viewed, source)


def _compiled(model):
    """``model``'s encoder and decoder, each compiled to a TensorFlow graph once per model, and whether
    the decoder re-reads its prefix.

    Run layer by layer, eagerly, the encoder alone would cost more than all the steps. There is no
    Python control flow inside, so nothing for autograph to convert.
    """

    def compile_halves():
        encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
        return (
            tf.function(lambda x: encoder(x, training=False), reduce_retracing=True, autograph=False),
            tf.function(lambda x: decoder(x, training=False), reduce_retracing=True, autograph=False),
            rereads_prefix(decoder),
        )

    return decoding.cached(model, "encoder and decoder graphs", compile_halves)
