"""The shared input pipeline: length-sorted batches give the model the same examples with less padding."""

import math

import numpy as np
import pytest

from labs.common.pipeline import translation_arrays, translation_batches
from labs.common.vocab import START_ID
from labs.name_transliteration.data import sample_names, vocabularies


@pytest.fixture(scope="module")
def names():
    return sample_names(1_000, seed=3), vocabularies()


def _epoch(dataset):
    """One pass: each batch as ((source, target_in), target_out) numpy arrays."""
    return [((s.numpy(), t.numpy()), o.numpy()) for (s, t), o in dataset]


def _rows(epoch):
    """Every example of an epoch as a tuple of its tokens without padding, sorted."""
    rows = []
    for (source, target_in), target_out in epoch:
        for s, t, o in zip(source, target_in, target_out):
            rows.append((tuple(s[s > 0]), tuple(t[t > 0]), tuple(o[o > 0])))
    return sorted(rows)


def test_sorted_batches_hold_the_same_examples_as_plain_ones(names):
    pairs, vocabs = names
    plain = _epoch(translation_batches(pairs, vocabs, 64, shuffle_seed=1))
    dataset = translation_batches(pairs, vocabs, 64, shuffle_seed=1, sort_window=4)
    sorted_epoch = _epoch(dataset)
    assert _rows(sorted_epoch) == _rows(plain)
    assert int(dataset.cardinality()) == len(sorted_epoch) == math.ceil(len(pairs) / 64) == len(plain)


def test_each_batch_is_cut_to_its_longest_text_and_padding_stays_aligned(names):
    pairs, vocabs = names
    source, target_in, target_out = translation_arrays(pairs, vocabs)
    widths = []
    for (s, t), o in _epoch(translation_batches(pairs, vocabs, 64, shuffle_seed=1, sort_window=4)):
        assert (s[:, -1] > 0).any() and (o[:, -1] > 0).any()  # no column of padding only
        assert t.shape == o.shape
        np.testing.assert_array_equal(t > 0, o > 0)  # target_in = <s> + text, target_out = text + </s>
        assert (t[:, 0] == START_ID).all()
        widths.append(s.shape[1])
    # Sorting by length is what saves the work: batches are on average far narrower than the padded array.
    assert np.mean(widths) < 0.8 * source.shape[1]


def test_the_same_seed_gives_the_same_batches_and_epochs_differ(names):
    pairs, vocabs = names

    def two_epochs(seed):
        dataset = translation_batches(pairs, vocabs, 64, shuffle_seed=seed, sort_window=4)
        return [[b[0][0].tolist() for b in _epoch(dataset)] for _ in range(2)]

    first, again = two_epochs(1), two_epochs(1)
    assert first == again
    assert first[0] != first[1]  # reshuffled every epoch
    assert two_epochs(2)[0] != first[0]


def test_without_a_seed_the_order_is_fixed_for_validation(names):
    pairs, vocabs = names
    dataset = translation_batches(pairs, vocabs, 64, sort_window=4)
    assert [b[0][0].tolist() for b in _epoch(dataset)] == [b[0][0].tolist() for b in _epoch(dataset)]
