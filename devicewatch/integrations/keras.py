"""A Keras callback that reports train and validate phases and per-epoch metrics.

    from devicewatch.integrations.keras import DevicewatchCallback
    model.fit(x, y, validation_split=0.15, epochs=20, callbacks=[DevicewatchCallback()])

Outside devicewatch it does nothing. Under devicewatch a script needs no callback at all: the
zero-code instrumentation adds one to every ``Model.fit`` (never a second one), Keras 2's
(``tf_keras``) included. Without either, the recorder still gets epoch marks from Keras's
``Epoch 3/20`` output lines; the callback adds the split between training and validation.
"""

from __future__ import annotations

import keras

from .keras_base import KerasPhases


class DevicewatchCallback(KerasPhases, keras.callbacks.Callback):
    def backend(self) -> str:
        return str(keras.backend.backend())
