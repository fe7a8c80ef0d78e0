"""The MNIST CNN in PyTorch, its training step, its validation replicas and their copy."""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Iterable

import numpy as np


class TorchModel:
    """Conv(16,3x3) -> pool -> Conv(32,3x3) -> pool -> Dense(64) -> Dense(10); Adam, cross-entropy."""

    framework = "torch"

    def __init__(self, seed: int, intra_threads: int, device: str = "cpu") -> None:
        import torch
        from torch import nn

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        elif device == "cuda" and not torch.cuda.is_available():
            raise ImportError("--device cuda: this torch sees no CUDA device")
        self.device_name = device
        self.device = torch.device(device)

        if intra_threads:
            torch.set_num_threads(intra_threads)
        torch.manual_seed(seed)
        self.torch = torch
        self.model = nn.Sequential(
            nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 10),
        ).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.params = sum(p.numel() for p in self.model.parameters())
        self.intra_threads = torch.get_num_threads()

    def thread_setup(self) -> None:
        """Run in each validation thread before its first operator: the training thread's
        number of operator threads. ``torch.set_num_threads`` sets OpenMP's number for the
        thread that calls it only; a thread of the validation pool otherwise starts with
        OpenMP's default, one per core, and its convolutions and matrix products (oneDNN and
        MKL, which start OpenMP teams themselves) each run on a team of that many: two
        validation threads beside training ran five threads on two cores, more than
        ``--intra-threads`` asks for and a parallelism ``serial`` does not get."""
        self.torch.set_num_threads(self.intra_threads)

    def as_batch(self, x: Any, y: Any) -> tuple[Any, Any]:
        torch = self.torch
        x = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
        y = torch.from_numpy(y) if isinstance(y, np.ndarray) else y
        return x.to(self.device).reshape(-1, 1, 28, 28), y.to(self.device)

    def train_step(self, x: Any, y: Any) -> tuple[float, int]:
        """One optimizer step; returns the batch's summed loss and correct count."""
        import torch.nn.functional as F

        x, y = self.as_batch(x, y)
        self.model.train()
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach()) * len(y), int((logits.argmax(1) == y).sum())

    def live(self) -> Any:
        """The training model itself, for the variants that validate after training."""
        return self.model

    def make_replica(self) -> Any:
        replica = copy.deepcopy(self.model).eval()
        for p in replica.parameters():
            p.requires_grad_(False)
        return replica

    def copy_into(self, replica: Any) -> None:
        """The model copy: the training model's current weights into a validation replica."""
        with self.torch.no_grad():
            for dst, src in zip(replica.state_dict().values(), self.model.state_dict().values()):
                dst.copy_(src)

    def snapshot(self) -> dict[str, Any]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def replica_from(self, weights: dict[str, Any]) -> Any:
        replica = self.make_replica()
        replica.load_state_dict(weights)
        return replica

    def evaluate(self, replica: Any, batches: Iterable[tuple[Any, Any]]) -> tuple[float, int, int]:
        """Summed loss, correct count and sample count of ``replica`` over ``batches``."""
        import torch.nn.functional as F

        loss_sum, correct, count = 0.0, 0, 0
        with self.torch.inference_mode():
            for x, y in batches:
                x, y = self.as_batch(x, y)
                logits = replica(x)
                loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
                correct += int((logits.argmax(1) == y).sum())
                count += len(y)
        return loss_sum, correct, count
