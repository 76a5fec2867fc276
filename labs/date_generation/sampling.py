"""Sample dates from a trained model, one character at a time, carrying the RNN state."""

from __future__ import annotations

from labs.common.decoding import decode_steps
from labs.common.vocab import Vocabulary
from labs.date_generation.data import ISO_LENGTH
from labs.date_generation.model import step_decoder

MAX_LENGTH = ISO_LENGTH + 4  # room for a model that does not stop after ten characters


def sample(
    model,
    vocabs: dict[str, Vocabulary],
    n: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    greedy: bool = False,
    seed: int = 0,
    batch_size: int = 10_000,
    max_length: int = MAX_LENGTH,
) -> list[str]:
    """``n`` strings the model writes from ``<s>``; the same seed gives the same strings.

    ``max_length`` leaves room for a model that does not stop after ten characters, so that
    such mistakes show up in the validity metric rather than being cut off.
    """
    step, state = step_decoder(model)
    samples: list[str] = []
    for batch, first in enumerate(range(0, n, batch_size)):
        size = min(batch_size, n - first)
        decoded = decode_steps(
            step,
            state,
            size,
            max_length=max_length,
            seed=seed + batch,
            greedy=greedy,
            temperature=temperature,
            top_k=top_k,
        )
        samples.extend(vocabs["target"].decode(row) for row in decoded.tokens)
    return samples
