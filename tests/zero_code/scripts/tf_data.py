"""What the TensorFlow scripts share: a small classification set as tf.data pipelines whose
batches may each take DELAY seconds to make (a slow map, as a decoding or augmenting step).

tf.data's autotuner is off: when an iterator whose autotuner thread sleeps is deleted (each
epoch's, as the next one begins), TensorFlow 2.21 now and then keeps the deleting thread
waiting for the rest of that sleep, seconds on a busy machine, with or without devicewatch;
the epochs' times would depend on it."""

import time

import numpy as np
import tensorflow as tf


def pipelines(delay: float, batch: int = 32, samples: int = 1000, val_batch: int = 64):
    """(train, validation) datasets: 3/4 of SAMPLES to train on, shuffled with a fixed seed."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(samples, 20)).astype("float32")
    y = (x[:, :5].sum(axis=1) > 0).astype("int32")
    cut = samples * 3 // 4
    train = tf.data.Dataset.from_tensor_slices((x[:cut], y[:cut])).shuffle(cut, seed=1).batch(batch)
    if delay > 0:
        def slowly(features):
            time.sleep(delay)
            return features

        def slow(features, labels):
            features = tf.numpy_function(slowly, [features], tf.float32, stateful=True)
            return tf.ensure_shape(features, [None, 20]), labels

        train = train.map(slow)
    validation = tf.data.Dataset.from_tensor_slices((x[cut:], y[cut:])).batch(val_batch)
    options = tf.data.Options()
    options.autotune.enabled = False
    return train.prefetch(2).with_options(options), validation.with_options(options)
