"""A Hugging Face ``transformers.Trainer`` callback: train and validate phases, epoch metrics.

    from devicewatch.integrations.transformers import DevicewatchCallback
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=val,
                      callbacks=[DevicewatchCallback()])

Outside devicewatch it does nothing. Under devicewatch a script needs no callback at all: the
zero-code instrumentation adds one to every ``Trainer.train`` (never a second one).

The Trainer tells a callback when an epoch begins and ends, but not when an evaluation
begins: only when it is over (``on_evaluate``), with the seconds it took (``eval_runtime``).
So the validate phase is sent when it has ended, stamped with the time it began; an
evaluation in the middle of an epoch (``eval_strategy="steps"``) splits the train phase there.
``trainer.evaluate()`` after ``train()`` validates the last epoch; before any training, no epoch.
"""

from __future__ import annotations

import math
import time
from typing import Any

from transformers import TrainerCallback

from .phase_speaker import PhaseSpeaker


def _numbers(values: dict[str, Any] | None) -> dict[str, float]:
    out = {}
    for name, value in (values or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return out


class DevicewatchCallback(PhaseSpeaker, TrainerCallback):
    def __init__(self, lane: str = "main"):
        super().__init__(lane)
        self._epoch: int | None = None
        self._training = False      # between on_train_begin and on_train_end
        self._in_train_phase = False
        self._train_ended_at = 0.0
        self._logs: dict[str, float] = {}

    def _send(self, begin: bool, name: str, epoch: int | None, at: float) -> None:
        self.say_phase(name, epoch, begin, at)

    def _end_train(self, at: float) -> None:
        if self._in_train_phase:
            self._in_train_phase = False
            self._train_ended_at = at
            self._send(False, "train", self._epoch, at)

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self._training = True
        info: dict[str, Any] = {"framework": "transformers", "device": str(getattr(args, "device", ""))}
        try:
            import transformers

            info["transformers"] = transformers.__version__
        except (ImportError, AttributeError):
            pass
        epochs = getattr(args, "num_train_epochs", None)
        if isinstance(epochs, (int, float)) and getattr(args, "max_steps", -1) <= 0:
            info["epochs"] = int(epochs) if float(epochs).is_integer() else float(epochs)
        if model is not None:
            info["params"] = int(sum(p.numel() for p in model.parameters()))
        self.say_run_info(info)

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._epoch = int(state.epoch or 0) + 1  # the Trainer counts from 0, its progress from 1
        self._in_train_phase = True
        self._send(True, "train", self._epoch, time.monotonic())

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Kept for the next epoch event: the Trainer logs an epoch's loss after its
        ``on_epoch_end``, and may log every step."""
        if self._training:
            self._logs.update(_numbers(logs))

    def _epoch_event(self, epoch: int | None, metrics: dict[str, float]) -> None:
        metrics = {**self._logs, **metrics}
        self._logs = {}
        metrics.pop("epoch", None)  # the Trainer's fractional epoch: the event has its own
        if epoch is not None and metrics:
            self.say_epoch(epoch, metrics)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._end_train(time.monotonic())
        self._epoch_event(self._epoch, self.measured(self._epoch))

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None,
                    **kwargs: Any) -> None:
        now = time.monotonic()
        runtime = (metrics or {}).get("eval_runtime")
        if not isinstance(runtime, (int, float)) or not math.isfinite(runtime) or runtime < 0:
            return  # no duration: no phase to draw
        # after train(), trainer.evaluate() validates the last epoch; before it, none
        epoch = self._epoch_of(state) if self._training else self._epoch
        resume = self._in_train_phase
        began = max(now - float(runtime), self._train_ended_at)
        if resume:  # an evaluation between steps: training stopped for it
            self._end_train(began)
        self._send(True, "validate", epoch, began)
        self._send(False, "validate", epoch, now)
        if resume:
            self._in_train_phase = True
            self._send(True, "train", self._epoch, now)
        self._epoch_event(epoch, _numbers(metrics))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._end_train(time.monotonic())
        self._epoch_event(self._epoch, {})  # what was logged after the last epoch event
        self._training = False

    def _epoch_of(self, state: Any) -> int | None:
        """The epoch an evaluation belongs to: the one running, or the one just ended (the
        Trainer's ``state.epoch`` is fractional: 0.5 is half way through the first)."""
        if self._in_train_phase:
            return self._epoch
        value = getattr(state, "epoch", None)
        if isinstance(value, (int, float)) and value > 0:
            return max(1, math.ceil(value - 1e-9))
        return self._epoch
