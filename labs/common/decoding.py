"""Decoding, the engine: turn a model's next-token probabilities into sequences, one step at a time.

It knows nothing about a lab or a network: it drives a *step function*, the contract every
lab's model meets for decoding (:func:`labs.common.seq2seq.step_function` for lab 2's and the
homework's, ``labs/date_generation/model.py`` for lab 1's):

    step(tokens, state) -> (probabilities, new_state, attention)
        tokens:        int32 (batch,)          the token each sequence emitted last
        probabilities: float (batch, vocab)    the model's distribution over the next token
        state:         arrays, batch first (RNN states, encoder outputs), in any structure of
                       tuples, lists and dicts, or None at the first step; beam search reorders
                       their rows as beams are kept or dropped.
                       The arrays may be framework tensors: they then stay on their device
                       (copying encoder outputs to NumPy at every step would cost more than
                       the step itself)
        attention:     float (batch, source) the attention weights of this step, or None

With a step function that carries the RNN state, generating a sequence of length T costs T
steps, not a re-run of the whole prefix at every step (T(T+1)/2 positions).

Choosing the next token (:func:`choose_next`):

- **greedy**: the most probable token;
- **temperature** ``t``: sample from ``p ** (1/t)`` renormalised: ``t < 1`` sharpens the
  distribution (safer, less varied), ``t > 1`` flattens it (more varied, more mistakes);
- **top-k**: sample only among the ``k`` most probable tokens.

All randomness comes from a NumPy generator seeded by the caller, so the same seed gives the same samples.
Around those: :func:`translate_texts` (texts in batches, greedy or beam search, into :class:`Translation`
records) and :func:`cached` (what a step function compiles, kept per model)."""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from labs.common.errors import InputError
from labs.common.validation import check_whole_number
from labs.common.vocab import END_ID, PAD_ID, START_ID, UNK_ID, Vocabulary

StepFunction = Callable[[np.ndarray, Any], tuple[np.ndarray, Any, "np.ndarray | None"]]
NEVER_EMITTED = (PAD_ID, START_ID, UNK_ID)


def check_sampling(temperature: float, top_k: int | None) -> None:
    """Reject settings that cannot sample, with a message that says what works."""
    if not temperature > 0:
        raise InputError(
            f"temperature must be greater than 0, got {temperature}; use greedy decoding for the most "
            f"probable output"
        )
    if top_k is not None and top_k < 1:
        raise InputError(f"top_k must be 1 or more, got {top_k}")


def choose_next(
    probabilities: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    greedy: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    banned: Sequence[int] = NEVER_EMITTED,
) -> np.ndarray:
    """Pick one token per row of ``probabilities`` (batch, vocab); returns int32 (batch,).

    Tokens in ``banned`` (padding, start, unknown) are never chosen.
    """
    check_sampling(temperature, top_k)
    with np.errstate(divide="ignore"):
        # (batch, vocab)
        logits = np.log(np.asarray(probabilities, dtype=np.float64)) / temperature
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
    # (batch, vocab)
    cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
    draws = rng.random((len(cumulative), 1))
    chosen = (cumulative < draws).sum(axis=1)
    return np.minimum(chosen, cumulative.shape[1] - 1).astype(np.int32)


@dataclass
class Decoded:
    """Decoded sequences: tokens, their log-probability, and the attention of each output step."""

    # int32 (batch, length): emitted tokens, </s> included, 0 after it
    tokens: np.ndarray
    # float (batch,): total log-probability of each sequence
    log_probs: np.ndarray
    # float (batch, length, source), or None for models without attention
    attention: np.ndarray | None


def _map_arrays(function, structure):
    """``function`` applied to every array of a nest of tuples (named ones too), lists and dicts."""
    if structure is None:
        return None
    if isinstance(structure, dict):
        return {key: _map_arrays(function, value) for key, value in structure.items()}
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*(_map_arrays(function, value) for value in structure))
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map_arrays(function, value) for value in structure)
    return function(structure)


