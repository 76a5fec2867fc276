"""Lab 1's model: a character language model that writes dates one character at a time.

    tokens (batch, time) -> Embedding -> LSTM or GRU -> Dense softmax -> (batch, time, vocab)

It is a *one-to-many* RNN: its only real input is the start token ``<s>``. In training, the
input at each step is the *true* previous character (teacher forcing):

    input   <s>  2  0  1  8  -  0  3  -  1  9
    target   2   0  1  8  -  0  3  -  1  9  </s>

At inference there is no true previous character: the model samples one from its own softmax
and feeds it back in, until it writes ``</s>``. :func:`step_decoder` makes that loop cheap by
carrying the RNN state from step to step.

The recurrent layer keeps Keras' default activations, no recurrent dropout and no unrolling,
so that on a GPU TensorFlow runs it with the fast cuDNN kernel. The softmax head computes in
float32 even under mixed precision (Keras' advice: float16 rounds the small probabilities that
the loss and the grader's cross-entropy read to zero).
"""

from __future__ import annotations

import keras
import numpy as np

from labs.date_generation.config import DateGenerationConfig

LAYER_NAMES = {"embedding": "embedding", "rnn": "rnn", "head": "next_char"}


def build_model(config: DateGenerationConfig, vocab_size: int):
    """The training model: ``tokens[B, T] -> next-token probabilities[B, T, V]``."""
    # (batch, time)
    tokens = keras.Input(shape=(None,), dtype="int32", name="tokens")
    # (batch, time, embedding_dim)
    embedded = keras.layers.Embedding(
        vocab_size, config.embedding_dim, mask_zero=True, name=LAYER_NAMES["embedding"]
    )(tokens)
    rnn_class = keras.layers.LSTM if config.cell == "lstm" else keras.layers.GRU
    rnn = rnn_class(config.units, return_sequences=True, return_state=True, name=LAYER_NAMES["rnn"])
    # (batch, time, units)
    states, *_ = rnn(embedded)
    # (batch, time, vocab)
    probabilities = keras.layers.Dense(
        vocab_size, activation="softmax", dtype="float32", name=LAYER_NAMES["head"]
    )(states)
    return keras.Model(tokens, probabilities, name=f"date_{config.cell}")


def step_decoder(model):
    """A :mod:`labs.common.decoding` step function over ``model``'s layers, and its first state (None).

    One step reads one token per sequence and the RNN state, and gives the next token's probabilities and the
    new state: ``(token[B, 1], *state) -> (probabilities[B, V], *state)``."""
    embedding = model.get_layer(LAYER_NAMES["embedding"])
    rnn = model.get_layer(LAYER_NAMES["rnn"])
    head = model.get_layer(LAYER_NAMES["head"])
    n_states = 2 if isinstance(rnn, keras.layers.LSTM) else 1  # LSTM: h and c; GRU: h
    # (batch, 1)
    token = keras.Input(shape=(1,), dtype="int32", name="token")
    # (batch, units) each
    state_in = [keras.Input(shape=(rnn.units,), name=f"state_{i}") for i in range(n_states)]
    # (batch, 1, units)
    output, *state_out = rnn(embedding(token), initial_state=state_in)
    # (batch, vocab)
    probabilities = head(output[:, 0])
    step_model = keras.Model([token, *state_in], [probabilities, *state_out], name="step")

    def step(tokens: np.ndarray, state):
        if state is None:
            state = [np.zeros((len(tokens), rnn.units), dtype=np.float32) for _ in range(n_states)]
        probabilities, *state = step_model([tokens[:, None], *state], training=False)
        return np.asarray(probabilities), [np.asarray(s) for s in state], None  # no attention in lab 1

    return step, None
