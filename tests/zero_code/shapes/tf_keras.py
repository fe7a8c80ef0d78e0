"""The classic tf.keras workflow: a Sequential model fitted on numpy arrays, with a slice of
them held out for validation.

Synthetic task: 10 classes of 8x8 "digits" (each class a fixed pattern), plus noise.
"""

import numpy as np
import tensorflow as tf

tf.random.set_seed(1)
np.random.seed(1)

NUM_CLASSES = 10
patterns = (np.random.rand(NUM_CLASSES, 8, 8) > 0.5).astype("float32")

n = 1000
y = np.random.randint(0, NUM_CLASSES, size=n)
x = patterns[y] + 0.7 * np.random.randn(n, 8, 8).astype("float32")
x = x.astype("float32")

model = tf.keras.Sequential([
    tf.keras.layers.Input(shape=(8, 8)),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(NUM_CLASSES, activation="softmax"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=1e-3),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(),
              metrics=["accuracy"])
model.summary()

# the last 20% (200 samples) validate; 800 train in batches of 32: 25 steps an epoch
history = model.fit(x, y, batch_size=32, epochs=3, validation_split=0.2, verbose=2)
print("final val_accuracy:", history.history["val_accuracy"][-1])