def _rows(array, index: np.ndarray):
    """Rows ``index`` of a batch-first NumPy array or framework tensor (a tensor stays on its device)."""
    if isinstance(array, np.ndarray):
        return array[index]
    import keras

    return keras.ops.take(array, index, axis=0)


def _repeat_rows(array, times: int):
    """Each row repeated ``times`` times in a row: (batch, ...) -> (batch * times, ...)."""
    if isinstance(array, np.ndarray):
        return np.repeat(array, times, axis=0)
    import keras

    return keras.ops.repeat(array, times, axis=0)


def _log(probabilities: np.ndarray, banned: Sequence[int] = NEVER_EMITTED) -> np.ndarray:
    with np.errstate(divide="ignore"):
        # (batch, vocab)
        log_probs = np.log(np.asarray(probabilities, dtype=np.float64))
    log_probs[:, list(banned)] = -np.inf
    return log_probs


def decode_steps(
    step: StepFunction,
    state: Any,
    batch_size: int,
    *,
    max_length: int,
    seed: int | None = 0,
    greedy: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    start_id: int = START_ID,
    end_id: int = END_ID,
) -> Decoded:
    """Greedy or sampled decoding: run ``step`` from ``<s>`` until every sequence has emitted ``</s>``.

    Stops after ``max_length`` tokens at the latest.
    """
    check_sampling(temperature, top_k)
    rng = None if greedy else np.random.default_rng(seed)
    # (batch,)
    tokens = np.full((batch_size,), start_id, dtype=np.int32)
    # (batch, max_length)
    output = np.zeros((batch_size, max_length), dtype=np.int32)
    log_probs = np.zeros((batch_size,), dtype=np.float64)
    finished = np.zeros((batch_size,), dtype=bool)
    attention_steps = []
    for position in range(max_length):
        # (batch, vocab)
        probabilities, state, attention = step(tokens, state)
        tokens = choose_next(probabilities, rng, greedy=greedy, temperature=temperature, top_k=top_k)
        tokens = np.where(finished, PAD_ID, tokens).astype(np.int32)
        log_probs += np.where(finished, 0.0, _log(probabilities)[np.arange(batch_size), tokens])
        output[:, position] = tokens
        if attention is not None:
            # (batch, source)
            attention_steps.append(np.where(finished[:, None], 0.0, attention))
        finished |= tokens == end_id
        if finished.all():
            break
    attention = _stack_attention(attention_steps, max_length)
    return Decoded(output, log_probs, attention)


def _stack_attention(steps: list[np.ndarray], max_length: int) -> np.ndarray | None:
    if not steps:
        return None
    # (batch, steps, source)
    stacked = np.stack(steps, axis=1)
    padding = np.zeros((stacked.shape[0], max_length - stacked.shape[1], stacked.shape[2]))
    # (batch, max_length, source)
    return np.concatenate([stacked, padding], axis=1)


@dataclass
class BeamStep:
    """What beam search weighed at one step, for every input: the ``beam_width`` hypotheses it kept
    and the best ``beam_width`` it pruned, best first (what :func:`labs.common.explorer.beam_view` draws)."""

    # int32 (batch, 2k, step + 1): each candidate's tokens so far, its new token last
    prefixes: np.ndarray
    # float (batch, 2k): total log-probability; -inf for a candidate that does not exist
    log_probs: np.ndarray
    # float (batch, 2k): what beam search ranks by, log p / length ** length_penalty
    scores: np.ndarray
    # bool (batch, 2k): kept (the first k) or pruned
    kept: np.ndarray


