"""A training loop written from scratch in TensorFlow (as in the guide "Writing a training loop
from scratch"): tf.data batches, a tf.function train step under a GradientTape, and a pass over
the validation set after every epoch.

Synthetic task: 4 classes, each a fixed pattern in 32 features, plus noise.
"""

import time

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(3)

NUM_CLASSES = 4
FEATURES = 32
rng = np.random.default_rng(3)
centers = rng.normal(size=(NUM_CLASSES, FEATURES)).astype("float32")


def make(n):
    y = rng.integers(0, NUM_CLASSES, size=n)
    x = centers[y] + 2.0 * rng.normal(size=(n, FEATURES))
    return x.astype("float32"), y.astype("int32")


x_train, y_train = make(1280)   # 1280 / 64 = 20 batches an epoch
x_val, y_val = make(256)

batch_size = 64
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_dataset = train_dataset.shuffle(buffer_size=1024, seed=3).batch(batch_size)
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)

model = tf.keras.Sequential([
    tf.keras.layers.Input(shape=(FEATURES,)),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(NUM_CLASSES),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc_metric = tf.keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = tf.keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


epochs = 3
for epoch in range(epochs):
    print(f"\nStart of epoch {epoch}")
    start_time = time.time()

    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        loss_value = train_step(x_batch_train, y_batch_train)
        if step % 10 == 0:
            print(f"Training loss (for one batch) at step {step}: {float(loss_value):.4f}")

    train_acc = train_acc_metric.result()
    print(f"Training acc over epoch: {float(train_acc):.4f}")
    train_acc_metric.reset_state()

    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)
    val_acc = val_acc_metric.result()
    val_acc_metric.reset_state()
    print(f"Validation acc: {float(val_acc):.4f}")
    print(f"Time taken: {time.time() - start_time:.2f}s")
