"""Homework 3.1's model: an encoder-decoder with key-value attention that writes Thai names in English.

    source     "สมชาย ใจดี"               --encoder-->  h_1 ... h_S   one vector per Thai character
    target_in  <s> S o m c h a i ...      --decoder-->  s_1 ... s_T   one state per output step

The decoder's state is the query; the encoder states give keys, which only score, and values,
which only build the context (``homework/kv_attention.py``, the layer the homework asks for):

    k_j = W_k h_j,  v_j = W_v h_j,  q_t = W_q s_t
    e_tj = q_t . k_j / sqrt(key_dim)            (or additive: w . tanh(q_t + k_j))
    a_t  = softmax_j(e_t)                       over the real source positions only
    c_t  = sum_j a_tj v_j                       (value_dim)
    p_t  = softmax(W_o tanh(W_c [s_t; c_t]))    the next character's probabilities

With ``second_read``, the decoder reads twice. The first query s_t knows only the letters written so far,
not which source characters were read for them. A second RNN, u wide, runs over each step's query and
what it read, so its state r_t knows every earlier read; r_t queries the source again, through a second
layer with its own W_q, W_k, W_v. (Like Luong's input feeding, which feeds what was read back into the
one RNN, but the whole target still trains at once: Nematus' conditional GRU has the same two reads.)

    r_t  = RNN_2([s_t; c_t])                    (B, T, u)
    c'_t = sum_j a'_tj v'_j,  a'_t from q'_t = W'_q r_t
    p_t  = softmax(W_o tanh(W_c [r_t; c'_t]))   (a'_t is the attention the model shows)

Everything but the attention is lab 2's network (:mod:`labs.common.seq2seq`, and
:mod:`labs.date_translation.model` for the same layout), so the two labs differ exactly where the
lecture says they do; the layer is the homework's own, ``homework/kv_attention.py``. Dropout on the
source embeddings and on the decoder's features helps the model spell words it never saw.
"""

from __future__ import annotations

import keras

from labs.common import seq2seq
from labs.common.errors import InputError
from labs.name_transliteration.config import NameTransliterationConfig

RNN = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}


def key_value_attention_class():
    """``KeyValueAttention`` from ``homework/kv_attention.py``: importing it registers it for loading
    models."""
    try:
        from homework.kv_attention import KeyValueAttention
    except ModuleNotFoundError as error:
        if error.name not in ("homework", "homework.kv_attention"):
            raise
        raise InputError(
            "cannot find homework/kv_attention.py (the key-value attention layer); "
            "run from the kit's folder, the one that holds labs/ and homework/"
        ) from None
    return KeyValueAttention


def load_layer() -> str:
    """(Re)load ``homework/kv_attention.py``, so that the code in use is the file as it is now; its code's
    SHA-256."""
    import importlib

    from labs.common.submission import layer_sha256

    key_value_attention_class()  # a clear error when the file is not there
    module = importlib.import_module("homework.kv_attention")
    code = layer_sha256(module.__file__)
    importlib.reload(module)
    return code