def beam_search(
    step: StepFunction,
    state: Any,
    batch_size: int,
    *,
    beam_width: int,
    max_length: int,
    length_penalty: float = 1.0,
    start_id: int = START_ID,
    end_id: int = END_ID,
    trace: list[BeamStep] | None = None,
) -> list[Decoded]:
    """Batched beam search; returns one :class:`Decoded` per rank (best first), each of the whole batch.

        Hypotheses are ranked by length-normalised log-probability, ``log p / length ** length_penalty``
        (1.0: the mean log-probability per token), so that short outputs are not favoured just for
        being short. ``state`` holds batch-first arrays (in any nest of tuples, lists and dicts); each
    is repeated for every beam, and its rows follow the beams kept. With
        ``beam_width=1`` this is greedy decoding. ``trace``: a list that gets a :class:`BeamStep` per step.
    """
    if beam_width < 1:
        raise InputError(f"beam width must be 1 or more, got {beam_width}")
    k = beam_width
    # every array (batch, ...) -> (batch * k, ...): k beams per input
    state = _map_arrays(lambda array: _repeat_rows(array, k), state)
    tokens = np.full((batch_size * k,), start_id, dtype=np.int32)
    # (batch * k, steps)
    history = np.zeros((batch_size * k, 0), dtype=np.int32)
    attention_history = None
    scores = np.full((batch_size, k), -np.inf)
    scores[:, 0] = 0.0  # one live beam per input at the start
    lengths = np.zeros((batch_size, k))
    finished = np.zeros((batch_size, k), dtype=bool)
    rows = np.arange(batch_size)[:, None]
    for _ in range(max_length):
        probabilities, state, attention = step(tokens, state)
        # (batch, k, vocab)
        log_probs = _log(probabilities).reshape(batch_size, k, -1)
        vocab = log_probs.shape[-1]
        # A finished beam continues only with padding, at no cost, so it keeps its score.
        log_probs[finished] = -np.inf
        log_probs[finished, PAD_ID] = 0.0
        # (batch, k, vocab)
        total = scores[..., None] + log_probs
        # (batch, k, vocab)
        new_lengths = np.broadcast_to(lengths[..., None] + (~finished)[..., None], total.shape)
        normalised = np.where(
            np.isfinite(total), total / np.maximum(new_lengths, 1) ** length_penalty, -np.inf
        )
        # (batch, k * vocab) best first
        ranked = np.argsort(-normalised.reshape(batch_size, -1), axis=1, kind="stable")
        if trace is not None:
            trace.append(_beam_step(ranked[:, : 2 * k], history, total, normalised, k))
        # (batch, k)
        best = ranked[:, :k]
        parents, chosen = best // vocab, (best % vocab).astype(np.int32)
        flat_parents = (rows * k + parents).reshape(-1)  # rows of the kept beams
        scores = total.reshape(batch_size, -1)[rows, best]
        lengths = new_lengths.reshape(batch_size, -1)[rows, best]
        finished = finished[rows, parents] | (chosen == end_id)
        tokens = chosen.reshape(-1)
        history = np.concatenate([history[flat_parents], tokens[:, None]], axis=1)
        state = _map_arrays(lambda array, rows=flat_parents: _rows(array, rows), state)
        if attention is not None:
            # (batch * k, 1, source)
            step_attention = np.asarray(attention)[flat_parents][:, None, :]
            attention_history = (
                step_attention
                if attention_history is None
                else np.concatenate([attention_history[flat_parents], step_attention], axis=1)
            )
        if finished.all():
            break
    normalised = scores / np.maximum(lengths, 1) ** length_penalty
    # (batch, k) best first
    order = np.argsort(-normalised, axis=1, kind="stable")
    history = history.reshape(batch_size, k, -1)
    padded = np.zeros((batch_size, k, max_length), dtype=np.int32)
    padded[..., : history.shape[-1]] = history
    results = []
    for rank in range(k):
        pick = order[:, rank]
        attention_rank = None
        if attention_history is not None:
            per_beam = attention_history.reshape(batch_size, k, *attention_history.shape[1:])[
                np.arange(batch_size), pick
            ]
            attention_rank = np.zeros((batch_size, max_length, per_beam.shape[-1]))
            attention_rank[:, : per_beam.shape[1]] = per_beam
        results.append(
            Decoded(padded[np.arange(batch_size), pick], scores[np.arange(batch_size), pick], attention_rank)
        )
    return results


