"""Homework 3.1's model: an encoder-decoder with key-value attention that writes Thai names in English.

    source (batch, S) -> Embedding -> bidirectional LSTM -> encoder states h_j (batch, S, 2u)
    target_in (batch, T) -> Embedding -> LSTM (starts from the encoder's final states)
        -> decoder states s_t (batch, T, 2u)
    key-value attention (``homework/kv_attention.py``), the decoder state as the query:
        keys k_j = W_k h_j (score only), values v_j = W_v h_j (context only), query q_t = W_q s_t
        weights a_t = softmax over the real source positions of q_t . k_j / sqrt(key_dim)
        context c_t = sum_j a_tj v_j                              (batch, T, value_dim)
    output: softmax(Dense(tanh(Dense([s_t; c_t]))))             (batch, T, vocab)

Everything but the attention is lab 2's network (:mod:`labs.common.seq2seq`), so the two labs
differ exactly where the lecture says they do. The layer is the one the homework asks students
to write: in the instructor's kit it holds the solution, in the released kit the student's code.
"""

from __future__ import annotations

import numpy as np

from labs.common import seq2seq
from labs.common.errors import InputError
from labs.name_transliteration.config import NameTransliterationConfig

ATTENTION_LAYERS = ("attention",)


def key_value_attention_class():
    """``KeyValueAttention`` from ``homework/kv_attention.py``: importing it registers it for loading models."""
    try:
        from homework.kv_attention import KeyValueAttention
    except ModuleNotFoundError as error:
        if error.name not in ("homework", "homework.kv_attention"):
            raise
        raise InputError("cannot find homework/kv_attention.py (the key-value attention layer); "
                         "run from the kit's folder, the one that holds labs/ and homework/") from None
    return KeyValueAttention


def _create_layers(config: NameTransliterationConfig, source_vocab_size: int, target_vocab_size: int) -> dict:
    layers = seq2seq.create_core_layers(config.embedding_dim, config.units, source_vocab_size, target_vocab_size,
                                        dropout=config.dropout)
    layers["attention"] = key_value_attention_class()(config.key_dim, config.value_dim, score=config.score,
                                                      name="attention")
    return layers


def _decode(layers: dict, target_in, initial, encoder_states, source_mask):
    """Decoder over target_in (batch, T) -> probabilities (batch, T, V), weights (batch, T, S), [h, c]."""
    decoder_states, final_state = seq2seq.run_decoder(layers, target_in, initial)    # (batch, T, 2u)
    context, weights = layers["attention"](decoder_states, encoder_states, memory_mask=source_mask,
                                           return_attention_scores=True)             # (batch, T, value_dim), (batch, T, S)
    return seq2seq.next_char_probabilities(layers, decoder_states, context), weights, final_state


def _forward(layers: dict, source, target_in):
    encoder_states, initial, source_mask = seq2seq.encode(layers, source)
    probabilities, weights, _ = _decode(layers, target_in, initial, encoder_states, source_mask)
    return probabilities, weights


def build_model(config: NameTransliterationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    import keras

    source, target_in = seq2seq.model_inputs()
    probabilities, _ = _forward(_create_layers(config, source_vocab_size, target_vocab_size), source, target_in)
    return keras.Model([source, target_in], probabilities, name="name_transliterator")


def _layers_of(model) -> dict:
    return seq2seq.layers_of(model, seq2seq.CORE_LAYERS + ATTENTION_LAYERS)


def build_attention_model(model):
    """The same network with a second output: ``(source, target_in) -> (probabilities, weights[B, T, S])``."""
    import keras

    source, target_in = seq2seq.model_inputs()
    probabilities, weights = _forward(_layers_of(model), source, target_in)
    return keras.Model([source, target_in], [probabilities, weights], name="with_attention")


def build_step_models(model):
    """Two models sharing ``model``'s layers, for fast decoding.

    - encoder: ``source[B, S] -> (encoder_states, source_mask, h, c)``, run once per input;
    - step: ``(token[B, 1], encoder_states, source_mask, h, c) -> (probabilities[B, V],
      weights[B, S], h, c)``, run once per output character.
    """
    import keras

    layers = _layers_of(model)
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    encoder_states, (h, c), source_mask = seq2seq.encode(layers, source)
    encoder = keras.Model(source, [encoder_states, source_mask, h, c], name="encoder")

    units = encoder_states.shape[-1]
    token, (states_in, mask_in), h_in, c_in = seq2seq.step_inputs(units, {
        "encoder_states": ((None, units), "float32"),      # (batch, S, 2u)
        "source_mask": ((None,), "bool"),                  # (batch, S)
    })
    probabilities, weights, (h_out, c_out) = _decode(layers, token, [h_in, c_in], states_in, mask_in)
    step = keras.Model([token, states_in, mask_in, h_in, c_in],
                       [probabilities[:, 0], weights[:, 0], h_out, c_out], name="step")
    return encoder, step


def step_decoder(model, source: np.ndarray):
    """A :mod:`labs.common.decoding` step function for ``source`` (batch, S), and its first state.

    The encoder runs once; each step runs only the decoder for one character, carrying
    ``[encoder_states, source_mask, h, c]`` as the state (see :func:`labs.common.seq2seq.step_decoder`).
    """
    return seq2seq.step_decoder(model, source, build_step_models)