def build_model(config: NameTransliterationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    encoder = build_encoder(config, source_vocab_size)
    decoder = build_decoder(config, target_vocab_size, encoder)
    source, target_in = seq2seq.inputs()
    probabilities = seq2seq.connect(encoder, decoder, source, target_in)["probabilities"]
    return keras.Model([source, target_in], probabilities, name="name_transliterator")


def build_encoder(config: NameTransliterationConfig, source_vocab_size: int):
    """source (B, S) -> {"memory": {h (B, S, 2u), source_mask (B, S)}, "state": [h, c] or [h], (B, 2u)}.

    With ``second_read``, the state goes on with the second RNN's first state: zeros, (B, u) each."""
    # (B, S)
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    h, state, source_mask = seq2seq.encode_source(
        source,
        source_vocab_size,
        config.embedding_dim,
        config.units,
        dropout=config.dropout,
        cell=config.cell,
        layers=config.encoder_layers,
    )
    if config.second_read:
        # the second RNN's first state: zeros, [r_0, c_0] (B, u) each for an LSTM, r_0 for a GRU
        zeros = keras.ops.zeros_like(state[0][:, : config.units])
        state = [*state, *[zeros] * len(state)]
    return keras.Model(
        source, {"memory": {"h": h, "source_mask": source_mask}, "state": state}, name="encoder"
    )


def build_decoder(config: NameTransliterationConfig, target_vocab_size: int, encoder):
    """{target_in (B, T), memory, state} -> {probabilities (B, T, V), attention a (B, T, S), state}."""
    units = config.decoder_units
    # (B, T): <s>, then the previous letters
    y = keras.Input(shape=(None,), dtype="int32", name="target_in")
    # the decoder's first state: s_0 and c_0 (B, 2u) each for an LSTM, s_0 alone for a GRU; with second_read,
    # then the second RNN's: r_0 and its cell state rc_0 (B, u) each, or r_0 alone
    names = ("s_0", "c_0") if config.cell == "lstm" else ("s_0",)
    second_names = ("r_0", "rc_0") if config.cell == "lstm" else ("r_0",)
    state_0 = seq2seq.inputs_like(encoder.output["state"], names + second_names * config.second_read)
    s_0, r_0 = state_0[: len(names)], state_0[len(names) :]
    # {h (B, S, 2u) the encoder states h_j, source_mask (B, S)}
    memory = seq2seq.inputs_like(encoder.output["memory"])
    # (B, T, e)
    embedded = keras.layers.Embedding(
        target_vocab_size, config.embedding_dim, mask_zero=True, name="target_embedding"
    )(y)
    if config.target_dropout:
        # the decoder cannot lean on the letters it wrote alone: it must read the source
        embedded = keras.layers.Dropout(config.target_dropout, name="target_dropout")(embedded)
    rnn = RNN[config.cell](units, return_sequences=True, return_state=True, name=f"decoder_{config.cell}")
    # s_t (B, T, 2u): the queries
    s, *s_T = rnn(embedded, initial_state=s_0)
    attention = key_value_attention_class()(
        config.key_dim, config.value_dim, score=config.score, name="attention"
    )
    # c_t (B, T, value_dim), a_t (B, T, S)
    c, a = attention(s, memory["h"], memory_mask=memory["source_mask"], return_attention_scores=True)
    # [s_t; c_t]
    features = keras.layers.Concatenate()([s, c])
    state_T = s_T
    if config.second_read:
        rnn_2 = RNN[config.cell](
            config.units, return_sequences=True, return_state=True, name=f"second_{config.cell}"
        )
        # r_t (B, T, u): it has seen every query and what was read for it
        r, *r_T = rnn_2(features, initial_state=r_0)
        second = key_value_attention_class()(
            config.key_dim, config.value_dim, score=config.score, name="second_attention"
        )
        # c'_t (B, T, value_dim), a'_t (B, T, S): the second read, the one the model shows
        c_2, a = second(r, memory["h"], memory_mask=memory["source_mask"], return_attention_scores=True)
        # [r_t; c'_t]
        features = keras.layers.Concatenate()([r, c_2])
        state_T = [*s_T, *r_T]
    if config.dropout:
        features = keras.layers.Dropout(config.dropout, name="feature_dropout")(features)
    W_c = keras.layers.Dense(units, activation="tanh", name="W_c")
    # float32 under mixed precision too
    W_o = keras.layers.Dense(target_vocab_size, activation="softmax", dtype="float32", name="W_o")
    # (B, T, V)
    probabilities = W_o(W_c(features))
    return keras.Model(
        {"target_in": y, "memory": memory, "state": state_0},
        {"probabilities": probabilities, "attention": a, "state": state_T},
        name="decoder",
    )
