"""Lab 2's attention variants: one record each, in one table that the whole kit reads.

The model (:mod:`labs.date_translation.model`), the configuration's check and the command line's
``--attention`` choices (:mod:`.config`), demo 3 and ``benchmarks/attention_variants.py`` all read
:data:`VARIANTS`. A record says, for one variant of the lecture:

- ``formula``: its score in the lecture's notation;
- ``keys``: what the encoder computes once from its states h_j for the score to read (``U_a h_j``),
  or None;
- ``score``: how step t's context c_t and weights a_t come from the decoder state and that memory,
  or None (the baseline has no attention);
- ``encoder`` and ``decoder``: which networks it runs on, so *where* the decoder attends: after its
  RNN with the current state s_t (Luong's placement), before it with s_{t-1} and the context fed in
  (Bahdanau's), or in every layer (the Transformer);
- ``max_source_length``: the longest source it reads (None: any length); a variant with a limit
  builds a position table of that many rows named ``source_positions``, which is what a loaded
  model's limit is read from (:func:`labs.common.seq2seq.max_source_length`).

The functions are named, not imported (:class:`labs.tasks.Ref`), so that reading the table, as
``python -m labs --help`` does, loads no TensorFlow. Adding a variant is one record:
:func:`register` it (a course's own) or add it below.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.common.errors import InputError
from labs.tasks import Ref

RNN_ENCODER = Ref("labs.date_translation.model:rnn_encoder")
LUONG_DECODER = Ref("labs.date_translation.model:luong_decoder")


@dataclass(frozen=True)
class Variant:
    name: str
    formula: str  # the score, in the lecture's letters
    keys: Ref | None = None  # (config, h (B, S, 2u)) -> (B, S, k), once per source; None: the score reads h_j
    score: Ref | None = (
        None  # (config, s (B, T, 2u), memory) -> c (B, T, 2u), a (B, T, S); None: no attention
    )
    encoder: Ref = RNN_ENCODER  # (config, variant, vocabulary size) -> the encoder model
    decoder: Ref = LUONG_DECODER  # (config, variant, vocabulary size, encoder) -> the decoder model
    max_source_length: int | None = None  # characters; None: any length
    heads_share: str | None = None  # the config size that its heads split equally


VARIANTS: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    """Add ``variant`` to the table (a course's own; a test's toy one). Its name must be new."""
    if variant.name in VARIANTS or variant.name == "no-attention":
        raise ValueError(f"attention {variant.name!r} is already a variant (or the alias of one)")
    VARIANTS[variant.name] = variant
    return variant


def get(name: str) -> Variant:
    """The variant called ``name``; InputError naming the choices otherwise."""
    if isinstance(name, bool):
        raise InputError(
            f"attention must be one of {', '.join(VARIANTS)}; got {name!r} (true and false were the old "
            "form: use luong-additive or none)"
        )
    if name not in VARIANTS:
        raise InputError(f"attention must be one of {', '.join(VARIANTS)}; got {name!r}")
    return VARIANTS[name]


def _score(name: str) -> Ref:
    return Ref(f"labs.date_translation.attention:{name}")


register(Variant("none", "no attention: the decoder sees only the encoder's final state"))
register(
    Variant(
        "bahdanau",
        "e_tj = v_a . tanh(W_a s_{t-1} + U_a h_j); s_t = RNN(s_{t-1}, [y_{t-1}; c_t])",
        keys=_score("additive_keys"),
        score=_score("additive_score"),  # asked with s_{t-1}, one step at a time
        decoder=Ref("labs.date_translation.bahdanau:build_decoder"),
    )
)
register(
    Variant(
        "luong-additive",
        "e_tj = v_a . tanh(W_a s_t + U_a h_j)",
        keys=_score("additive_keys"),
        score=_score("additive_score"),
    )
)
register(
    Variant(
        "luong-general",
        "e_tj = s_t^T W_a h_j",
        keys=_score("general_keys"),
        score=_score("general_score"),
    )
)
register(
    Variant(
        "scaled-dot",
        "e_tj = (W_q s_t) . (W_k h_j) / sqrt(d)",
        keys=_score("scaled_dot_keys"),
        score=_score("scaled_dot_score"),
    )
)
register(
    Variant(
        "multi-head",
        "H heads of (W_q^i s_t) . (W_k^i h_j) / sqrt(d_k); c_t = W_O [c_t^1; ...; c_t^H], "
        "c_t^i = sum_j a_tj^i W_v^i h_j",
        score=_score("multi_head_score"),
        heads_share="attention_units",
    )
)
register(
    Variant(
        "transformer",
        "self-attention encoder and causal decoder, cross-attention softmax(QK^T / sqrt(d_k)) V",
        encoder=Ref("labs.date_translation.transformer:build_encoder"),
        decoder=Ref("labs.date_translation.transformer:build_decoder"),
        max_source_length=256,  # the rows of its position table
        heads_share="model_dim",
    )
)
