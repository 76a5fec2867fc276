"""Homework 3.1: key-value attention. This is the file you edit.

Fill in every ``TODO`` in :class:`KeyValueAttention` below, then check your layer:

    python -m labs selftest homework        (or the self-test cell in the notebook)

The self-test explains what is wrong when a check fails. When it passes, train the
transliteration model in the notebook and export your submission; the bundle carries this file
(as ``custom_layers.py``) so that the grader can load your model.

Keep this file self-contained: it may import ``keras`` (and ``numpy``), nothing from the kit."""

from __future__ import annotations

import keras
from keras import ops

SCORES = ("dot", "additive")


@keras.saving.register_keras_serializable(package="attention_lab")
class KeyValueAttention(keras.layers.Layer):
    """Key-value attention (after Daniluk et al., 2017, "Frustratingly Short Attention Spans").

    Plain attention uses each encoder state ``h_j`` twice: to decide *where* to look (the score)
    and as *what* is read there (the context). Key-value attention gives the two jobs separate
    vectors, each a learned projection of the memory:

        k_j = W_k h_j          key   (key_dim):   used only to score
        v_j = W_v h_j          value (value_dim): used only to build the context
        q_t = W_q s_t          query (key_dim):   the decoder state, projected into key space

        score e_tj = q_t . k_j / sqrt(key_dim)           (``score="dot"``, scaled dot product)
                   = w . tanh(q_t + k_j)                 (``score="additive"``, Bahdanau-style)
        e_tj = -inf where source position j is padding   (the mask, applied before the softmax)
        a_t  = softmax_j(e_t)                            attention weights; sum to 1 over real positions
        c_t  = sum_j a_tj v_j                            the context (value_dim)

    Call arguments:
        query:  (batch, T, query_dim)   decoder states s_t, one per output step
        memory: (batch, S, memory_dim)  encoder states h_j, one per source character
        memory_mask: bool (batch, S), True at real source positions, False at padding
            (optional: no mask means every position is real)
        return_attention_scores: also return the weights ``a``

    Returns:
        context (batch, T, value_dim), and weights (batch, T, S) when asked for.

    Args:
        key_dim: size of queries and keys.
        value_dim: size of values and so of the context (default: ``key_dim``).
        score: ``"dot"`` (scaled dot product) or ``"additive"``.
    """

    def __init__(self, key_dim: int, value_dim: int | None = None, score: str = "dot", **kwargs):
        super().__init__(**kwargs)
        if int(key_dim) < 1:
            raise ValueError(f"key_dim must be 1 or more, got {key_dim}")
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}; choose one of: {', '.join(SCORES)}")
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.score = score
        # The context keeps the query's mask: padded output steps stay padded downstream.
        self.supports_masking = True

    def build(self, query_shape, memory_shape, memory_mask_shape=None):
        query_dim, memory_dim = query_shape[-1], memory_shape[-1]
        # W_q (query_dim, key_dim), W_k (memory_dim, key_dim), W_v (memory_dim, value_dim)
        glorot = "glorot_uniform"
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_dim, self.key_dim), initializer=glorot
        )
        self.key_kernel = self.add_weight(
            name="key_kernel", shape=(memory_dim, self.key_dim), initializer=glorot
        )
        self.value_kernel = self.add_weight(
            name="value_kernel", shape=(memory_dim, self.value_dim), initializer=glorot
        )
        if self.score == "additive":
            # w (key_dim,)
            self.score_vector = self.add_weight(
                name="score_vector", shape=(self.key_dim,), initializer=glorot
            )

    def call(self, query, memory, memory_mask=None, return_attention_scores=False):
        # 1. Keys and values from the memory; the query projected into key space.
        ### BEGIN SOLUTION
        ### TODO: compute keys (batch, S, key_dim), values (batch, S, value_dim) and q (batch, T, key_dim)
        ### HINT: each is one learned projection (the formulas above): one matrix product over the last axis covers every example and position at once
        # (batch, S, key_dim)
        keys = ops.matmul(memory, self.key_kernel)
        # (batch, S, value_dim)
        values = ops.matmul(memory, self.value_kernel)
        # (batch, T, key_dim)
        q = ops.matmul(query, self.query_kernel)
        ### END SOLUTION

        # 2. One score per (output step t, source position j).
        ### BEGIN SOLUTION
        ### TODO: compute the scores (batch, T, S): scaled dot product, or additive when self.score == "additive"
        ### HINT: dot: all q_t . k_j at once is a batched matrix product once the keys' last two axes are swapped (a transpose, not a reshape); additive: give q a source axis and the keys an output-step axis, so that q + keys broadcasts to (batch, T, S, key_dim)
        if self.score == "dot":
            # (batch, T, S)
            scores = ops.matmul(q, ops.transpose(keys, (0, 2, 1)))
            scores = scores / ops.sqrt(ops.cast(self.key_dim, scores.dtype))
        else:
            # (batch, T, S, key_dim)
            hidden = ops.tanh(q[:, :, None, :] + keys[:, None, :, :])
            # (batch, T, S)
            scores = ops.tensordot(hidden, self.score_vector, axes=1)
        ### END SOLUTION

        # 3. Padding gets no weight: mask the scores *before* the softmax, then normalise over S.
        ### BEGIN SOLUTION
        ### TODO: set the scores of padded positions (memory_mask False) to a large negative number, then softmax over the last axis
        ### HINT: the mask is (batch, S) and the scores (batch, T, S): one mask serves every output step; a padded score must be so negative that its exp() is 0, yet a number float16 holds (at most 65504 in size)
        if memory_mask is not None:
            # (batch, 1, S)
            real = ops.cast(memory_mask, "bool")[:, None, :]
            scores = ops.where(real, scores, ops.full_like(scores, -1e4))
        # (batch, T, S)
        weights = ops.softmax(scores, axis=-1)
        ### END SOLUTION

        # 4. The context: the weighted average of the values.
        ### BEGIN SOLUTION
        ### TODO: compute the context (batch, T, value_dim) from the weights and the values
        ### HINT: c_t = sum_j a_tj v_j for every t at once; the shapes (batch, T, S) and (batch, S, value_dim) say which product
        # (batch, T, value_dim)
        context = ops.matmul(weights, values)
        ### END SOLUTION

        if return_attention_scores:
            return context, weights
        return context

    def get_config(self):
        return {
            **super().get_config(),
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "score": self.score,
        }
