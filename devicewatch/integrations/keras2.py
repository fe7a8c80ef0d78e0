"""Keras 2's callback: train and validate phases and per-epoch metrics from a ``tf_keras`` fit.

    from devicewatch.integrations.keras2 import DevicewatchCallback
    model.fit(x, y, validation_split=0.15, epochs=20, callbacks=[DevicewatchCallback()])

Keras 2 (``tf_keras``, which ``tf.keras`` is under ``TF_USE_LEGACY_KERAS=1``) takes only callbacks
of its own ``Callback`` class, so Keras 3's (``integrations.keras``) cannot be given to it; this
one says the same. Under devicewatch a script needs neither: the zero-code instrumentation adds
this one to every Keras 2 ``fit`` (never a second one).
"""

from __future__ import annotations

import tf_keras

from .keras_base import KerasPhases


class DevicewatchCallback(KerasPhases, tf_keras.callbacks.Callback):
    framework = "tf_keras"
