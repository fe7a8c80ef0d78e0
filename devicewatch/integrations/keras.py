"""A Keras callback that reports train and validate phases and per-epoch metrics.

    from devicewatch.integrations.keras import DevicewatchCallback
    model.fit(x, y, validation_split=0.15, epochs=20, callbacks=[DevicewatchCallback()])

Outside devicewatch it does nothing. Unmodified scripts still get epoch marks from Keras's
``Epoch 3/20`` output lines; the callback adds the split between training and validation.
"""

from __future__ import annotations

from typing import Any

import keras

from .. import events


class DevicewatchCallback(keras.callbacks.Callback):
    def __init__(self, lane: str = "main"):
        super().__init__()
        self.lane = lane
        self._epoch = 0
        self._training = False

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        params = getattr(self, "params", None) or {}
        model = getattr(self, "model", None)
        info: dict[str, Any] = {"framework": "keras", "backend": keras.backend.backend()}
        if params.get("epochs") is not None:
            info["epochs"] = params["epochs"]
        if params.get("steps") is not None:
            info["steps_per_epoch"] = params["steps"]
        if model is not None and model.built:
            info["params"] = int(model.count_params())
        events.run_info(**info)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch + 1  # Keras counts from 0, its progress lines from 1
        self._training = True
        events.phase_begin("train", self._epoch, self.lane)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._training:  # validation inside fit(): training of this epoch is over
            events.phase_end("train", self._epoch, self.lane)
            self._training = False
            events.phase_begin("validate", self._epoch, self.lane)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._epoch and not self._training:
            events.phase_end("validate", self._epoch, self.lane)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._training:  # no validation this epoch
            events.phase_end("train", self._epoch, self.lane)
            self._training = False
        events.epoch_metrics(self._epoch, **self.epoch_metrics(logs or {}))

    def epoch_metrics(self, logs: dict[str, Any]) -> dict[str, float]:
        """What the epoch event carries: Keras's numeric logs. A subclass may add its own."""
        return {k: float(v) for k, v in logs.items() if isinstance(v, (int, float)) or hasattr(v, "item")}
