"""A small Keras classifier fitted with validation data, two epochs, progress bars on."""

import numpy as np
import keras

rng = np.random.default_rng(0)
x = rng.normal(size=(512, 20)).astype("float32")
y = (x[:, :5].sum(axis=1) > 0).astype("int32")
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x[:384], y[:384], batch_size=32, epochs=2, validation_data=(x[384:], y[384:]))
