"""A TensorFlow training loop of one's own: a tf.function train step with a GradientTape and
the optimizer's apply_gradients over a tf.data set, then a validation loop over another, two
epochs. Each training batch takes --delay seconds to make. Prints its losses and a digest of
its weights."""

import argparse
import hashlib

import keras
import tensorflow as tf

from tf_data import pipelines

parser = argparse.ArgumentParser()
parser.add_argument("--delay", type=float, default=0.0)
args = parser.parse_args()
keras.utils.set_random_seed(0)
train, validation = pipelines(args.delay)
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(512, activation="relu"),
                          keras.layers.Dense(512, activation="relu"), keras.layers.Dense(2, activation="softmax")])
optimizer = keras.optimizers.Adam(1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    gradients = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(gradients, model.trainable_weights))
    return loss


@tf.function
def val_step(x, y):
    return loss_fn(y, model(x, training=False))


for epoch in range(1, 3):
    losses = [float(train_step(x, y)) for x, y in train]
    val_losses = [float(val_step(x, y)) for x, y in validation]
    print(epoch, len(losses), repr(sum(losses) / len(losses)), repr(sum(val_losses) / len(val_losses)))
print("weights", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest())
