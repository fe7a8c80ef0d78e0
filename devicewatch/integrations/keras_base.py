"""What devicewatch's Keras callback says, on whichever Keras's ``Callback`` it is built.

Keras 3 (``keras``) and Keras 2 (``tf_keras``, or ``tf.keras`` under ``TF_USE_LEGACY_KERAS=1``)
call their callbacks at the same points of ``fit`` but each takes only callbacks of its own
``Callback`` class. ``KerasPhases`` is what they share and imports neither: ``integrations.keras``
puts it on Keras 3's class, ``integrations.keras2`` on Keras 2's.
"""

from __future__ import annotations

from typing import Any

from .phase_speaker import PhaseSpeaker


class KerasPhases(PhaseSpeaker):
    """Train and validate phases and per-epoch metrics from a Keras ``fit`` (a mix-in before a
    Keras ``Callback`` class)."""

    framework = "keras"   # as the run info names it

    def __init__(self, lane: str = "main"):
        super().__init__(lane)
        self._epoch = 0
        self._training = False
        self._validating = False

    def backend(self) -> str:
        """The backend the run info names: Keras 2 has TensorFlow alone."""
        return "tensorflow"

    def _phase(self, name: str, begin: bool) -> None:
        self.say_phase(name, self._epoch, begin)

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        params = getattr(self, "params", None) or {}
        model = getattr(self, "model", None)
        info: dict[str, Any] = {"framework": self.framework, "backend": self.backend()}
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
