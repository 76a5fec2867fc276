"""Sample dates from a trained model, one character at a time, carrying the RNN state.

:func:`sample_one` is the lecture's sampling loop for one date, written out; :func:`sample` does
the same for many at once through the decoding engine (:mod:`labs.common.decoding`), as the
autograder does. With the same seed they write the same date (a test checks it).
"""

from __future__ import annotations

import numpy as np

from labs.common.decoding import choose_next, decode_steps
from labs.common.vocab import END_ID, START_ID, Vocabulary
from labs.date_generation.model import step_decoder
from labs.date_generation.task import TASK

# ten characters and </s>, and room for a model that does not stop after ten characters, so that
# such mistakes show up in the validity metric rather than being cut off
MAX_LENGTH = TASK.max_output_length


def sample_one(model, vocabs: dict[str, Vocabulary], *, temperature: float = 1.0, seed: int = 0) -> str:
    """One date: feed <s>, draw a character from the softmax, feed it back in, until </s>."""
    step, state = step_decoder(model)
    rng = np.random.default_rng(seed)
    y, written = np.array([START_ID]), []
    for _ in range(MAX_LENGTH):
        # p_t (1, V): the next character's probabilities, given y_{t-1} and the RNN state h_{t-1}
        p_t, state, _ = step(y, state)
        # a draw from p_t ** (1 / temperature), renormalised
        y = choose_next(p_t, rng, temperature=temperature)
        written.append(int(y[0]))
        if y[0] == END_ID:
            break
    return vocabs["target"].decode(written)


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

    ``max_length``: the task's longest output (:data:`MAX_LENGTH`).
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
