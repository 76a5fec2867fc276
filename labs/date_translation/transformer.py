"""A small encoder-decoder Transformer (Vaswani et al. 2017) on lab 2's dates: no recurrence at all.

Attention is the only way positions talk to each other, and it has no notion of order, so each
character's embedding gets its position's embedding added:

    x_j = E[token_j] + P[j]                                   positional information

Encoder layer (self-attention: queries, keys and values all come from the source):

    z = LayerNorm(x + MultiHead(x, x, x))                     every source position reads every other
    x = LayerNorm(z + FFN(z))                                 FFN(z) = W_2 relu(W_1 z)

Decoder layer (what it has written so far, then the source):

    z = LayerNorm(y + MultiHead(y, y, y, causal))             step t reads steps 1..t only
    z = LayerNorm(z + MultiHead(z, h, h))                     cross-attention: queries from the decoder
    y = LayerNorm(z + FFN(z))

with ``MultiHead = keras.layers.MultiHeadAttention`` (scaled dot-product, ``softmax(QK^T / sqrt(d_k)) V`` per
head, heads concatenated and projected). The decoder keeps no state between steps: to write character t it
re-reads its whole prefix (the step decoder passes the prefix as its state). The heatmaps show the last
decoder layer's cross-attention, averaged over heads."""

from __future__ import annotations

import keras

from labs.common import seq2seq


def embed(tokens, vocab_size: int, d: int, positions: int, name: str):
    """Token plus position embeddings: (B, L) -> (B, L, d), for L up to ``positions``; padding is masked."""
    # (B, L): 0, 1, 2, ...
    j = keras.ops.cumsum(keras.ops.ones_like(tokens), axis=1) - 1
    # E[token_j] (B, L, d)
    x = keras.layers.Embedding(vocab_size, d, mask_zero=True, name=f"{name}_tokens")(tokens)
    # + P[j] (B, L, d)
    P = keras.layers.Embedding(positions, d, name=f"{name}_positions")
    return keras.layers.Add(name=f"{name}_plus_positions")([x, P(j)])


def feed_forward(z, d: int, name: str):
    """z + FFN(z), normalised: (B, L, d) -> (B, L, d)."""
    f = keras.layers.Dense(2 * d, activation="relu", name=f"{name}_W_1")(z)
    f = keras.layers.Dense(d, name=f"{name}_W_2")(f)
    return keras.layers.LayerNormalization(name=f"{name}_norm_2")(keras.layers.Add()([z, f]))


def build_encoder(config, variant, source_vocab_size: int):
    """source (B, S) -> {"memory": {h (B, S, d), source_mask (B, S)}, "state": []}."""
    d = config.model_dim
    # (B, S)
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    source_mask = keras.ops.not_equal(source, 0)
    # (B, S, d)
    x = embed(source, source_vocab_size, d, variant.max_source_length, "source")
    for layer in range(1, config.layers + 1):
        self_attention = keras.layers.MultiHeadAttention(
            config.heads, d // config.heads, name=f"encoder_{layer}_attention"
        )
        # (B, S, d): every source position reads every other
        z = self_attention(x, x, query_mask=source_mask, value_mask=source_mask)
        z = keras.layers.LayerNormalization(name=f"encoder_{layer}_norm_1")(keras.layers.Add()([x, z]))
        x = feed_forward(z, d, f"encoder_{layer}")
    return keras.Model(source, {"memory": {"h": x, "source_mask": source_mask}, "state": []}, name="encoder")


def build_decoder(config, variant, target_vocab_size: int, encoder):
    """{target_in (B, T), memory} -> {probabilities (B, T, V), attention (B, T, S), heads (B, H, T, S)}."""
    d = config.model_dim
    # (B, T)
    y = keras.Input(shape=(None,), dtype="int32", name="target_in")
    # {h (B, S, d), source_mask (B, S)}
    memory = seq2seq.inputs_like(encoder.output["memory"])
    target_mask = keras.ops.not_equal(y, 0)
    # (B, T, d)
    x = embed(y, target_vocab_size, d, variant.max_source_length, "target")
    for layer in range(1, config.layers + 1):
        self_attention = keras.layers.MultiHeadAttention(
            config.heads, d // config.heads, name=f"decoder_{layer}_attention"
        )
        # (B, T, d): step t reads steps 1..t only
        z = self_attention(x, x, query_mask=target_mask, value_mask=target_mask, use_causal_mask=True)
        z = keras.layers.LayerNormalization(name=f"decoder_{layer}_norm_1")(keras.layers.Add()([x, z]))
        cross_attention = keras.layers.MultiHeadAttention(
            config.heads, d // config.heads, name=f"decoder_{layer}_cross"
        )
        # c (B, T, d), heads (B, H, T, S): queries from the decoder, keys and values from the source
        c, heads = cross_attention(
            z,
            memory["h"],
            query_mask=target_mask,
            value_mask=memory["source_mask"],
            return_attention_scores=True,
        )
        z = keras.layers.LayerNormalization(name=f"decoder_{layer}_norm_c")(keras.layers.Add()([z, c]))
        x = feed_forward(z, d, f"decoder_{layer}")
    # (B, T, V), float32 under mixed precision too
    W_o = keras.layers.Dense(target_vocab_size, activation="softmax", dtype="float32", name="W_o")
    return keras.Model(
        {"target_in": y, "memory": memory},
        {"probabilities": W_o(x), "attention": keras.ops.mean(heads, axis=1), "heads": heads},
        name="decoder",
    )
