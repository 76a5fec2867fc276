"""The tf.data input pipeline every lab trains from."""

from __future__ import annotations


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
