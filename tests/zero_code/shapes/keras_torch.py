"""Keras 3 on its PyTorch backend: a small classifier fitted on numpy arrays with held-out
validation data.

Synthetic task: 5 classes, each a fixed pattern in 48 features, plus noise.
"""

import os

os.environ["KERAS_BACKEND"] = "torch"

import keras
import numpy as np

NUM_CLASSES = 5
FEATURES = 48


def make_arrays(n, rng, centers):
    y = rng.integers(0, NUM_CLASSES, size=n)
    x = centers[y] + 1.5 * rng.normal(size=(n, FEATURES))
    return x.astype("float32"), y


def main():
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(NUM_CLASSES, FEATURES))
    x_train, y_train = make_arrays(768, rng, centers)   # 768 / 32 = 24 batches an epoch
    x_val, y_val = make_arrays(192, rng, centers)

    model = keras.Sequential([
        keras.Input(shape=(FEATURES,)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(NUM_CLASSES, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=3, validation_data=(x_val, y_val))
    print({k: [round(v, 4) for v in vs] for k, vs in history.history.items()})


if __name__ == "__main__":
    main()
