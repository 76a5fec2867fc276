"""Translate human dates with a trained model: greedy or beam search, with attention weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.common.decoding import beam_search, decode_steps, full_model_step
from labs.common.vocab import Vocabulary
from labs.date_translation.model import build_attention_model, has_attention, step_decoder
from labs.date_translation.train import TARGET_LENGTH


@dataclass
class Translation:
    source: str
    output: str                     # the best output
    attention: np.ndarray | None    # (len(output) + 1, len(source)): one row per output character and </s>
    alternatives: list[str]         # every beam's output, best first (just [output] for greedy)


def translate(model, vocabs: dict[str, Vocabulary], sources: list[str], *, beam: int = 1, batch_size: int = 10_000,
              step_decoding: bool = True) -> list[Translation]:
    """Translate ``sources``; ``beam > 1`` uses beam search. Characters outside the vocabulary become ``<unk>``.

    ``step_decoding=False`` re-runs the whole model on every prefix instead (the generic decoder
    the autograder uses on any model with the translation signature); the outputs are the same.
    """
    results: list[Translation] = []
    for first in range(0, len(sources), batch_size):
        batch = sources[first:first + batch_size]
        source = vocabs["source"].encode_batch(batch, unknown="unk")          # (batch, S)
        if step_decoding:
            step, state = step_decoder(model, source)
        else:
            step, state = full_model_step(build_attention_model(model) if has_attention(model) else model, source)
        if beam > 1:
            ranked = beam_search(step, state, len(batch), beam_width=beam, max_length=TARGET_LENGTH)
        else:
            ranked = [decode_steps(step, state, len(batch), max_length=TARGET_LENGTH, greedy=True)]
        for row, text in enumerate(batch):
            outputs = [vocabs["target"].decode(decoded.tokens[row]) for decoded in ranked]
            attention = ranked[0].attention
            weights = None if attention is None else attention[row, :len(outputs[0]) + 1, :len(text)]
            results.append(Translation(text, outputs[0], weights, outputs))
    return results
