"""Decoding: turn a model's next-token probabilities into sequences, one step at a time.

A *step function* is the contract every lab's model meets for decoding:

    step(tokens, state) -> (probabilities, new_state)
        tokens:        int32 (batch,)        the token each sequence emitted last
        probabilities: float (batch, vocab)  the model's distribution over the next token
        state:         anything the model carries between steps (RNN states, encoder outputs)

With a step function that carries the RNN state, generating a sequence of length T costs T
steps, not a re-run of the whole prefix at every step (T(T+1)/2 positions).

Choosing the next token (:func:`choose_next`):

- **greedy**: the most probable token;
- **temperature** ``t``: sample from ``p ** (1/t)`` renormalised: ``t < 1`` sharpens the
  distribution (safer, less varied), ``t > 1`` flattens it (more varied, more mistakes);
- **top-k**: sample only among the ``k`` most probable tokens.

All randomness comes from a NumPy generator seeded by the caller, so the same seed gives the
same samples.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from labs.common.errors import InputError
from labs.common.vocab import END_ID, PAD_ID, START_ID, UNK_ID

StepFunction = Callable[[np.ndarray, Any], tuple[np.ndarray, Any]]
NEVER_EMITTED = (PAD_ID, START_ID, UNK_ID)


def check_sampling(temperature: float, top_k: int | None) -> None:
    """Reject settings that cannot sample, with a message that says what works."""
    if not temperature > 0:
        raise InputError(f"temperature must be greater than 0, got {temperature}; use greedy decoding for the most probable output")
    if top_k is not None and top_k < 1:
        raise InputError(f"top_k must be 1 or more, got {top_k}")


def choose_next(probabilities: np.ndarray, rng: np.random.Generator | None = None, *, greedy: bool = False,
                temperature: float = 1.0, top_k: int | None = None,
                banned: Sequence[int] = NEVER_EMITTED) -> np.ndarray:
    """Pick one token per row of ``probabilities`` (batch, vocab); returns int32 (batch,).

    Tokens in ``banned`` (padding, start, unknown) are never chosen.
    """
    check_sampling(temperature, top_k)
    with np.errstate(divide="ignore"):
        logits = np.log(np.asarray(probabilities, dtype=np.float64)) / temperature  # (batch, vocab)
    logits[:, list(banned)] = -np.inf
    # A row whose whole mass sits on banned tokens (an untrained or broken model) falls back to
    # a uniform choice among the allowed tokens rather than emitting a banned one.
    dead = ~np.isfinite(logits).any(axis=1)
    if dead.any():
        logits[dead] = 0.0
        logits[np.ix_(dead, list(banned))] = -np.inf
    if greedy:
        return logits.argmax(axis=1).astype(np.int32)
    if rng is None:
        raise InputError("sampling needs a random generator: pass rng=np.random.default_rng(seed)")
    if top_k is not None and top_k < logits.shape[1]:
        kth_largest = np.partition(logits, -top_k, axis=1)[:, -top_k][:, None]
        logits = np.where(logits >= kth_largest, logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)  # (batch, vocab)
    draws = rng.random((len(cumulative), 1))
    chosen = (cumulative < draws).sum(axis=1)
    return np.minimum(chosen, cumulative.shape[1] - 1).astype(np.int32)


def decode_steps(step: StepFunction, state: Any, batch_size: int, *, max_length: int, seed: int | None = 0,
                 greedy: bool = False, temperature: float = 1.0, top_k: int | None = None,
                 start_id: int = START_ID, end_id: int = END_ID) -> np.ndarray:
    """Run ``step`` from ``<s>`` until every sequence has emitted ``</s>`` or ``max_length`` tokens.

    Returns int32 (batch_size, max_length): the emitted tokens, ``</s>`` included, padded with 0
    after it. Decode them with ``Vocabulary.decode``.
    """
    check_sampling(temperature, top_k)
    rng = None if greedy else np.random.default_rng(seed)
    tokens = np.full((batch_size,), start_id, dtype=np.int32)  # (batch,)
    output = np.zeros((batch_size, max_length), dtype=np.int32)  # (batch, max_length)
    finished = np.zeros((batch_size,), dtype=bool)
    for position in range(max_length):
        probabilities, state = step(tokens, state)  # (batch, vocab)
        tokens = choose_next(np.asarray(probabilities), rng, greedy=greedy, temperature=temperature, top_k=top_k)
        tokens = np.where(finished, PAD_ID, tokens).astype(np.int32)
        output[:, position] = tokens
        finished |= tokens == end_id
        if finished.all():
            break
    return output
