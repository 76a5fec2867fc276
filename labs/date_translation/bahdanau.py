"""Bahdanau et al. (2015) as the slides draw it: attend with the *previous* state, feed the context *into* the
RNN.

One output step i, from the previous state s_{i-1} and the previous character y_{i-1}:

    e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j)     score: the state *before* this step asks
    a_i  = softmax_j(e_i)                        over the real source positions only
    c_i  = sum_j a_ij h_j                        the context
    s_i  = RNN(s_{i-1}, [y_{i-1}; c_i])          the context goes into the recurrence
    p_i  = softmax(W_o tanh(W_c [s_i; c_i]))     the next character's probabilities

(the slides' SimpleRNN: ``s_i = tanh(A [y_{i-1}; s_{i-1}; c_i] + b)``; ``--cell simple``).

Step i needs s_{i-1}, which needs c_{i-1}, so the decoder cannot run over the whole target in
one RNN call as Luong's can: it is a *one-step* model, and training unrolls it over the
target's 11 positions, the same layers at every step (:func:`labs.common.seq2seq.unroll`; Keras
3's ``RNN`` layer no longer passes ``constants`` such as the encoder states to a cell, and an
explicit loop shows the recurrence as the slide draws it). Inference calls the same one-step
model once per character, which is what greedy and beam search do anyway.
"""

from __future__ import annotations


def build_decoder(config, target_vocab_size: int, state_inputs: list, rnn):
    """{target_in y_{i-1} (B, 1), memory [h, U_a h, mask], state s_{i-1}} -> {probabilities (B, 1, V),
    attention (B, 1, S), state s_i}."""
    import keras

    units = 2 * config.units
    y = keras.Input(shape=(1,), dtype="int32", name="target_in")  # y_{i-1}: one character
    s_prev = state_inputs  # s_{i-1}: [h] (and [c] for an LSTM)
    h = keras.Input(shape=(None, units), name="h")  # (B, S, 2u) encoder states h_j
    keys = keras.Input(shape=(None, config.attention_units), name="keys")  # (B, S, a)  U_a h_j
    source_mask = keras.Input(shape=(None,), dtype="bool", name="source_mask")  # (B, S)

    W_a = keras.layers.Dense(config.attention_units, use_bias=False, name="W_a")
    query = keras.layers.Reshape((1, config.attention_units), name="as_one_step")(
        W_a(s_prev[0])
    )  # W_a s_{i-1} (B, 1, a)
    attention = keras.layers.AdditiveAttention(name="attention")  # v_a . tanh(query + key), softmax, sum
    c, a = attention([query, h, keys], mask=[None, source_mask], return_attention_scores=True)
    #                                                                             c_i (B, 1, 2u), a_i (B, 1,
    # S)
    embedded = keras.layers.Embedding(target_vocab_size, config.embedding_dim, name="target_embedding")(
        y
    )  # (B, 1, e)
    x = keras.layers.Concatenate(name="y_and_c")([embedded, c])  # [y_{i-1}; c_i] (B, 1, e + 2u)
    s, *s_i = rnn(units, return_sequences=True, return_state=True, name="decoder_rnn")(
        x, initial_state=s_prev
    )
    #                                                                             s_i (B, 1, 2u)
    W_c = keras.layers.Dense(units, activation="tanh", name="W_c")
    W_o = keras.layers.Dense(
        target_vocab_size, activation="softmax", dtype="float32", name="W_o"
    )  # float32 under mixed precision too
    probabilities = W_o(W_c(keras.layers.Concatenate()([s, c])))  # (B, 1, V)
    return keras.Model(
        {"target_in": y, "memory": [h, keys, source_mask], "state": s_prev},
        {"probabilities": probabilities, "attention": a, "state": s_i},
        name="decoder",
    )
