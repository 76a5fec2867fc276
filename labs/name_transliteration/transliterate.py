"""Write Thai names in English with a trained model: greedy or beam search, the top-k spellings, attention.

:func:`greedy_transliterate` is the decoding loop for one name, written out; :func:`transliterate`
does the same for many at once, with beam search, through the decoding engine
(:mod:`labs.common.decoding`), as the autograder does. A test checks that the two agree.
"""

from __future__ import annotations

import numpy as np

from labs.common import decoding, seq2seq
from labs.common.decoding import Translation
from labs.common.vocab import END_ID, START_ID, Vocabulary
from labs.name_transliteration.task import TASK

__all__ = ["Translation", "greedy_transliterate", "transliterate"]


def greedy_transliterate(model, vocabs: dict[str, Vocabulary], name: str) -> str:
    """One Thai name, letter by letter: the query s_t asks the keys, the values answer, until </s>."""
    # (1, S): the Thai characters
    source = vocabs["source"].encode_batch([name], unknown="unk")
    # keys and values come from h_j, computed once; the decoder starts from the encoder's final state
    state = seq2seq.encode(model, source)
    letter, letters = np.array([START_ID]), []
    while len(letters) < TASK.max_output_length and (not letters or letters[-1] != END_ID):
        # p_t (1, V) over English letters; a_t (1, S) over the Thai characters
        p_t, state, a_t = seq2seq.step(model, letter, state)
        letter = decoding.choose_next(p_t, greedy=True)
        letters.append(int(letter[0]))
    return vocabs["target"].decode(letters)


def transliterate(
    model,
    vocabs: dict[str, Vocabulary],
    texts: list[str],
    *,
    beam: int = 1,
    length_penalty: float = 1.0,
    batch_size: int = 5_000,
    step_decoding: bool = True,
    progress: str | None = None,
) -> list[Translation]:
    """Transliterate Thai names; with ``beam > 1``, each result's ``alternatives`` holds the top spellings,
    ranked by ``log p / length ** length_penalty`` (1.0: the mean log-probability per token).

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder
    the autograder uses); the outputs are the same. ``progress``: what the texts are, for a line and a
    progress bar (:func:`decoding.translate_texts`).
    """
    make_step = seq2seq.stepper(model, steps=TASK.max_output_length, step_decoding=step_decoding)
    return decoding.translate_texts(
        texts,
        vocabs,
        make_step,
        max_length=TASK.max_output_length,
        beam=beam,
        length_penalty=length_penalty,
        batch_size=batch_size,
        progress=progress,
    )
