"""Lab 2's model: an encoder-decoder that reads a human date and writes it as ISO 8601.

    source (batch, S) -> Embedding -> bidirectional LSTM -> encoder states (batch, S, 2u)
    target_in (batch, T) -> Embedding -> LSTM (starts from the encoder's final states)
        -> decoder states (batch, T, 2u)
    attention: each decoder state asks "which source characters matter now?"
        score(s_t, h_j) = v . tanh(W s_t + U h_j)             (Bahdanau's additive score)
        weights a_t = softmax over the real source positions  (padding masked out)
        context c_t = sum_j a_tj h_j
    output: softmax(Dense(tanh(Dense([s_t; c_t]))))            (batch, T, vocab)

The encoder, the decoder LSTM and the output layers are shared with homework 3.1 and live in
:mod:`labs.common.seq2seq`; this file builds the attention.

Where this sits between the two classic designs: the *score* is Bahdanau's (additive), but the
*placement* is Luong's: the decoder attends with its current state s_t and combines the context
after the RNN, rather than attending with the previous state and feeding the context into the
RNN's input. Luong's placement lets teacher-forced training run the decoder LSTM over the whole
target in one call (fast, cuDNN on a GPU); Bahdanau's needs a Python loop over time steps,
because each step's input depends on the previous step's attention.

``keras.layers.AdditiveAttention`` computes ``sum(scale * tanh(query + key))`` without learned
matrices, so the model projects the query (W s_t) and the keys (U h_j) with Dense layers first.

The baseline (``attention=False``) is the same network without the attention: everything the
decoder knows about the source is the encoder's final state, one fixed-size vector.
"""

from __future__ import annotations

import numpy as np

from labs.common import seq2seq
from labs.date_translation.config import DateTranslationConfig

ATTENTION_LAYERS = ("query_projection", "key_projection", "attention")


def _create_layers(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int) -> dict:
    import keras

    layers = seq2seq.create_core_layers(config.embedding_dim, config.units, source_vocab_size, target_vocab_size)
    if config.attention:
        layers["query_projection"] = keras.layers.Dense(config.attention_units, use_bias=False, name="query_projection")
        layers["key_projection"] = keras.layers.Dense(config.attention_units, use_bias=False, name="key_projection")
        layers["attention"] = keras.layers.AdditiveAttention(name="attention")
    return layers


def _layers_of(model) -> dict:
    return seq2seq.layers_of(model, seq2seq.CORE_LAYERS + ATTENTION_LAYERS)


def _decode(layers: dict, target_in, initial, encoder_states, keys, source_mask):
    """Decoder over target_in (batch, T) -> probabilities (batch, T, V), weights (batch, T, S) or None, [h, c]."""
    decoder_states, final_state = seq2seq.run_decoder(layers, target_in, initial)   # (batch, T, 2u)
    if "attention" not in layers:
        return seq2seq.next_char_probabilities(layers, decoder_states), None, final_state
    query = layers["query_projection"](decoder_states)                               # (batch, T, a)
    context, weights = layers["attention"]([query, encoder_states, keys], mask=[None, source_mask],
                                           return_attention_scores=True)             # (batch, T, 2u), (batch, T, S)
    return seq2seq.next_char_probabilities(layers, decoder_states, context), weights, final_state


def _forward(layers: dict, source, target_in):
    encoder_states, initial, source_mask = seq2seq.encode(layers, source)
    keys = layers["key_projection"](encoder_states) if "attention" in layers else None  # (batch, S, a)
    probabilities, weights, _ = _decode(layers, target_in, initial, encoder_states, keys, source_mask)
    return probabilities, weights


def build_model(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    import keras

    source, target_in = seq2seq.model_inputs()
    probabilities, _ = _forward(_create_layers(config, source_vocab_size, target_vocab_size), source, target_in)
    return keras.Model([source, target_in], probabilities, name="date_translator" if config.attention else "date_baseline")


def has_attention(model) -> bool:
    return any(layer.name == "attention" for layer in model.layers)


def build_attention_model(model):
    """The same network with a second output: ``(source, target_in) -> (probabilities, weights[B, T, S])``."""
    import keras

    source, target_in = seq2seq.model_inputs()
    probabilities, weights = _forward(_layers_of(model), source, target_in)
    return keras.Model([source, target_in], [probabilities, weights], name="with_attention")


def build_step_models(model):
    """Two models sharing ``model``'s layers, for fast decoding.

    - encoder: ``source[B, S] -> (encoder_states, keys, source_mask, h, c)``, run once per input
      (the keys ``U h_j`` too: they do not change from one output step to the next);
    - step: ``(token[B, 1], encoder_states, keys, source_mask, h, c) -> (probabilities[B, V],
      weights[B, S], h, c)``, run once per output character.
    """
    import keras

    layers = _layers_of(model)
    attention = "attention" in layers
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    encoder_states, (h, c), source_mask = seq2seq.encode(layers, source)
    keys = layers["key_projection"](encoder_states) if attention else keras.ops.zeros_like(encoder_states[..., :1])
    encoder = keras.Model(source, [encoder_states, keys, source_mask, h, c], name="encoder")

    units = encoder_states.shape[-1]
    token, (states_in, keys_in, mask_in), h_in, c_in = seq2seq.step_inputs(units, {
        "encoder_states": ((None, units), "float32"),      # (batch, S, 2u)
        "keys": ((None, keys.shape[-1]), "float32"),       # (batch, S, a)
        "source_mask": ((None,), "bool"),                  # (batch, S)
    })
    probabilities, weights, (h_out, c_out) = _decode(layers, token, [h_in, c_in], states_in,
                                                     keys_in if attention else None, mask_in)
    if weights is None:
        weights = keras.ops.zeros_like(keras.ops.cast(mask_in, "float32"))[:, None, :]  # (batch, 1, S): no attention
    step = keras.Model([token, states_in, keys_in, mask_in, h_in, c_in],
                       [probabilities[:, 0], weights[:, 0], h_out, c_out], name="step")
    return encoder, step


def step_decoder(model, source: np.ndarray):
    """A :mod:`labs.common.decoding` step function for ``source`` (batch, S), and its first state.

    The encoder runs once; each step runs only the decoder for one character, carrying
    ``[encoder_states, keys, source_mask, h, c]`` as the state (see :func:`labs.common.seq2seq.step_decoder`).
    """
    return seq2seq.step_decoder(model, source, build_step_models, attention=has_attention(model))
