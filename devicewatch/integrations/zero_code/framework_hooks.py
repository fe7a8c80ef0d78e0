"""Lightning, Keras (3 and 2) and Hugging Face: devicewatch's callback added to every fit.

Each framework already says where its epochs, training and validation begin and end, through
its callbacks; the instrumentation only adds devicewatch's callback (``integrations.lightning``,
``keras``, ``keras2``, ``transformers``) to every ``Trainer.fit``, ``Model.fit`` and
``Trainer.train``, unless the script passed one itself, and tells the torch-level loop that the callback owns the
phases (it then measures only the data wait and steps, which the callback's epoch metrics
carry). The callbacks it adds mark their events ``source: "auto"``.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any
from collections.abc import Callable

from .process_state import PROCESS, Process, event_fields, own_phases


def on_import(framework: str, name: str, module: Any, process: Process) -> None:
    """FRAMEWORK's module NAME has run: devicewatch's callback goes into its fit from now on."""
    if framework == "lightning":
        _wrap(process, framework, module.Trainer, "fit", functools.partial(_lightning_fit, framework, module))
    elif framework == "keras":
        _wrap(process, framework, module.Model, "fit", _keras_fit(framework, module.Model.fit, _keras_callback))
    elif framework == "tf_keras":
        _wrap(process, framework, module.Model, "fit", _keras_fit(framework, module.Model.fit, _keras2_callback))
    elif framework == "transformers":
        _wrap(process, framework, module.Trainer, "train",
              lambda trainer, args, kwargs: _transformers_train(framework, trainer))


def _wrap(process: Process, framework: str, owner: type, method: str,
          prepare: Callable[[Any, tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]] | None]) -> None:
    """Wrap OWNER.METHOD so that PREPARE(self, args, kwargs) runs first (and may return new
    arguments); if PREPARE raises, the method runs as called and the wrapper disarms itself."""
    original = getattr(owner, method)
    failed: list[BaseException] = []

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not failed and process.live:
            try:
                changed = prepare(self, args, kwargs)
                if changed is not None:
                    args, kwargs = changed
            except Exception as exc:
                failed.append(exc)
                if getattr(owner, method) is wrapper:
                    setattr(owner, method, original)
                process.error(framework, method, exc)
        return original(self, *args, **kwargs)

    process.replace(owner, method, wrapper)


def _announce(framework: str) -> None:
    """FRAMEWORK's callback owns the phases: its row's name labels what they say and fail."""
    PROCESS.announce()
    own_phases(framework)


# -- Lightning ----------------------------------------------------------------------------------

_LIGHTNING_CALLBACKS: dict[str, type] = {}


def _lightning_callback(pl: Any) -> type:
    """devicewatch's callback on this Lightning package's base class (``lightning.pytorch`` and
    ``pytorch_lightning`` each have their own ``Callback``)."""
    from ..lightning_base import LightningPhases

    cls = _LIGHTNING_CALLBACKS.get(pl.__name__)
    if cls is None:
        cls = _LIGHTNING_CALLBACKS[pl.__name__] = type("DevicewatchCallback", (LightningPhases, pl.Callback), {})
    return cls


def _lightning_fit(framework: str, pl: Any, trainer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    from ..lightning_base import LightningPhases

    if not any(isinstance(cb, LightningPhases) for cb in trainer.callbacks):
        callback = _lightning_callback(pl)()
        callback.event_fields = event_fields()
        trainer.callbacks.append(callback)
    _announce(framework)


# -- Keras --------------------------------------------------------------------------------------

def _keras_callback() -> type:
    from ..keras import DevicewatchCallback

    return DevicewatchCallback


def _keras2_callback() -> type:
    from ..keras2 import DevicewatchCallback

    return DevicewatchCallback


def _keras_fit(framework: str, fit: Callable[..., Any],
               callback_class: Callable[[], type]) -> Callable[..., tuple[tuple[Any, ...], dict[str, Any]] | None]:
    parameters = list(inspect.signature(fit).parameters)
    position = parameters.index("callbacks") - 1 if "callbacks" in parameters else None  # less self

    def prepare(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        from ..keras_base import KerasPhases

        _announce(framework)
        at = position if position is not None and len(args) > position else None
        callbacks = args[at] if at is not None else kwargs.get("callbacks")
        if callbacks is not None and not isinstance(callbacks, (list, tuple)):
            return None  # a CallbackList of the script's own: left as it is
        callbacks = list(callbacks or ())
        if any(isinstance(cb, KerasPhases) for cb in callbacks):
            return None
        callback = callback_class()()
        callback.event_fields = event_fields()
        callbacks.append(callback)  # a new list: the script's own is not changed
        if at is not None:
            return args[:at] + (callbacks,) + args[at + 1:], kwargs
        return args, dict(kwargs, callbacks=callbacks)

    return prepare


# -- Hugging Face -------------------------------------------------------------------------------

def _transformers_train(framework: str, trainer: Any) -> None:
    from ..transformers import DevicewatchCallback

    if not any(isinstance(cb, DevicewatchCallback) for cb in trainer.callback_handler.callbacks):
        callback = DevicewatchCallback()
        callback.event_fields = event_fields()
        trainer.add_callback(callback)
    _announce(framework)
