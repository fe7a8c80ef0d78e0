"""The settings of one training run, resolved from the command line."""

from __future__ import annotations

import math
from dataclasses import dataclass

BATCH_SIZE = 32
VALIDATION_SPLIT = 0.15   # Keras' validation_split in the source: the last 15 % of the samples
# Steps per epoch of the default demo on a 2-core CPU: the cnn takes about 0.25 s a step there,
# so 50 steps make a 10-20 s epoch; the dense model runs its full 1,329-step epoch in that time.
DEFAULT_STEPS = {"cnn": 50, "dense": None}


ALL = 1 << 62  # "every batch there is", for --val-steps all


class UsageError(Exception):
    """A bad combination of options; the message is one line for the user."""


class DeviceError(Exception):
    """The asked-for device is not there; the message is one line for the user."""


@dataclass
class TrainingConfig:
    model: str = "cnn"
    framework: str = "torch"
    backend: str | None = None         # keras only: "torch" or "tensorflow"
    device: str = "auto"                # as asked: cpu, cuda or auto
    cpu_method: str = "device"          # env, override or device (only when device is cpu)
    epochs: int = 3
    steps_per_epoch: int | None = 50    # None: the whole training split
    val_steps: int | None = None        # None: in proportion to steps_per_epoch
    train_samples: int | None = None    # None: all 50,000
    batch_size: int = BATCH_SIZE
    data: str | None = None
    seed: int = 0
    ddp: bool = False

    def train_steps(self, train_samples: int) -> int:
        """Steps one epoch takes over ``train_samples`` (1,329 for 42,500 at batch 32)."""
        full = math.ceil(train_samples / self.batch_size)
        return full if self.steps_per_epoch is None else min(full, self.steps_per_epoch)

    def validation_steps(self, train_samples: int, val_samples: int) -> int:
        """Validation batches per epoch. By default in the proportion of the full run
        (0.15 : 0.85 of the data), so a shortened epoch keeps its train/validate balance."""
        full = math.ceil(val_samples / self.batch_size)
        if self.val_steps is not None:
            return min(full, self.val_steps)
        if self.steps_per_epoch is None:
            return full
        share = VALIDATION_SPLIT / (1.0 - VALIDATION_SPLIT)
        return min(full, max(1, round(self.train_steps(train_samples) * share)))
