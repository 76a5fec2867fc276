"""The lecture's attention scores on lab 2's decoder, each beside the few lines that compute it.

Every variant here attends with the decoder's *current* state s_t (Luong's placement: the RNN
runs first, the context joins after it), so one RNN call covers the whole target in training.
What differs is the score e_tj, how well source position j fits output step t:

    luong-additive   e_tj = v_a . tanh(W_a s_t + U_a h_j)        Bahdanau's score ("concat")
    luong-general    e_tj = s_t^T W_a h_j                        multiplicative ("general")
    scaled-dot       e_tj = (W_q s_t) . (W_k h_j) / sqrt(d)      the Transformer's score
    multi-head       H heads i of scaled-dot, each over its own projections W_q^i, W_k^i

and then

    a_t = softmax_j(e_t)        over the real source positions only (the source mask)
    c_t = sum_j a_tj h_j        the context (multi-head: c_t = W_O [c_t^1; ...; c_t^H] with
                                c_t^i = sum_j a_tj^i W_v^i h_j, each head its own weights)

Whatever depends on h_j alone (``U_a h_j``, ``W_a h_j``, ``W_k h_j``) is the same at every
output step, so the encoder computes it once: :func:`keys` says what, :func:`attend` uses it.
Bahdanau's own placement (previous state, context into the RNN) is :mod:`bahdanau`; the
Transformer is :mod:`transformer`.
"""

from __future__ import annotations

import math

LUONG_FAMILY = ("luong-additive", "luong-general", "scaled-dot", "multi-head")


def key_width(config, units: int) -> int | None:
    """The width of what :func:`keys` computes from h_j (B, S, units), or None where it computes nothing."""
    return {
        "bahdanau": config.attention_units,
        "luong-additive": config.attention_units,
        "luong-general": units,
        "scaled-dot": config.attention_units,
    }.get(config.attention)


def keys(config, h) -> list:
    """What the score reads of h_j (B, S, 2u), computed once per input: [keys (B, S, k)], or [] where none."""
    import keras

    if config.attention in ("luong-additive", "bahdanau"):
        return [
            keras.layers.Dense(config.attention_units, use_bias=False, name="U_a")(h)
        ]  # U_a h_j   (B, S, a)
    if config.attention == "luong-general":
        return [keras.layers.Dense(h.shape[-1], use_bias=False, name="W_a")(h)]  # W_a h_j   (B, S, 2u)
    if config.attention == "scaled-dot":
        return [
            keras.layers.Dense(config.attention_units, use_bias=False, name="W_k")(h)
        ]  # k_j = W_k h_j (B, S, d)
    return []  # multi-head: MultiHeadAttention projects h_j itself, per head


def attend(config, s, h, keys, source_mask):
    """Context and weights for decoder states s (B, T, 2u): c (B, T, 2u), a (B, T, S)."""
    import keras

    mask = [None, source_mask]  # no query mask; the source mask on h_j
    if config.attention == "luong-additive":
        W_a = keras.layers.Dense(config.attention_units, use_bias=False, name="W_a")
        attention = keras.layers.AdditiveAttention(name="attention")  # v_a . tanh(query + key), softmax, sum
        return attention([W_a(s), h, keys[0]], mask=mask, return_attention_scores=True)
        #                 W_a s_t  h_j U_a h_j
    if config.attention == "luong-general":
        attention = keras.layers.Attention(score_mode="dot", name="attention")  # query . key, softmax, sum
        return attention([s, h, keys[0]], mask=mask, return_attention_scores=True)
        #                 s_t h_j W_a h_j
    if config.attention == "scaled-dot":
        W_q = keras.layers.Dense(config.attention_units, use_bias=False, name="W_q")
        q = keras.layers.Rescaling(1 / math.sqrt(config.attention_units), name="over_sqrt_d")(
            W_q(s)
        )  # W_q s_t / sqrt(d)
        attention = keras.layers.Attention(score_mode="dot", name="attention")
        return attention([q, h, keys[0]], mask=mask, return_attention_scores=True)
        #                 q_t h_j k_j
    if config.attention == "multi-head":
        heads = keras.layers.MultiHeadAttention(
            config.heads,
            key_dim=config.attention_units // config.heads,
            output_shape=h.shape[-1],
            name="attention",
        )
        c, a = heads(
            s, h, value_mask=source_mask, return_attention_scores=True
        )  # a: (B, H, T, S), one map per head
        return c, keras.ops.mean(a, axis=1)  # (B, T, S): the heads' maps averaged, for heatmaps
    raise ValueError(f"not a Luong-style attention: {config.attention!r}")
