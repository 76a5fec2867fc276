"""The tf.data input pipeline every lab trains from, with teacher forcing.

Teacher forcing: in training, the model always reads the *true* previous character, never its
own guess, so the target at step t is the input at step t + 1:

    input    <s>  2  0  1  8  -  0  3  -  1  9
    target    2   0  1  8  -  0  3  -  1  9  </s>

A language model (lab 1) reads only that input; a translation model (lab 2, the homework) also
reads the source: ``((source, target_in), target_out)``.
"""

from __future__ import annotations

import tensorflow as tf

from labs.common.vocab import Vocabulary


def language_model_arrays(texts: list[str], vocab: Vocabulary, unknown: str = "error"):
    """Inputs ``<s> + text`` and targets ``text + </s>``: int32 (n, T) each (``unknown``: as
    :meth:`Vocabulary.encode_batch`)."""
    return (
        vocab.encode_batch(texts, add_start=True, unknown=unknown),
        vocab.encode_batch(texts, add_end=True, unknown=unknown),
    )


def translation_arrays(pairs: list[dict], vocabs: dict[str, Vocabulary], source_length: int | None = None):
    """``source`` (n, S), ``target_in`` = ``<s>`` + target (n, T), ``target_out`` = target + ``</s>`` (n,
    T)."""
    source = vocabs["source"].encode_batch([p["source"] for p in pairs], length=source_length)
    target_in, target_out = language_model_arrays([p["target"] for p in pairs], vocabs["target"])
    return source, target_in, target_out


def language_model_batches(
    texts: list[str], vocab: Vocabulary, batch_size: int, shuffle_seed: int | None = None
):
    """A tf.data pipeline of ``(inputs, targets)`` batches for a language model."""
    return batches(*language_model_arrays(texts, vocab), batch_size, shuffle_seed)


def translation_batches(
    pairs: list[dict],
    vocabs: dict[str, Vocabulary],
    batch_size: int,
    shuffle_seed: int | None = None,
    *,
    sort_window: int | None = None,
):
    """A tf.data pipeline of ``((source, target_in), target_out)`` batches for a translation model.

    ``sort_window`` batches texts of like length together (see :func:`length_sorted_batches`)."""
    source, target_in, target_out = translation_arrays(pairs, vocabs)
    if sort_window:
        return length_sorted_batches(source, target_in, target_out, batch_size, shuffle_seed, sort_window)
    return batches((source, target_in), target_out, batch_size, shuffle_seed)


def batches(inputs, targets, batch_size: int, shuffle_seed: int | None = None):
    """A tf.data pipeline of ``(inputs, targets)`` batches from in-memory arrays.

    ``inputs`` may be one array or a tuple of arrays (a translation model's ``(source, target_in)``). With
    ``shuffle_seed`` the examples are reshuffled every epoch, the same way for the same seed; batches are
    prefetched so the next one is ready while the model trains."""

    dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
    if shuffle_seed is not None:
        dataset = dataset.shuffle(len(targets), seed=shuffle_seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def length_sorted_batches(
    source, target_in, target_out, batch_size: int, shuffle_seed: int | None = None, sort_window: int = 32
):
    """Like :func:`batches` for a translation model, but each batch holds texts of like length, cut to its
    longest.

    An RNN computes every padded step: names of 8 to 30 letters padded to 30 waste about half the
    work. So: shuffle, take ``sort_window`` batches' worth of examples, sort them by source length,
    cut them into batches, drop each batch's all-padding columns, and shuffle the batches. The
    model sees the same examples per epoch (``ceil(n / batch_size)`` batches, as with
    :func:`batches`); only which ones share a batch changes. Same seed, same batches.
    """
    import math

    def cut_to_longest(inputs, target_out):
        source, target_in = inputs
        S = tf.reduce_max(
            tf.math.count_nonzero(source, axis=1, dtype=tf.int32)
        )  # longest source in the batch
        T = tf.reduce_max(
            tf.math.count_nonzero(target_out, axis=1, dtype=tf.int32)
        )  # longest target (</s> included)
        return (source[:, :S], target_in[:, :T]), target_out[:, :T]

    def sorted_batches(inputs, target_out):  # one window of examples -> its batches, shortest sources first
        order = tf.argsort(tf.math.count_nonzero(inputs[0], axis=1, dtype=tf.int32), stable=True)
        window = (tf.gather(inputs[0], order), tf.gather(inputs[1], order)), tf.gather(target_out, order)
        return tf.data.Dataset.from_tensor_slices(window).batch(batch_size).map(cut_to_longest)

    n = len(target_out)
    dataset = tf.data.Dataset.from_tensor_slices(((source, target_in), target_out))
    if shuffle_seed is not None:
        dataset = dataset.shuffle(n, seed=shuffle_seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size * sort_window).flat_map(sorted_batches)
    # Each full window gives sort_window batches and the last one ceil(rest / batch_size): ceil(n /
    # batch_size) in all.
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(math.ceil(n / batch_size)))
    if shuffle_seed is not None:
        dataset = dataset.shuffle(sort_window, seed=shuffle_seed + 1, reshuffle_each_iteration=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
