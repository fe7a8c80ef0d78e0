"""A Keras callback that reports train and validate phases and per-epoch metrics.

    from devicewatch.integrations.keras import DevicewatchCallback
    model.fit(x, y, validation_split=0.15, epochs=20, callbacks=[DevicewatchCallback()])

Outside devicewatch it does nothing. Under devicewatch a script needs no callback at all: the
zero-code instrumentation adds one to every ``Model.fit`` (never a second one). Without either,
the recorder still gets epoch marks from Keras's ``Epoch 3/20`` output lines; the callback adds
the split between training and validation.
"""

from __future__ import annotations

from typing import Any

import keras

from .phase_speaker import PhaseSpeaker


class DevicewatchCallback(PhaseSpeaker, keras.callbacks.Callback):
    def __init__(self, lane: str = "main"):
        super().__init__(lane)
        self._epoch = 0
        self._training = False
        self._validating = False

    def _phase(self, name: str, begin: bool) -> None:
        self.say_phase(name, self._epoch, begin)

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
        self.say_run_info(info)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch + 1  # Keras counts from 0, its progress lines from 1
        self._training = True
        self._phase("train", begin=True)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._training:  # validation inside fit(): training of this epoch is over
            self._phase("train", begin=False)
            self._training = False
            self._validating = True
            self._phase("validate", begin=True)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._validating:  # not after a model.evaluate() of the script's own
            self._validating = False
            self._phase("validate", begin=False)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._training:  # no validation this epoch
            self._phase("train", begin=False)
            self._training = False
        self.say_epoch(self._epoch, {**self.epoch_metrics(logs or {}), **self.measured(self._epoch)})

    def epoch_metrics(self, logs: dict[str, Any]) -> dict[str, float]:
        """What the epoch event carries: Keras's numeric logs. A subclass may add its own."""
        return {k: float(v) for k, v in logs.items() if isinstance(v, (int, float)) or hasattr(v, "item")}
