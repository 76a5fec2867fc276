"""Translate human dates with a trained model: greedy or beam search, with attention weights."""

from __future__ import annotations

from labs.common import seq2seq
from labs.common.errors import InputError
from labs.common.seq2seq import Translation
from labs.common.vocab import Vocabulary
from labs.date_translation.model import TARGET_LENGTH
from labs.date_translation.transformer import (
    MAX_POSITIONS as MAX_SOURCE_LENGTH,
)  # the Transformer's positions

__all__ = ["Translation", "translate"]


def translate(
    model,
    vocabs: dict[str, Vocabulary],
    texts: list[str],
    *,
    beam: int = 1,
    batch_size: int = 10_000,
    step_decoding: bool = True,
) -> list[Translation]:
    """Translate ``texts``; ``beam > 1`` keeps the top ``beam`` outputs. Characters outside the vocabulary
    become ``<unk>``.

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder
    the autograder uses on any model with the translation signature); the outputs are the same.
    """
    too_long = next((text for text in texts if len(text) > MAX_SOURCE_LENGTH), None)
    if too_long is not None:
        raise InputError(
            f"{too_long[:40]!r}... has {len(too_long):,} characters; a date has at most "
            f"{MAX_SOURCE_LENGTH} here"
        )
    return seq2seq.translate(
        model,
        vocabs,
        texts,
        max_length=TARGET_LENGTH,
        beam=beam,
        batch_size=batch_size,
        step_decoding=step_decoding,
    )
