"""The tf.data input pipeline every lab trains from, with teacher forcing.

Teacher forcing: in training, the model always reads the *true* previous character, never its
own guess, so the target at step t is the input at step t + 1:

    input    <s>  2  0  1  8  -  0  3  -  1  9
    target    2   0  1  8  -  0  3  -  1  9  </s>

A language model (lab 1) reads only that input; a translation model (lab 2, the homework) also
reads the source: ``((source, target_in), target_out)``.
"""

from __future__ import annotations

from labs.common.vocab import Vocabulary


def language_model_arrays(texts: list[str], vocab: Vocabulary):
    """Inputs ``<s> + text`` and targets ``text + </s>``: int32 (n, T) each."""
    return vocab.encode_batch(texts, add_start=True), vocab.encode_batch(texts, add_end=True)


def translation_arrays(pairs: list[dict], vocabs: dict[str, Vocabulary], source_length: int | None = None):
    """``source`` (n, S), ``target_in`` = ``<s>`` + target (n, T), ``target_out`` = target + ``</s>`` (n, T)."""
    source = vocabs["source"].encode_batch([p["source"] for p in pairs], length=source_length)
    target_in, target_out = language_model_arrays([p["target"] for p in pairs], vocabs["target"])
    return source, target_in, target_out


def language_model_batches(texts: list[str], vocab: Vocabulary, batch_size: int, shuffle_seed: int | None = None):
    """A tf.data pipeline of ``(inputs, targets)`` batches for a language model."""
    return batches(*language_model_arrays(texts, vocab), batch_size, shuffle_seed)


def translation_batches(pairs: list[dict], vocabs: dict[str, Vocabulary], batch_size: int,
                        shuffle_seed: int | None = None):
    """A tf.data pipeline of ``((source, target_in), target_out)`` batches for a translation model."""
    source, target_in, target_out = translation_arrays(pairs, vocabs)
    return batches((source, target_in), target_out, batch_size, shuffle_seed)


def batches(inputs, targets, batch_size: int, shuffle_seed: int | None = None):
    """A tf.data pipeline of ``(inputs, targets)`` batches from in-memory arrays.

    ``inputs`` may be one array or a tuple of arrays (a translation model's ``(source,
    target_in)``). With ``shuffle_seed`` the examples are reshuffled every epoch, the same way
    for the same seed; batches are prefetched so the next one is ready while the model trains.
    """
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
    if shuffle_seed is not None:
        dataset = dataset.shuffle(len(targets), seed=shuffle_seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