def _beam_step(candidates, history, total, normalised, k: int) -> BeamStep:
    """The :class:`BeamStep` of ``candidates`` (batch, 2k): indices into each input's k * vocab choices."""
    batch_size, _, vocab = total.shape
    rows = np.arange(batch_size)[:, None]
    parents, tokens = candidates // vocab, (candidates % vocab).astype(np.int32)
    # (batch, 2k, steps so far): the parent beam's tokens, then the candidate's new token
    before = history.reshape(batch_size, k, -1)[rows, parents]
    prefixes = np.concatenate([before, tokens[..., None]], axis=-1)
    kept = np.broadcast_to(np.arange(candidates.shape[1]) < k, candidates.shape)
    return BeamStep(
        prefixes,
        total.reshape(batch_size, -1)[rows, candidates],
        normalised.reshape(batch_size, -1)[rows, candidates],
        kept.copy(),
    )


@dataclass
class BeamTrace:
    """One text's beam search, step by step, beside its greedy decoding (:func:`beam_trace`)."""

    source: str
    beam_width: int
    # per step: [(text so far, log p, score, kept, ended with </s>), ...] best first: kept, then pruned
    steps: list[list[tuple[str, float, float, bool, bool]]]
    # beam search's outputs, best first, with their log-probabilities: what beam_search returned
    outputs: list[tuple[str, float]]
    # greedy decoding's output and its log-probability
    greedy: tuple[str, float]


def beam_trace(
    text: str, vocabs: dict[str, Vocabulary], make_step: Callable, *, beam: int, max_length: int
) -> BeamTrace:
    """Beam search on one ``text`` with its trace, and greedy decoding of the same text (the path beam search
    may leave): the record that :func:`labs.common.explorer.beam_view` draws."""
    beam = check_whole_number(beam, "a beam search view's beam", 2)
    trace: list[BeamStep] = []
    step, state = make_step(vocabs["source"].encode_batch([text], unknown="unk"))
    ranked = beam_search(step, state, 1, beam_width=beam, max_length=max_length, trace=trace)
    step, state = make_step(vocabs["source"].encode_batch([text], unknown="unk"))
    greedy = decode_steps(step, state, 1, max_length=max_length, greedy=True)
    decode = vocabs["target"].decode
    steps = [
        [
            (decode(prefix), float(log_p), float(score), bool(kept), bool((prefix == END_ID).any()))
            for prefix, log_p, score, kept in zip(s.prefixes[0], s.log_probs[0], s.scores[0], s.kept[0])
            if np.isfinite(log_p)
        ]
        for s in trace
    ]
    return BeamTrace(
        text,
        beam,
        steps,
        [(decode(d.tokens[0]), float(d.log_probs[0])) for d in ranked],
        (decode(greedy.tokens[0]), float(greedy.log_probs[0])),
    )


def full_model_step(model, source: np.ndarray) -> tuple[StepFunction, list[np.ndarray]]:
    """A step function for *any* model with the translation signature, and its first state.

    ``model([source[B, S], target_in[B, T]]) -> probabilities[B, T, V]`` (or ``[probabilities,
    attention[B, T, S]]``). Each step re-runs the whole model on the prefix written so far: slow
    (the encoder runs at every step), but it needs nothing from the model but its signature,
    which is how the autograder drives student models.
    """

    def step(tokens, state):
        source_rows, prefix = state
        prefix = np.concatenate([prefix, tokens[:, None]], axis=1) if prefix.shape[1] else tokens[:, None]
        outputs = model.predict_on_batch([source_rows, prefix])
        probabilities, attention = (
            (outputs[0], outputs[1]) if isinstance(outputs, (list, tuple)) else (outputs, None)
        )
        attention = None if attention is None else np.asarray(attention)[:, -1]
        return np.asarray(probabilities)[:, -1], [source_rows, prefix], attention

    return step, [np.asarray(source), np.zeros((len(source), 0), dtype=np.int32)]


def full_language_model_step(model) -> StepFunction:
    """A step function for *any* language model ``tokens[B, T] -> probabilities[B, T, V]``.

    The state is the prefix written so far; each step re-runs the model on it (from ``<s>``).
    Like :func:`full_model_step`, it needs only the signature: the autograder samples from
    student models with it.
    """

    def step(tokens, prefix):
        prefix = tokens[:, None] if prefix is None else np.concatenate([prefix, tokens[:, None]], axis=1)
        return np.asarray(model.predict_on_batch(prefix))[:, -1], prefix, None

    return step


