"""Keras 2's Model.fit on numpy arrays with validation_split: 600 samples, 0.25 held out for
validation, so 450 / 32 = 15 training steps an epoch (the last of 2 samples), 3 epochs, one
validation each. Keras 2 is
``tf_keras``, or ``tf.keras`` where TF_USE_LEGACY_KERAS=1 (--tf-keras). Prints its losses and a
digest of its weights (and, with --step-function, the train function fit called)."""

import argparse
import hashlib

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--tf-keras", action="store_true", help="import Keras as tf.keras")
parser.add_argument("--own-callback", action="store_true", help="pass devicewatch's Keras 2 callback by hand")
parser.add_argument("--step-function", action="store_true", help="print the train function fit called last")
args = parser.parse_args()
if args.tf_keras:
    import tensorflow as tf

    keras = tf.keras
else:
    import tf_keras as keras

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(600, 20)).astype("float32")
y = (x[:, :3].sum(axis=1) > 0).astype("int64")
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
callbacks = []
if args.own_callback:
    from devicewatch.integrations.keras2 import DevicewatchCallback

    callbacks.append(DevicewatchCallback(lane="mine"))
history = model.fit(x, y, batch_size=32, epochs=3, validation_split=0.25, verbose=0, callbacks=callbacks)
print("model", keras.Model.__module__)
for name, values in sorted(history.history.items()):
    print(name, " ".join(repr(v) for v in values))
if args.step_function:
    print("train function", model.train_function.__qualname__)
print("weights", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest())
