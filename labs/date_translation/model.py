"""Lab 2's model: an encoder-decoder with additive attention that reads a human date and writes ISO 8601.

    source     "27 January 2018"        --encoder-->  h_1 ... h_S   one vector per source character
    target_in  <s> 2 0 1 8 - 0 1 - 2    --decoder-->  s_1 ... s_T   one state per output step

At every output step t, the decoder asks which source characters matter now (Bahdanau's additive
score), and reads a weighted average of them:

    e_tj = v_a . tanh(W_a s_t + U_a h_j)        how well source position j fits output step t
    a_t  = softmax_j(e_t)                       the weights, over the real source positions only
    c_t  = sum_j a_tj h_j                       the context: what step t reads from the source
    p_t  = softmax(W_o tanh(W_c [s_t; c_t]))    the next character's probabilities

``keras.layers.AdditiveAttention`` computes the last three steps of the score, ``v_a . tanh(query +
key)`` (``v_a`` is its ``scale`` vector), the masked softmax and the weighted sum; the decoder
hands it ``W_a s_t`` as the query, ``U_a h_j`` as the keys and ``h_j`` as the values. ``U_a h_j``
does not change from one output step to the next, so the encoder computes it once.

Where this sits between the two classic designs: the *score* is Bahdanau's, the *placement* is
Luong's: the decoder attends with its current state s_t and combines the context after the RNN,
rather than attending with the previous state and feeding the context into the RNN's input.
Luong's placement lets teacher-forced training run the decoder LSTM over the whole target in
one call (fast, cuDNN on a GPU); Bahdanau's needs a loop over the output steps, because each
step's input depends on the previous step's attention.

The baseline (``attention=False``) is the same network without attention: all the decoder knows
of the source is the encoder's final state, one fixed-size vector: ``p_t = softmax(W_o tanh(W_c s_t))``.

The network is two Keras models, an encoder and a decoder, wired once; the training model, the
attention view and the step decoder all come from that one definition (:mod:`labs.common.seq2seq`).
"""

from __future__ import annotations

from labs.common import seq2seq
from labs.date_translation.config import DateTranslationConfig


def build_model(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    import keras

    encoder = build_encoder(config, source_vocab_size)
    decoder = build_decoder(config, target_vocab_size)
    source, target_in = seq2seq.inputs()
    probabilities = seq2seq.connect(encoder, decoder, source, target_in)["probabilities"]
    return keras.Model([source, target_in], probabilities, name="date_translator" if config.attention else "date_baseline")


def build_encoder(config: DateTranslationConfig, source_vocab_size: int):
    """source (B, S) -> memory [h_j (B, S, 2u), U_a h_j (B, S, a), source mask (B, S)], state [h, c] (B, 2u) each."""
    import keras

    source = keras.Input(shape=(None,), dtype="int32", name="source")                               # (B, S)
    h, state, source_mask = seq2seq.encode_source(source, source_vocab_size, config.embedding_dim, config.units)
    if not config.attention:
        return keras.Model(source, {"state": state}, name="encoder")
    U_a = keras.layers.Dense(config.attention_units, use_bias=False, name="U_a")
    keys = U_a(h)                                                  # U_a h_j (B, S, a): once per input, not per step
    return keras.Model(source, {"memory": [h, keys, source_mask], "state": state}, name="encoder")


def build_decoder(config: DateTranslationConfig, target_vocab_size: int):
    """{target_in (B, T), memory, state} -> {probabilities (B, T, V), attention a (B, T, S), state}."""
    import keras

    units = 2 * config.units                                       # the decoder is as wide as both encoder directions
    y = keras.Input(shape=(None,), dtype="int32", name="target_in")                 # (B, T): <s>, then the previous characters
    s_0 = [keras.Input(shape=(units,), name="s_0"), keras.Input(shape=(units,), name="c_0")]   # the LSTM's first state
    embedded = keras.layers.Embedding(target_vocab_size, config.embedding_dim, mask_zero=True,
                                      name="target_embedding")(y)                   # (B, T, e)
    s, *s_T = keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                name="decoder_lstm")(embedded, initial_state=s_0)   # s_t (B, T, 2u)
    W_c = keras.layers.Dense(units, activation="tanh", name="W_c")
    W_o = keras.layers.Dense(target_vocab_size, activation="softmax", name="W_o")
    if not config.attention:
        probabilities = W_o(W_c(s))                                                  # (B, T, V)
        return keras.Model({"target_in": y, "state": s_0}, {"probabilities": probabilities, "state": s_T},
                           name="decoder")

    h = keras.Input(shape=(None, units), name="h")                                  # (B, S, 2u) encoder states h_j
    keys = keras.Input(shape=(None, config.attention_units), name="keys")           # (B, S, a)  U_a h_j
    source_mask = keras.Input(shape=(None,), dtype="bool", name="source_mask")      # (B, S)
    W_a = keras.layers.Dense(config.attention_units, use_bias=False, name="W_a")
    attention = keras.layers.AdditiveAttention(name="attention")                    # v_a . tanh(query + key), softmax, sum
    c, a = attention([W_a(s), h, keys], mask=[None, source_mask], return_attention_scores=True)
    #                 query   values keys                          -> c_t (B, T, 2u), a_t (B, T, S)
    probabilities = W_o(W_c(keras.layers.Concatenate()([s, c])))                   # (B, T, V)
    return keras.Model({"target_in": y, "memory": [h, keys, source_mask], "state": s_0},
                       {"probabilities": probabilities, "attention": a, "state": s_T}, name="decoder")
