"""Bahdanau et al. (2015) as the slides draw it: attend with the *previous* state, feed the context *in*.

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

import keras

from labs.common import seq2seq
from labs.date_translation.model import RNN


def build_decoder(config, variant, target_vocab_size: int, encoder):
    """{target_in y_{i-1} (B, 1), memory, state s_{i-1}} -> {probabilities, attention, state s_i}.

    probabilities (B, 1, V), attention a_i (B, 1, S): one output step per call.
    """
    units = config.decoder_units
    # y_{i-1}: one character (B, 1)
    y = keras.Input(shape=(1,), dtype="int32", name="target_in")
    # s_{i-1}: [h] (and [c] for an LSTM), (B, 2u) each
    s_prev = seq2seq.inputs_like(encoder.output["state"], ("s_0", "c_0"))
    # {h (B, S, 2u), keys U_a h_j (B, S, a), source_mask (B, S)}
    memory = seq2seq.inputs_like(encoder.output["memory"])

    # e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j): the score asked with the state *before* this step
    query = keras.layers.Reshape((1, units), name="as_one_step")(s_prev[0])
    # c_i (B, 1, 2u), a_i (B, 1, S)
    c, a = variant.score(config, query, memory)
    # [y_{i-1}; c_i] (B, 1, e + 2u): the context goes into the recurrence
    embedded = keras.layers.Embedding(target_vocab_size, config.embedding_dim, name="target_embedding")(y)
    x = keras.layers.Concatenate(name="y_and_c")([embedded, c])
    rnn = RNN[config.cell](units, return_sequences=True, return_state=True, name="decoder_rnn")
    # s_i (B, 1, 2u), and the state carried to step i + 1
    s, *s_i = rnn(x, initial_state=s_prev)
    W_c = keras.layers.Dense(units, activation="tanh", name="W_c")
    # float32 under mixed precision too
    W_o = keras.layers.Dense(target_vocab_size, activation="softmax", dtype="float32", name="W_o")
    # (B, 1, V)
    probabilities = W_o(W_c(keras.layers.Concatenate()([s, c])))
    return keras.Model(
        {"target_in": y, "memory": memory, "state": s_prev},
        {"probabilities": probabilities, "attention": a, "state": s_i},
        name="decoder",
    )
