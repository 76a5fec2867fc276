"""Shared decoding: beam search against greedy on small hand-built models."""

import numpy as np
import pytest

from labs.common.decoding import beam_search, decode_steps
from labs.common.errors import InputError
from labs.common.vocab import END_ID, PAD_ID

A, B = 4, 5  # two ordinary tokens in a 6-token vocabulary


def trap_step(tokens, state):
    """Greedy takes A (0.6), after which everything is uncertain; B (0.4) leads to a sure </s>.

    Best sequence: B </s> (0.4 * 1.0); greedy: A then A (0.6 * 0.34) and on.
    """
    probabilities = np.zeros((len(tokens), 6))
    first = state is None
    for row, token in enumerate(tokens):
        if first:
            probabilities[row, [A, B]] = [0.6, 0.4]
        elif token == B:
            probabilities[row, END_ID] = 1.0
        else:
            probabilities[row, [A, B, END_ID]] = [0.34, 0.33, 0.33]
    return probabilities, [np.zeros((len(tokens), 1))], None


def test_beam_search_finds_the_sequence_greedy_misses():
    greedy = decode_steps(trap_step, None, 2, max_length=4, greedy=True)
    assert greedy.tokens[0, 0] == A
    best = beam_search(trap_step, None, 2, beam_width=2, max_length=4)[0]
    assert best.tokens[0].tolist() == [B, END_ID, PAD_ID, PAD_ID]
    assert best.log_probs[0] == pytest.approx(np.log(0.4))


def test_beam_results_are_ranked_best_first_by_length_normalised_score():
    ranked = beam_search(trap_step, None, 1, beam_width=3, max_length=4)
    scores = []
    for decoded in ranked:
        length = int((decoded.tokens[0] != PAD_ID).sum())
        scores.append(decoded.log_probs[0] / length)
    assert scores == sorted(scores, reverse=True)
    assert len({tuple(d.tokens[0]) for d in ranked}) == 3  # three different hypotheses


def test_beam_width_one_is_greedy_on_the_trap():
    greedy = decode_steps(trap_step, None, 3, max_length=4, greedy=True)
    single = beam_search(trap_step, None, 3, beam_width=1, max_length=4)[0]
    np.testing.assert_array_equal(single.tokens, greedy.tokens)
    np.testing.assert_allclose(single.log_probs, greedy.log_probs)
    with pytest.raises(InputError, match="beam width must be 1 or more"):
        beam_search(trap_step, None, 1, beam_width=0, max_length=4)


def test_translate_texts_ranks_its_beam_by_the_length_penalty_it_is_given():
    from labs.common.decoding import translate_texts
    from labs.common.vocab import Vocabulary

    letters = Vocabulary.from_characters("ab")  # a, b: ids 4, 5, as A and B above
    vocabs = {"source": letters, "target": letters}

    def ranked(length_penalty: float) -> list[str]:
        (result,) = translate_texts(
            ["ab"],
            vocabs,
            lambda source: (trap_step, None),
            max_length=4,
            beam=3,
            length_penalty=length_penalty,
        )
        return result.alternatives

    assert ranked(1.0) == ["b", "a", "aaaa"]  # the default: the mean log-probability per token
    # a large penalty favours long outputs: the sure, short `b` is no longer among them
    assert ranked(3.0) == ["aab", "aaaa", "aaa"]
    for wrong in (-1.0, float("nan"), "1"):
        with pytest.raises(InputError, match="length_penalty must be a number, 0 or more"):
            ranked(wrong)


def test_translate_texts_shows_its_progress_batch_by_batch_only_when_asked(capsys, monkeypatch):
    from labs.common.decoding import translate_texts
    from labs.common.vocab import Vocabulary

    letters = Vocabulary.from_characters("ab")
    vocabs = {"source": letters, "target": letters}
    texts = ["ab", "ba", "a", "b", "aa"]
    quiet = translate_texts(
        texts, vocabs, lambda source: (trap_step, None), max_length=4, beam=2, batch_size=2
    )
    assert capsys.readouterr() == ("", "")
    # piped: the line alone, before the wait (said so here: a notebook test in this process makes it look
    # like a notebook)
    monkeypatch.setattr("labs.common.training.interactive", lambda: False)
    piped = translate_texts(
        texts, vocabs, lambda source: (trap_step, None), max_length=4, beam=2, batch_size=2, progress="words"
    )
    assert capsys.readouterr() == ("decoding 5 words, beam 2\n", "")
    # in a terminal or a notebook: the line and a bar on stdout, as Keras' own bars
    monkeypatch.setattr("labs.common.training.interactive", lambda: True)
    shown = translate_texts(
        texts, vocabs, lambda source: (trap_step, None), max_length=4, beam=2, batch_size=2, progress="words"
    )
    bar = capsys.readouterr().out
    # a bar that moves on after each batch of 2: 2, 4, then the last one
    assert bar.startswith("decoding 5 words, beam 2\n")
    assert "decoding, beam 2" in bar and "2/5" in bar and "4/5" in bar and "5/5" in bar
    # neither changes an output
    assert (
        [r.alternatives for r in shown] == [r.alternatives for r in piped] == [r.alternatives for r in quiet]
    )
