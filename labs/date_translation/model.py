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

The lecture's other attentions are records in one table (:mod:`.variants`): each names its score
(:mod:`.attention`) and the encoder and decoder it runs on (this file's, :mod:`.bahdanau`'s,
:mod:`.transformer`'s). ``cell`` picks the decoder's RNN: ``lstm`` (the default), ``gru`` or
``simple`` (the slides' SimpleRNN).

The network is two Keras models, an encoder and a decoder, wired once; the training model, the attention view
and the step decoder all come from that one definition (:mod:`labs.common.seq2seq`)."""

from __future__ import annotations

import keras

from labs.common import seq2seq
from labs.date_translation import variants
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.task import TASK

RNN = {"simple": keras.layers.SimpleRNN, "gru": keras.layers.GRU, "lstm": keras.layers.LSTM}


def build_model(config: DateTranslationConfig, source_vocab_size: int, target_vocab_size: int):
    """The training model: ``(source[B, S], target_in[B, T]) -> probabilities[B, T, V]``."""
    variant = variants.get(config.attention)
    encoder = variant.encoder(config, variant, source_vocab_size)
    decoder = variant.decoder(config, variant, target_vocab_size, encoder)
    source, target_in = seq2seq.inputs()
    # A one-character decoder (Bahdanau's) is unrolled over the task's longest output.
    outputs = seq2seq.connect(encoder, decoder, source, target_in, steps=TASK.max_output_length)
    name = "date_translator" if config.attends else "date_baseline"
    return keras.Model([source, target_in], outputs["probabilities"], name=name)


def attention_model(model):
    """The task's attention view: ``(source, target_in) -> (probabilities, weights[B, T, S])``, or None."""
    return seq2seq.attention_model(model, steps=TASK.max_output_length)


def rnn_encoder(config: DateTranslationConfig, variant: variants.Variant, source_vocab_size: int):
    """source (B, S) -> {"memory": {h, keys?, source_mask}, "state": the decoder's first state}."""
    # (B, S)
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    # h_j (B, S, 2u); state [h, c] (B, 2u) each; source_mask (B, S)
    h, state, source_mask = seq2seq.encode_source(
        source, source_vocab_size, config.embedding_dim, config.units
    )
    # [h, c] for an LSTM decoder, [h] for the others
    state = state if config.cell == "lstm" else state[:1]
    if variant.score is None:
        return keras.Model(source, {"state": state}, name="encoder")
    memory = {"h": h, "source_mask": source_mask}
    if variant.keys is not None:
        # (B, S, k): U_a h_j and the like, once per source, not once per output step
        memory["keys"] = variant.keys(config, h)
    return keras.Model(source, {"memory": memory, "state": state}, name="encoder")


def luong_decoder(config: DateTranslationConfig, variant: variants.Variant, target_vocab_size: int, encoder):
    """{target_in (B, T), memory, state} -> {probabilities (B, T, V), attention a (B, T, S), state}."""
    units = config.decoder_units
    # (B, T): <s>, then the previous characters
    y = keras.Input(shape=(None,), dtype="int32", name="target_in")
    # s_0 (B, 2u), and an LSTM's cell state c_0 (B, 2u)
    s_0 = seq2seq.inputs_like(encoder.output["state"], ("s_0", "c_0"))
    # (B, T, e)
    embedded = keras.layers.Embedding(
        target_vocab_size, config.embedding_dim, mask_zero=True, name="target_embedding"
    )(y)
    rnn = RNN[config.cell](units, return_sequences=True, return_state=True, name=f"decoder_{config.cell}")
    # s_t (B, T, 2u); the final state s_T
    s, *s_T = rnn(embedded, initial_state=s_0)
    W_c = keras.layers.Dense(units, activation="tanh", name="W_c")
    # float32 under mixed precision too
    W_o = keras.layers.Dense(target_vocab_size, activation="softmax", dtype="float32", name="W_o")
    if variant.score is None:
        # (B, T, V)
        probabilities = W_o(W_c(s))
        return keras.Model(
            {"target_in": y, "state": s_0}, {"probabilities": probabilities, "state": s_T}, name="decoder"
        )
    # {h (B, S, 2u), keys (B, S, k), source_mask (B, S)}: what the encoder computed once
    memory = seq2seq.inputs_like(encoder.output["memory"])
    # c_t (B, T, 2u), a_t (B, T, S); with several heads, also each head's a_t^i (B, H, T, S)
    c, a, *heads = variant.score(config, s, memory)
    # (B, T, V)
    probabilities = W_o(W_c(keras.layers.Concatenate()([s, c])))
    return keras.Model(
        {"target_in": y, "memory": memory, "state": s_0},
        {
            "probabilities": probabilities,
            "attention": a,
            "state": s_T,
            **({"heads": heads[0]} if heads else {}),
        },
        name="decoder",
    )
