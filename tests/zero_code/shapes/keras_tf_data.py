"""Keras fit on a tf.data pipeline whose loading step is slow (each example is "read and
decoded" in Python, as when images come off a slow disk): the model waits on its input.

Synthetic task: 3 classes, each a fixed pattern in 64 features, plus noise.
"""

import time

import tensorflow as tf
import keras
import numpy as np

NUM_CLASSES = 3
FEATURES = 64
BATCH_SIZE = 32

rng = np.random.default_rng(0)
CENTERS = rng.normal(size=(NUM_CLASSES, FEATURES)).astype("float32")


def make_arrays(n, seed):
    r = np.random.default_rng(seed)
    y = r.integers(0, NUM_CLASSES, size=n)
    x = CENTERS[y] + 1.5 * r.normal(size=(n, FEATURES)).astype("float32")
    return x.astype("float32"), y.astype("int32")


x_train, y_train = make_arrays(480, seed=1)   # 480 / 32 = 15 batches an epoch
x_val, y_val = make_arrays(128, seed=2)


def load_example(index):
    """Stands in for reading and decoding one file: slow, and in Python."""
    i = int(index.numpy())
    time.sleep(0.003)
    return x_train[i], y_train[i]


def tf_load(index):
    x, y = tf.py_function(load_example, [index], (tf.float32, tf.int32))
    x.set_shape((FEATURES,))
    y.set_shape(())
    return x, y


train_ds = (tf.data.Dataset.range(len(x_train))
            .shuffle(len(x_train), seed=0)
            .map(tf_load)
            .batch(BATCH_SIZE)
            .prefetch(tf.data.AUTOTUNE))
val_ds = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(64)

keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input(shape=(FEATURES,)),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(NUM_CLASSES, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(train_ds, validation_data=val_ds, epochs=3, verbose=2)
