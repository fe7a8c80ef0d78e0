"""PyTorch's DataLoader pipeline: worker processes prepare whole batches with the NumPy code.

Each sampler item is a list of indices and the dataset returns the finished batch, so the
per-sample Python overhead of the default collate path never enters the measurement.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workloads.pipeline import data as datamod


class _TrainBatches:
    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y
        self.rng: np.random.Generator | None = None

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, indices: list[int]) -> tuple[Any, Any]:
        import torch

        if self.rng is None:  # one stream per worker, from torch's per-worker seed
            self.rng = np.random.default_rng(torch.initial_seed())
        idx = np.asarray(indices)
        return torch.from_numpy(datamod.preprocess_train(self.x[idx], self.rng)), torch.from_numpy(self.y[idx])


class _EvalBatches:
    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, indices: list[int]) -> tuple[Any, Any]:
        import torch

        idx = np.asarray(indices)
        return torch.from_numpy(datamod.preprocess_eval(self.x[idx])), torch.from_numpy(self.y[idx])


def loaders(d: datamod.Dataset, batch: int, workers: int, seed: int) -> tuple[Any, Any]:
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

    generator = torch.Generator().manual_seed(seed)
    common: dict[str, Any] = {"batch_size": None, "num_workers": workers, "prefetch_factor": 2, "persistent_workers": True}
    # The batch sets are map-style datasets by duck typing (__getitem__, __len__), not Dataset subclasses.
    train: DataLoader[Any] = DataLoader(_TrainBatches(d.x_train, d.y_train),  # type: ignore[arg-type]
                       sampler=BatchSampler(RandomSampler(range(len(d.x_train)), generator=generator), batch, False),
                       **common)
    val: DataLoader[Any] = DataLoader(_EvalBatches(d.x_val, d.y_val),  # type: ignore[arg-type]
                     sampler=BatchSampler(SequentialSampler(range(len(d.x_val))), batch, False), **common)
    return train, val


def close(*loaders: Any) -> None:
    """Stop persistent workers now rather than at garbage collection."""
    for loader in loaders:
        iterator = getattr(loader, "_iterator", None)
        if iterator is not None:
            iterator._shutdown_workers()
            loader._iterator = None