@dataclass
class Translation:
    """One decoded text: the source, the best output, its attention, and every beam's output."""

    source: str
    # the best output
    output: str
    # (len(output) + 1, len(source)): one row per output character and </s>; None without attention
    attention: np.ndarray | None
    # every beam's output, best first (just [output] for greedy)
    alternatives: list[str]


PROGRESS_BATCH = 250  # texts decoded at once where a progress bar is shown


def translate_texts(
    texts: list[str],
    vocabs: dict[str, Vocabulary],
    make_step: Callable,
    *,
    max_length: int,
    beam: int = 1,
    length_penalty: float = 1.0,
    batch_size: int = 10_000,
    progress: str | None = None,
) -> list[Translation]:
    """Decode ``texts`` in batches: greedy (``beam=1``) or beam search, keeping the top ``beam`` outputs
    (with ``beam > 1``, ranked by ``log p / length ** length_penalty``: :func:`beam_search`).

    ``make_step(source)`` gives a step function and its first state for one batch of encoded
    sources (B, S). Characters outside the source vocabulary become ``<unk>``.

    ``progress``: what the texts are (``"names"``). A line then says what is decoded before the wait, and
    where a bar can be drawn (a terminal, a notebook: :func:`labs.common.training.interactive`) one moves
    on after each batch, of at most :data:`PROGRESS_BATCH` texts (smaller batches decode a little slower).
    """
    if isinstance(texts, str):
        raise InputError(f"give a list of texts, e.g. [{texts!r}], not one text")
    blank = next((i for i, text in enumerate(texts) if not isinstance(text, str) or not text.strip()), None)
    if blank is not None:
        raise InputError(
            f"text {blank + 1} of {len(texts)} is {texts[blank]!r}: give each a non-empty string to decode"
        )
    beam = check_whole_number(beam, "beam", 1, " (1: greedy)")
    if not (isinstance(length_penalty, (int, float)) and 0 <= length_penalty < float("inf")):
        raise InputError(
            f"length_penalty must be a number, 0 or more (1: the mean log-probability per token), "
            f"got {length_penalty!r}"
        )
    from tqdm.auto import tqdm

    from labs.common.training import interactive

    shown = False
    if progress:
        print(f"decoding {len(texts):,} {progress}, beam {beam}", flush=True)
        shown = interactive()
        batch_size = min(batch_size, PROGRESS_BATCH) if shown else batch_size
    results: list[Translation] = []
    # on stdout, as Keras' own bars; redrawn after every batch, however quick, not every tenth of a second
    bar = tqdm(
        total=len(texts),
        desc=f"decoding, beam {beam}",
        unit="input",
        mininterval=0,
        file=sys.stdout,
        disable=not shown,
    )
    with bar:
        for first in range(0, len(texts), batch_size):
            batch = texts[first : first + batch_size]
            # source (B, S)
            step, state = make_step(vocabs["source"].encode_batch(batch, unknown="unk"))
            if beam > 1:
                ranked = beam_search(
                    step,
                    state,
                    len(batch),
                    beam_width=beam,
                    max_length=max_length,
                    length_penalty=length_penalty,
                )
            else:
                ranked = [decode_steps(step, state, len(batch), max_length=max_length, greedy=True)]
            for row, text in enumerate(batch):
                outputs = [vocabs["target"].decode(decoded.tokens[row]) for decoded in ranked]
                attention = ranked[0].attention
                weights = None if attention is None else attention[row, : len(outputs[0]) + 1, : len(text)]
                results.append(Translation(text, outputs[0], weights, outputs))
            bar.update(len(batch))
    return results


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached(owner, key: str, build: Callable[[], Any]) -> Any:
    """``build()``, once per ``owner`` (a model) and ``key``: what a step function compiles for a model.

    The cache holds the owner weakly, so a model that is no longer used is freed with its graphs."""
    kept = _CACHE.setdefault(owner, {})
    if key not in kept:
        kept[key] = build()
    return kept[key]
