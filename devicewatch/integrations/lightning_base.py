"""What devicewatch's Lightning callback does, apart from its base class.

``lightning.pytorch`` and the older ``pytorch_lightning`` each have a ``Callback`` class of
their own, and a Trainer takes only its own package's; the work is the same, so it lives here
and each callback class is this plus one of the two bases (``integrations.lightning`` for the
package a script imports, the zero-code instrumentation for whichever Trainer it meets).
Imports no Lightning itself.

Lightning runs validation inside the training epoch, before ``on_train_epoch_end``: the train
phase ends where validation begins, as in the Keras callback.
"""

from __future__ import annotations

from typing import Any

from .phase_speaker import PhaseSpeaker


def scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """Lightning keeps metrics as tensors; one-element ones become numbers, the rest are left out."""
    out = {}
    for name, value in metrics.items():
        numel = getattr(value, "numel", None)
        if callable(numel) and numel() != 1:
            continue
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            pass
    return out


class LightningPhases(PhaseSpeaker):
    """Train and validate phases, run info and per-epoch metrics from a Lightning Trainer."""

    def __init__(self, lane: str = "main"):
        super().__init__(lane)
        self._epoch: int | None = None
        self._phase: str | None = None
        self._in_epoch = False

    def _begin(self, name: str, epoch: int | None) -> None:
        self._end()
        self._phase, self._epoch = name, epoch
        self.say_phase(name, epoch, begin=True)

    def _end(self) -> None:
        if self._phase is not None:
            self.say_phase(self._phase, self._epoch, begin=False)
            self._phase = None

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        import sys

        package = sys.modules[type(trainer).__module__.split(".")[0]]
        info: dict[str, Any] = {"framework": "lightning", "lightning": getattr(package, "__version__", None),
                                "device": str(pl_module.device),
                                "params": int(sum(p.numel() for p in pl_module.parameters()))}
        if trainer.max_epochs is not None and trainer.max_epochs >= 0:
            info["epochs"] = trainer.max_epochs
        if trainer.world_size > 1:
            info["world_size"] = trainer.world_size
        self.say_run_info(info)

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._in_epoch = True
        self._begin("train", trainer.current_epoch + 1)  # Lightning counts from 0, its bar from 1

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self._in_epoch and self._phase is None:  # training goes on after a mid-epoch validation
            self._begin("train", trainer.current_epoch + 1)

    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:  # a few batches before training: not an epoch's validation
            return
        fitting = self._phase == "train" or trainer.state.fn == "fit"
        self._begin("validate", trainer.current_epoch + 1 if fitting else None)

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self._phase == "validate":
            self._end()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._end()
        self._in_epoch = False
        epoch = trainer.current_epoch + 1
        self.say_epoch(epoch, {**scalars(trainer.callback_metrics), **self.measured(epoch)})

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._end()
