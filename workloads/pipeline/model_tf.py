"""The same MNIST CNN in Keras 3 on TensorFlow, as the source used, with its replicas.

Training runs a compiled (``tf.function``) step. A validation replica is a set of variables
of its own: the model copy assigns the training weights into it, and one compiled
inference function evaluates any replica through ``stateless_call``, so adding replicas
adds no tracing.
"""

from __future__ import annotations

import os
from typing import Any
from collections.abc import Iterable

import numpy as np


def import_tensorflow(intra_threads: int) -> tuple[Any, Any]:
    os.environ["KERAS_BACKEND"] = "tensorflow"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if intra_threads:
        try:
            tf.config.threading.set_intra_op_parallelism_threads(intra_threads)
        except RuntimeError:  # already initialized in this process
            pass
    import keras

    return tf, keras


class KerasModel:
    """Conv2D(16,3x3) -> pool -> Conv2D(32,3x3) -> pool -> Dense(64) -> Dense(10); Adam, cross-entropy."""

    framework = "tensorflow"

    def __init__(self, seed: int, intra_threads: int) -> None:
        tf, keras = import_tensorflow(intra_threads)
        self.tf = tf
        keras.utils.set_random_seed(seed)
        self.model = keras.Sequential([
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(16, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Flatten(), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10),
        ])
        self.optimizer = keras.optimizers.Adam(1e-3)
        self.optimizer.build(self.model.trainable_variables)
        self.params = int(self.model.count_params())
        self.intra_threads = tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()
        model, optimizer = self.model, self.optimizer
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")

        @tf.function(jit_compile=False, reduce_retracing=True)
        def train_step(x, y):
            x = tf.reshape(x, (-1, 28, 28, 1))
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss_sum = loss_fn(y, logits)
                loss = loss_sum / tf.cast(tf.shape(y)[0], tf.float32)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), tf.cast(y, tf.int64)), tf.int32))
            return loss_sum, correct

        @tf.function(jit_compile=False, reduce_retracing=True)
        def eval_step(weights, x, y):
            x = tf.reshape(x, (-1, 28, 28, 1))
            logits, _ = model.stateless_call(weights, [], x, training=False)
            correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), tf.cast(y, tf.int64)), tf.int32))
            return loss_fn(y, logits), correct

        self._train_step = train_step
        self._eval_step = eval_step

    def thread_setup(self) -> None:
        """Nothing: TensorFlow's intra-op threads are one pool for the process, set before the
        model was built (``import_tensorflow``), whichever thread runs an operation."""

    def train_step(self, x: Any, y: Any) -> tuple[float, int]:
        loss_sum, correct = self._train_step(x, y)
        return float(loss_sum), int(correct)

    def live(self) -> list[Any]:
        """The training weights themselves, for the variants that validate after training."""
        return [v.value for v in self.model.trainable_variables]

    def make_replica(self) -> list[Any]:
        tf = self.tf
        return [tf.Variable(v.value, trainable=False) for v in self.model.trainable_variables]

    def copy_into(self, replica: list[Any]) -> None:
        """The model copy: the training model's current weights into a validation replica."""
        for dst, src in zip(replica, self.model.trainable_variables):
            dst.assign(src.value)

    def snapshot(self) -> list[np.ndarray]:
        return [np.array(v.numpy(), copy=True) for v in self.model.trainable_variables]

    def replica_from(self, weights: list[np.ndarray]) -> list[Any]:
        return [self.tf.Variable(w, trainable=False) for w in weights]

    def evaluate(self, replica: list[Any], batches: Iterable[tuple[Any, Any]]) -> tuple[float, int, int]:
        loss_sum, correct, count = 0.0, 0, 0
        for x, y in batches:
            batch_loss, batch_correct = self._eval_step(replica, x, y)
            loss_sum += float(batch_loss)
            correct += int(batch_correct)
            count += int(y.shape[0])
        return loss_sum, correct, count
