"""Write Thai names in English with a trained model: greedy or beam search, the top-k spellings, attention."""

from __future__ import annotations

from labs.common import seq2seq
from labs.common.seq2seq import Translation
from labs.common.vocab import Vocabulary

MAX_OUTPUT_LENGTH = 64  # characters, </s> included; the longest possible name in the table needs 47

__all__ = ["MAX_OUTPUT_LENGTH", "Translation", "transliterate"]


def transliterate(
    model,
    vocabs: dict[str, Vocabulary],
    texts: list[str],
    *,
    beam: int = 1,
    batch_size: int = 5_000,
    step_decoding: bool = True,
) -> list[Translation]:
    """Transliterate Thai names; with ``beam > 1`` each result's ``alternatives`` holds the top ``beam``
    spellings.

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder
    the autograder uses); the outputs are the same.
    """
    return seq2seq.translate(
        model,
        vocabs,
        texts,
        max_length=MAX_OUTPUT_LENGTH,
        beam=beam,
        batch_size=batch_size,
        step_decoding=step_decoding,
    )
