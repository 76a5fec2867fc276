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

The baseline (``attention="none"``) is the same network without attention: all the decoder knows
of the source is the encoder's final state, one fixed-size vector: ``p_t = softmax(W_o tanh(W_c s_t))``.

The lecture's other scores (multiplicative, scaled dot-product, multi-head) change the one line
that calls the attention layer (:mod:`labs.date_translation.attention`); Bahdanau's own placement
has a decoder of its own (:mod:`.bahdanau`), and so has the Transformer (:mod:`.transformer`).
``cell`` picks the decoder's RNN: ``lstm`` (the default), ``gru`` or ``simple`` (the slides' SimpleRNN).

The network is two Keras models, an encoder and a decoder, wired once; the training model, the
attention view and the step decoder all come from that one definition (:mod:`labs.common.seq2seq`).
"""

from __future__ import annotations

from labs.common import seq2seq
from labs.date_translation import attention, bahdanau, transformer
from labs.date_translation.config import DateTranslationConfig

TARGET_LENGTH = len("YYYY-MM-DD") + 1  # <s> + 10 characters in, 10 characters + </s> out


def build_model(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    import keras

    encoder = build_encoder(config, source_vocab_size)
    decoder = build_decoder(config, target_vocab_size)
    source, target_in = seq2seq.inputs()
    probabilities = seq2seq.connect(encoder, decoder, source, target_in, steps=TARGET_LENGTH)["probabilities"]
    return keras.Model(
        [source, target_in], probabilities, name="date_translator" if config.attends else "date_baseline"
    )


def attention_model(model):
    """The task's attention view: ``(source, target_in) -> (probabilities, weights[B, T, S])``, or None."""
    return seq2seq.attention_model(model, steps=TARGET_LENGTH)


def build_encoder(config: DateTranslationConfig, source_vocab_size: int):
    """source (B, S) -> memory [h_j (B, S, 2u), keys (B, S, k)..., source mask (B, S)], first decoder
    state."""
    import keras

    if config.attention == "transformer":
        return transformer.build_encoder(config, source_vocab_size)
    source = keras.Input(shape=(None,), dtype="int32", name="source")  # (B, S)
    h, state, source_mask = seq2seq.encode_source(
        source, source_vocab_size, config.embedding_dim, config.units
    )
    state = state if config.cell == "lstm" else state[:1]  # [h, c] for an LSTM decoder, [h] for the others
    if not config.attends:
        return keras.Model(source, {"state": state}, name="encoder")
    keys = attention.keys(config, h)  # U_a h_j and the like: once per input, not per step
    return keras.Model(source, {"memory": [h, *keys, source_mask], "state": state}, name="encoder")


def build_decoder(config: DateTranslationConfig, target_vocab_size: int):
    """{target_in (B, T), memory, state} -> {probabilities (B, T, V), attention a (B, T, S), state}."""
    import keras

    if config.attention == "transformer":
        return transformer.build_decoder(config, target_vocab_size)
    units = 2 * config.units  # the decoder is as wide as both encoder directions
    rnn = {"simple": keras.layers.SimpleRNN, "gru": keras.layers.GRU, "lstm": keras.layers.LSTM}[config.cell]
    s_0 = [keras.Input(shape=(units,), name="s_0")]  # the RNN's first state (B, 2u)
    if config.cell == "lstm":
        s_0.append(keras.Input(shape=(units,), name="c_0"))  # and an LSTM's cell state
    if config.attention == "bahdanau":
        return bahdanau.build_decoder(config, target_vocab_size, s_0, rnn)

    y = keras.Input(
        shape=(None,), dtype="int32", name="target_in"
    )  # (B, T): <s>, then the previous characters
    embedded = keras.layers.Embedding(
        target_vocab_size, config.embedding_dim, mask_zero=True, name="target_embedding"
    )(y)  # (B, T, e)
    s, *s_T = rnn(units, return_sequences=True, return_state=True, name=f"decoder_{config.cell}")(
        embedded, initial_state=s_0
    )
    #                                                                                 s_t (B, T, 2u)
    W_c = keras.layers.Dense(units, activation="tanh", name="W_c")
    W_o = keras.layers.Dense(
        target_vocab_size, activation="softmax", dtype="float32", name="W_o"
    )  # float32 under mixed precision too
    if not config.attends:
        probabilities = W_o(W_c(s))  # (B, T, V)
        return keras.Model(
            {"target_in": y, "state": s_0}, {"probabilities": probabilities, "state": s_T}, name="decoder"
        )

    h = keras.Input(shape=(None, units), name="h")  # (B, S, 2u) encoder states h_j
    width = attention.key_width(config, units)  # what keys() made of h_j, if anything
    keys = [keras.Input(shape=(None, width), name="keys")] if width else []  # (B, S, k)
    source_mask = keras.Input(shape=(None,), dtype="bool", name="source_mask")  # (B, S)
    c, a = attention.attend(config, s, h, keys, source_mask)  # c_t (B, T, 2u), a_t (B, T, S)
    probabilities = W_o(W_c(keras.layers.Concatenate()([s, c])))  # (B, T, V)
    return keras.Model(
        {"target_in": y, "memory": [h, *keys, source_mask], "state": s_0},
        {"probabilities": probabilities, "attention": a, "state": s_T},
        name="decoder",
    )
