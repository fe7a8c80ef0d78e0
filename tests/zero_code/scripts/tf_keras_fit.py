"""Keras's Model.fit on TensorFlow with tf.data input, two epochs with validation. Each training
batch takes --delay seconds to make (0: an in-memory pipeline); --steps-per-execution is
Keras's own; --keras2 fits with Keras 2 (tf_keras) instead of Keras 3. Prints its losses and a
digest of its weights."""

import argparse
import hashlib

from tf_data import pipelines

parser = argparse.ArgumentParser()
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--steps-per-execution", type=int, default=1)
parser.add_argument("--keras2", action="store_true")
args = parser.parse_args()
if args.keras2:
    import tf_keras as keras
else:
    import keras
keras.utils.set_random_seed(0)
train, validation = pipelines(args.delay)
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(512, activation="relu"),
                          keras.layers.Dense(512, activation="relu"), keras.layers.Dropout(0.1),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"],
              steps_per_execution=args.steps_per_execution)
history = model.fit(train, epochs=2, validation_data=validation, verbose=0)
for name, values in sorted(history.history.items()):
    print(name, " ".join(repr(v) for v in values))
print("weights", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest())
