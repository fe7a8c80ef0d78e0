"""Arming the zero-code instrumentation in one workload process.

``arm`` is what the sitecustomize calls once a watched framework has been imported: it arms
that framework's hooks on this process's state (``process_state.PROCESS``). The hooks and the
framework callbacks import only ``process_state``; this module imports them, so nothing
imports back.
"""

from __future__ import annotations

import functools
from typing import Any

from ... import events
from .process_state import PROCESS, own_phases

# What the sitecustomize watches, and the framework each name arms.
WATCHED = {"torch": "torch", "lightning.pytorch": "lightning", "pytorch_lightning": "lightning",
           "keras": "keras", "tensorflow": "tensorflow", "transformers.trainer": "transformers",
           # Keras's TensorFlow trainer: what the TensorFlow hooks need to measure Model.fit
           "keras.src.backend.tensorflow.trainer": "tensorflow"}



def arm(name: str, module: Any) -> None:
    """Arm the hooks of the framework whose module NAME has just been imported."""
    framework = WATCHED.get(name)
    if framework is None or not PROCESS.live:
        return
    if not PROCESS.armed:
        _defer_to_the_scripts_own_phases()
    try:
        if framework == "torch":
            from . import torch_hooks

            torch_hooks.arm(module, PROCESS)
        elif framework == "tensorflow":
            from . import tf_hooks

            if name == tf_hooks.KERAS_TRAINER:
                tf_hooks.keras_trainer(module)
                return  # part of TensorFlow's arming, said when TensorFlow was
            else:
                PROCESS.knobs.tensorflow(module)
                tf_hooks.arm(module, PROCESS)
        else:
            from . import framework_hooks

            framework_hooks.arm(framework, name, module, PROCESS)
        PROCESS.armed_now(framework)
    except Exception as exc:  # a framework we cannot hook runs as it is
        PROCESS.error(framework, "arm", exc)


def _defer_to_the_scripts_own_phases() -> None:
    """A script that sends phases itself (``devicewatch.events``: the workloads, a script of
    one's own) owns them: from its first phase on, the torch-level loop says none."""
    declare = events.phase_begin

    @functools.wraps(declare)
    def phase_begin(*args: Any, **kwargs: Any) -> None:
        if PROCESS.owner is None:
            own_phases("events")
        declare(*args, **kwargs)

    events.phase_begin = phase_begin
