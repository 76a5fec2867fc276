"""Lab 2's model: an encoder-decoder that reads a human date and writes it as ISO 8601.

    source (batch, S) -> Embedding -> bidirectional LSTM -> encoder states (batch, S, 2u)
    target_in (batch, T) -> Embedding -> LSTM (starts from the encoder's final states)
        -> decoder states (batch, T, 2u)
    attention: each decoder state asks "which source characters matter now?"
        score(s_t, h_j) = v . tanh(W s_t + U h_j)             (Bahdanau's additive score)
        weights a_t = softmax over the real source positions  (padding masked out)
        context c_t = sum_j a_tj h_j
    output: softmax(Dense(tanh(Dense([s_t; c_t]))))            (batch, T, vocab)

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

import weakref

import numpy as np

from labs.date_translation.config import DateTranslationConfig

NAMES = ("source_embedding", "encoder", "target_embedding", "decoder", "query_projection", "key_projection",
         "attention", "combine", "next_char")


def _create_layers(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int) -> dict:
    import keras

    layers = {
        "source_embedding": keras.layers.Embedding(source_vocab_size, config.embedding_dim, mask_zero=True,
                                                   name="source_embedding"),
        "encoder": keras.layers.Bidirectional(keras.layers.LSTM(config.units, return_sequences=True, return_state=True),
                                              name="encoder"),
        "target_embedding": keras.layers.Embedding(target_vocab_size, config.embedding_dim, mask_zero=True,
                                                   name="target_embedding"),
        "decoder": keras.layers.LSTM(2 * config.units, return_sequences=True, return_state=True, name="decoder"),
        "combine": keras.layers.Dense(2 * config.units, activation="tanh", name="combine"),
        "next_char": keras.layers.Dense(target_vocab_size, activation="softmax", name="next_char"),
    }
    if config.attention:
        layers["query_projection"] = keras.layers.Dense(config.attention_units, use_bias=False, name="query_projection")
        layers["key_projection"] = keras.layers.Dense(config.attention_units, use_bias=False, name="key_projection")
        layers["attention"] = keras.layers.AdditiveAttention(name="attention")
    return layers


def _layers_of(model) -> dict:
    present = {layer.name for layer in model.layers}
    return {name: model.get_layer(name) for name in NAMES if name in present}


def _encode(layers: dict, source):
    """source (batch, S) -> encoder states (batch, S, 2u), initial decoder state [h, c], source mask."""
    import keras

    source_mask = keras.ops.not_equal(source, 0)                                     # (batch, S)
    states, forward_h, forward_c, backward_h, backward_c = layers["encoder"](layers["source_embedding"](source))
    initial = [keras.ops.concatenate([forward_h, backward_h], axis=-1),              # (batch, 2u)
               keras.ops.concatenate([forward_c, backward_c], axis=-1)]              # (batch, 2u)
    return states, initial, source_mask


def _decode(layers: dict, target_in, initial, encoder_states, keys, source_mask):
    """Decoder over target_in (batch, T) -> probabilities (batch, T, V), weights (batch, T, S) or None, [h, c]."""
    import keras

    decoder_states, h, c = layers["decoder"](layers["target_embedding"](target_in), initial_state=initial)  # (batch, T, 2u)
    if "attention" not in layers:
        return layers["next_char"](layers["combine"](decoder_states)), None, [h, c]
    query = layers["query_projection"](decoder_states)                               # (batch, T, a)
    context, weights = layers["attention"]([query, encoder_states, keys], mask=[None, source_mask],
                                           return_attention_scores=True)             # (batch, T, 2u), (batch, T, S)
    combined = layers["combine"](keras.ops.concatenate([decoder_states, context], axis=-1))  # (batch, T, 2u)
    return layers["next_char"](combined), weights, [h, c]


def _forward(layers: dict, source, target_in):
    encoder_states, initial, source_mask = _encode(layers, source)
    keys = layers["key_projection"](encoder_states) if "attention" in layers else None  # (batch, S, a)
    probabilities, weights, _ = _decode(layers, target_in, initial, encoder_states, keys, source_mask)
    return probabilities, weights


def _inputs():
    import keras

    return (keras.Input(shape=(None,), dtype="int32", name="source"),       # (batch, S)
            keras.Input(shape=(None,), dtype="int32", name="target_in"))    # (batch, T)


def build_model(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    import keras

    source, target_in = _inputs()
    probabilities, _ = _forward(_create_layers(config, source_vocab_size, target_vocab_size), source, target_in)
    return keras.Model([source, target_in], probabilities, name="date_translator" if config.attention else "date_baseline")


def has_attention(model) -> bool:
    return any(layer.name == "attention" for layer in model.layers)


def build_attention_model(model):
    """The same network with a second output: ``(source, target_in) -> (probabilities, weights[B, T, S])``."""
    import keras

    source, target_in = _inputs()
    probabilities, weights = _forward(_layers_of(model), source, target_in)
    return keras.Model([source, target_in], [probabilities, weights], name="with_attention")


def build_step_models(model):
    """Two models sharing ``model``'s layers, for fast decoding.

    - encoder: ``source[B, S] -> (encoder_states, keys, source_mask, h, c)``, run once per input;
    - step: ``(token[B, 1], encoder_states, keys, source_mask, h, c) -> (probabilities[B, V],
      weights[B, S], h, c)``, run once per output character.
    """
    import keras

    layers = _layers_of(model)
    attention = "attention" in layers
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    encoder_states, (h, c), source_mask = _encode(layers, source)
    keys = layers["key_projection"](encoder_states) if attention else keras.ops.zeros_like(encoder_states[..., :1])
    encoder = keras.Model(source, [encoder_states, keys, source_mask, h, c], name="encoder")

    units = encoder_states.shape[-1]
    token = keras.Input(shape=(1,), dtype="int32", name="token")                     # (batch, 1)
    states_in = keras.Input(shape=(None, units), name="encoder_states")              # (batch, S, 2u)
    keys_in = keras.Input(shape=(None, keys.shape[-1]), name="keys")                 # (batch, S, a)
    mask_in = keras.Input(shape=(None,), dtype="bool", name="source_mask")           # (batch, S)
    h_in, c_in = keras.Input(shape=(units,), name="h"), keras.Input(shape=(units,), name="c")
    probabilities, weights, (h_out, c_out) = _decode(layers, token, [h_in, c_in], states_in,
                                                     keys_in if attention else None, mask_in)
    if weights is None:
        weights = keras.ops.zeros_like(keras.ops.cast(mask_in, "float32"))[:, None, :]  # (batch, 1, S): no attention
    step = keras.Model([token, states_in, keys_in, mask_in, h_in, c_in],
                       [probabilities[:, 0], weights[:, 0], h_out, c_out], name="step")
    return encoder, step


_COMPILED = weakref.WeakKeyDictionary()   # model -> its compiled encoder and step, built once


def _compiled_decoder(model):
    """The encoder and one decoder step as compiled TensorFlow graphs, built once per model.

    Run layer by layer (eagerly), the encoder alone costs more than all the decoding steps.
    """
    import tensorflow as tf

    if model not in _COMPILED:
        encoder, step_model = build_step_models(model)

        def run_encoder(source):
            return encoder(source, training=False)

        def run_step(inputs):
            return step_model(inputs, training=False)

        # No Python control flow inside, so nothing for autograph to convert.
        _COMPILED[model] = (tf.function(run_encoder, reduce_retracing=True, autograph=False),
                            tf.function(run_step, reduce_retracing=True, autograph=False))
    return _COMPILED[model]


def step_decoder(model, source: np.ndarray):
    """A :mod:`labs.common.decoding` step function for ``source`` (batch, S), and its first state.

    The encoder runs once here; each step then runs only the decoder for one character, carrying
    ``[encoder_states, keys, source_mask, h, c]`` as the state (all batch-first, so beam search can
    reorder them). The state stays as tensors on the device between steps: only the small
    outputs (probabilities, attention weights) come back to NumPy.
    """
    import tensorflow as tf

    encoder, compiled_step = _compiled_decoder(model)
    attention = has_attention(model)
    state = list(encoder(tf.convert_to_tensor(np.asarray(source))))

    def step(tokens, state):
        probabilities, weights, h, c = compiled_step([tf.convert_to_tensor(tokens[:, None]), *state])
        return probabilities.numpy(), [*state[:3], h, c], weights.numpy() if attention else None

    return step, state
