"""The tf.data input pipeline: the same preprocessing as the NumPy one, in TensorFlow ops.

Indices are shuffled and batched first, then each batch is gathered and augmented with
vectorized ops on ``threads`` parallel calls (mapping after batching, as the tf.data guide
advises for cheap per-element work), and prefetched.
"""

from __future__ import annotations

from typing import Any

from workloads.pipeline import data as datamod


def datasets(d: datamod.Dataset, batch: int, threads: int, seed: int) -> tuple[Any, Any]:
    import tensorflow as tf

    side, shift = datamod.IMAGE_SIDE, datamod.SHIFT
    x_train, y_train = tf.constant(d.x_train), tf.constant(d.y_train)
    x_val, y_val = tf.constant(d.x_val), tf.constant(d.y_val)
    rows = tf.range(side)

    def augment(idx: Any) -> tuple[Any, Any]:
        x = tf.cast(tf.gather(x_train, idx), tf.float32) * (1 / 255)
        n = tf.shape(x)[0]
        padded = tf.pad(x, [[0, 0], [shift, shift], [shift, shift]])
        oy = tf.random.uniform([n], 0, 2 * shift + 1, dtype=tf.int32)
        ox = tf.random.uniform([n], 0, 2 * shift + 1, dtype=tf.int32)
        x = tf.gather(padded, oy[:, None] + rows, axis=1, batch_dims=1)
        x = tf.gather(x, ox[:, None] + rows, axis=2, batch_dims=1)
        x = x + tf.random.normal(tf.shape(x), stddev=datamod.NOISE_STD)
        x = (tf.clip_by_value(x, 0.0, 1.0) - datamod.MEAN) * (1 / datamod.STD)
        return x, tf.gather(y_train, idx)

    def prepare(idx: Any) -> tuple[Any, Any]:
        x = tf.cast(tf.gather(x_val, idx), tf.float32) * (1 / 255)
        return (x - datamod.MEAN) * (1 / datamod.STD), tf.gather(y_val, idx)

    n = len(d.x_train)
    train = (tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True)
             .batch(batch).map(augment, num_parallel_calls=threads).prefetch(tf.data.AUTOTUNE))
    val = (tf.data.Dataset.range(len(d.x_val)).batch(batch)
           .map(prepare, num_parallel_calls=threads).prefetch(tf.data.AUTOTUNE))
    return train, val
