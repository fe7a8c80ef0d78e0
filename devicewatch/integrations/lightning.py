"""A PyTorch Lightning callback that reports train and validate phases and per-epoch metrics.

    from devicewatch.integrations.lightning import DevicewatchCallback
    trainer = lightning.Trainer(max_epochs=20, callbacks=[DevicewatchCallback()])

Outside devicewatch it does nothing. Under devicewatch a script needs no callback at all: the
zero-code instrumentation adds one to every ``Trainer.fit`` (never a second one). Under
torchrun every rank reports, and each event carries its rank, so `devicewatch merge` gives
each rank its lane. What it reports: ``lightning_base.LightningPhases``.
"""

from __future__ import annotations

try:
    import lightning.pytorch as pl
except ImportError:  # the older package name, same API
    import pytorch_lightning as pl  # type: ignore[no-redef]  # the older package name of the same module

from .lightning_base import LightningPhases


class DevicewatchCallback(LightningPhases, pl.Callback):
    pass
