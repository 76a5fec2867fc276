"""The lecture's attention scores on lab 2's decoder, each beside the few lines that compute it.

What differs from one variant to the next is the score e_tj, how well source position j fits
output step t (the table of variants, with each one's formula, is :mod:`.variants`):

    luong-additive   e_tj = v_a . tanh(W_a s_t + U_a h_j)        Bahdanau's score ("concat")
    luong-general    e_tj = s_t^T W_a h_j                        multiplicative ("general")
    scaled-dot       e_tj = (W_q s_t) . (W_k h_j) / sqrt(d)      the Transformer's score
    multi-head       H heads i of scaled-dot, each over its own projections W_q^i, W_k^i

and then, for all of them,

    a_t = softmax_j(e_t)        over the real source positions only (the source mask)
    c_t = sum_j a_tj h_j        the context (multi-head: c_t = W_O [c_t^1; ...; c_t^H] with
                                c_t^i = sum_j a_tj^i W_v^i h_j, each head its own weights)

Whatever depends on h_j alone (``U_a h_j``, ``W_a h_j``, ``W_k h_j``) is the same at every output
step, so the encoder computes it once (the ``*_keys`` functions) and hands it to the decoder in its
memory, ``{"h": h_j, "keys": ..., "source_mask": ...}``. A score function gets the decoder's
queries s (B, T, 2u) and that memory, and returns the context c (B, T, 2u) and the weights a
(B, T, S). Luong's decoder passes its current states s_t; Bahdanau's (:mod:`.bahdanau`) passes
its previous state s_{t-1}, one step at a time.
"""

from __future__ import annotations

import math

import keras


def additive_keys(config, h):
    """U_a h_j: (B, S, 2u) -> (B, S, a)."""
    return keras.layers.Dense(config.attention_units, use_bias=False, name="U_a")(h)


def additive_score(config, s, memory):
    """e_tj = v_a . tanh(W_a s_t + U_a h_j): ``AdditiveAttention`` adds, squashes, scores, masks, sums."""
    W_a = keras.layers.Dense(config.attention_units, use_bias=False, name="W_a")
    attention = keras.layers.AdditiveAttention(name="attention")  # v_a is its `scale` vector
    # query W_a s_t (B, T, a), values h_j (B, S, 2u), keys U_a h_j (B, S, a)
    query, values, keys = W_a(s), memory["h"], memory["keys"]
    return attention([query, values, keys], mask=[None, memory["source_mask"]], return_attention_scores=True)


def general_keys(config, h):
    """W_a h_j: (B, S, 2u) -> (B, S, 2u), so that s_t^T W_a h_j is a dot product."""
    return keras.layers.Dense(h.shape[-1], use_bias=False, name="W_a")(h)


def general_score(config, s, memory):
    """e_tj = s_t . (W_a h_j): ``Attention`` with dot scores."""
    attention = keras.layers.Attention(score_mode="dot", name="attention")
    # query s_t (B, T, 2u), values h_j (B, S, 2u), keys W_a h_j (B, S, 2u)
    query, values, keys = s, memory["h"], memory["keys"]
    return attention([query, values, keys], mask=[None, memory["source_mask"]], return_attention_scores=True)


def scaled_dot_keys(config, h):
    """k_j = W_k h_j: (B, S, 2u) -> (B, S, d)."""
    return keras.layers.Dense(config.attention_units, use_bias=False, name="W_k")(h)


def scaled_dot_score(config, s, memory):
    """e_tj = (W_q s_t) . k_j / sqrt(d)."""
    W_q = keras.layers.Dense(config.attention_units, use_bias=False, name="W_q")
    over_sqrt_d = keras.layers.Rescaling(1 / math.sqrt(config.attention_units), name="over_sqrt_d")
    attention = keras.layers.Attention(score_mode="dot", name="attention")
    # query q_t = W_q s_t / sqrt(d) (B, T, d), values h_j (B, S, 2u), keys k_j (B, S, d)
    query, values, keys = over_sqrt_d(W_q(s)), memory["h"], memory["keys"]
    return attention([query, values, keys], mask=[None, memory["source_mask"]], return_attention_scores=True)


def multi_head_score(config, s, memory):
    """H heads of scaled-dot, each with its own W_q^i, W_k^i, W_v^i; the heads' contexts joined by W_O."""
    h = memory["h"]
    heads = keras.layers.MultiHeadAttention(
        config.heads,
        key_dim=config.attention_units // config.heads,
        output_shape=h.shape[-1],
        name="attention",
    )
    # c (B, T, 2u); a (B, H, T, S): one map per head
    c, a = heads(s, h, value_mask=memory["source_mask"], return_attention_scores=True)
    # (B, T, S): the heads' maps averaged, for the heatmaps; and each head's, for the explorer's head picker
    return c, keras.ops.mean(a, axis=1), a
