"""Translate human dates with a trained model: greedy or beam search, with attention weights.

:func:`greedy_translate` is the lecture's decoding loop for one date, written out;
:func:`translate` does the same for many at once, with beam search, through the decoding engine
(:mod:`labs.common.decoding`), as the autograder does. A test checks that the two agree.
"""

from __future__ import annotations

import numpy as np

from labs.common import decoding, seq2seq
from labs.common.decoding import Translation
from labs.common.vocab import END_ID, START_ID, Vocabulary
from labs.date_translation.task import TASK

__all__ = ["Translation", "greedy_translate", "translate"]


def greedy_translate(model, vocabs: dict[str, Vocabulary], text: str) -> str:
    """One date, greedily: encode the source once, then write the most probable character until </s>."""
    # (1, S)
    source = vocabs["source"].encode_batch([text], unknown="unk")
    # h_j (and U_a h_j) once, and the decoder's first state
    state = seq2seq.encode(model, source)
    y, written = np.array([START_ID]), []
    for _ in range(TASK.max_output_length):
        # p_t (1, V): the next character's probabilities, given y_{t-1} and the state
        p_t, state, _ = seq2seq.step(model, y, state)
        # the most probable character (never <pad>, <s> or <unk>)
        y = decoding.choose_next(p_t, greedy=True)
        written.append(int(y[0]))
        if y[0] == END_ID:
            break
    return vocabs["target"].decode(written)


def translate(
    model,
    vocabs: dict[str, Vocabulary],
    texts: list[str],
    *,
    beam: int = 1,
    batch_size: int = 10_000,
    step_decoding: bool = True,
    progress: str | None = None,
) -> list[Translation]:
    """Translate ``texts``; ``beam > 1`` keeps the top ``beam`` outputs. Unknown characters become ``<unk>``.
    ``progress``: what the texts are, for a line and a progress bar (:func:`decoding.translate_texts`).

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder the
    autograder uses on any model with the translation signature); the outputs are the same."""
    seq2seq.check_source_length(model, texts)
    make_step = seq2seq.stepper(model, steps=TASK.max_output_length, step_decoding=step_decoding)
    return decoding.translate_texts(
        texts,
        vocabs,
        make_step,
        max_length=TASK.max_output_length,
        beam=beam,
        batch_size=batch_size,
        progress=progress,
    )
