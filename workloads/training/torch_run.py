"""The PyTorch side: the source's networks built layer for layer, the device choice, and a
training loop that reports its phases, metrics and step times (optionally data parallel)."""

from __future__ import annotations

import math
import os
import time
from typing import Any
from collections.abc import Callable

import numpy as np

from devicewatch import events

from .config import DeviceError, TrainingConfig, UsageError
from .data import CLASSES, Dataset
from .steptimes import StepTimes

HE_NORMAL_TRUNCATION = 0.87962566103423978  # Keras divides the std by this for a ±2σ truncated normal


def build_model(name: str):
    """``cnn``: the source's CIFAR-100 network (975,692 parameters); ``dense``: Dense layers only.

    Keras' valid padding, so the feature map before global pooling is 256 × 9 × 9. The final
    softmax is folded into the loss (cross-entropy on logits is categorical cross-entropy on
    softmax outputs, computed stably); ``predict`` applies it."""
    import torch.nn as nn

    if name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(3, 128, kernel_size=7), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(128, 256, kernel_size=3), nn.ReLU(),
            nn.Conv2d(256, 256, kernel_size=3), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(256, 200), nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(200, CLASSES),
        )
    elif name == "dense":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * 32 * 3, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, CLASSES),
        )
    else:
        raise UsageError(f"unknown model {name!r}")
    _keras_initialization(model)
    return model


def _keras_initialization(model) -> None:
    """he_normal kernels for the hidden layers, glorot_uniform for the output, zero biases,
    as the source's Keras model starts."""
    import torch.nn as nn

    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    for index, layer in enumerate(layers):
        if index == len(layers) - 1:
            nn.init.xavier_uniform_(layer.weight)
        else:
            fan_in = layer.weight[0].numel()
            std = math.sqrt(2.0 / fan_in) / HE_NORMAL_TRUNCATION
            nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std)
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)


def count_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def choose_device(config: TrainingConfig):
    """The device to train on, by the method asked for.

    ``env`` (CUDA_VISIBLE_DEVICES="" was set before torch was imported) and ``override``
    (``torch.cuda.is_available`` replaced) both leave the usual "cuda if available" choice in
    place and make it find no GPU; ``device`` names ``torch.device("cpu")`` explicitly."""
    import torch

    if config.device == "cpu":
        if config.cpu_method == "override":
            torch.cuda.is_available = lambda: False
        if config.cpu_method == "device":
            return torch.device("cpu")
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if config.device == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError("--device cuda: no CUDA GPU is available to torch on this machine")
        return torch.device("cuda")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Distributed:
    """Rank, world size and helpers of a torchrun launch (a single process when not launched)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.rank = int(os.environ.get("RANK", 0)) if enabled else 0
        self.world = int(os.environ.get("WORLD_SIZE", 1)) if enabled else 1
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0)) if enabled else 0
        self.backend: str | None = None

    @property
    def lane(self) -> str:
        return f"rank{self.rank}" if self.enabled else "main"

    @property
    def reports(self) -> bool:
        return self.rank == 0

    def start(self, device) -> Any:
        """Join the process group (NCCL on GPUs, gloo on the CPU); returns this rank's device."""
        if not self.enabled:
            return device
        import torch
        import torch.distributed as dist

        if device.type == "cuda":
            torch.cuda.set_device(self.local_rank)
            device = torch.device("cuda", self.local_rank)
            self.backend = "nccl"
        else:
            self.backend = "gloo"
        dist.init_process_group(backend=self.backend)
        return device

    def sum(self, values: list[float], device) -> list[float]:
        if not self.enabled:
            return values
        import torch
        import torch.distributed as dist

        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def stop(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            if dist.is_initialized():
                # Every rank reaches the end before any tears its connections down: a rank that
                # destroys its group first can close a socket its peer's gloo thread still
                # reads, and the peer aborts (SIGABRT) after training ended well.
                dist.barrier()
                dist.destroy_process_group()


def _batch(images_nchw: np.ndarray, labels: np.ndarray, index: np.ndarray, device):
    """One batch on ``device``: uint8 crosses to the device, then becomes pixel / 255 there."""
    import torch

    non_blocking = device.type == "cuda"
    x = torch.from_numpy(images_nchw[index]).to(device, non_blocking=non_blocking)
    y = torch.from_numpy(labels[index]).to(device, non_blocking=non_blocking)
    return x.float().div_(255.0), y


def train_epoch(model, optimizer, x, y, order: np.ndarray, steps: int, batch_size: int, device,
                timer: StepTimes) -> tuple[float, float, int]:
    """``steps`` optimizer steps over ``order``; returns (loss sum, correct, samples)."""
    import torch
    import torch.nn.functional as F

    model.train()
    synchronize = device.type == "cuda"
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    seen = 0
    for step in range(steps):
        index = order[step * batch_size:(step + 1) * batch_size]
        timer.start()
        xb, yb = _batch(x, y, index, device)
        optimizer.zero_grad(set_to_none=True)
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        loss.backward()
        optimizer.step()
        loss_sum += loss.detach() * len(index)
        correct += (logits.argmax(dim=1) == yb).sum()
        if synchronize:  # a step's time is its GPU work, not just its launch
            torch.cuda.synchronize(device)
        timer.stop()
        seen += len(index)
    return float(loss_sum), float(correct), seen


def evaluate(model, x, y, order: np.ndarray, steps: int, batch_size: int, device) -> tuple[float, float, int]:
    """Loss sum, correct and samples over ``steps`` batches, without gradients."""
    import torch
    import torch.nn.functional as F

    model.eval()
    loss_sum, correct, seen = 0.0, 0.0, 0
    with torch.no_grad():
        for step in range(steps):
            index = order[step * batch_size:(step + 1) * batch_size]
            if len(index) == 0:
                break
            xb, yb = _batch(x, y, index, device)
            logits = model(xb)
            loss_sum += float(F.cross_entropy(logits, yb, reduction="sum"))
            correct += float((logits.argmax(dim=1) == yb).sum())
            seen += len(index)
    return loss_sum, correct, seen


def run(config: TrainingConfig, load_dataset: Callable[[], Dataset], log=print) -> list[dict[str, float]]:
    """Train as configured, emitting devicewatch events; returns each epoch's metrics.
    The device is settled before the data is loaded, so a missing GPU is reported at once."""
    dist = Distributed(config.ddp)
    device = dist.start(choose_device(config))
    try:
        return _train(config, load_dataset(), device, dist, log)
    finally:
        dist.stop()


def _train(config: TrainingConfig, dataset: Dataset, device, dist: Distributed, log) -> list[dict[str, float]]:
    import torch

    torch.manual_seed(config.seed)
    model = build_model(config.model).to(device)
    params = count_params(model)
    trained = model
    if dist.enabled:
        from torch.nn.parallel import DistributedDataParallel

        trained = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    # Keras' Adam: learning rate 0.001, epsilon 1e-7.
    optimizer = torch.optim.Adam(trained.parameters(), lr=1e-3, eps=1e-7)

    # Channel-first once, so every batch is a contiguous slice for the convolutions.
    x_train = np.ascontiguousarray(dataset.x_train.transpose(0, 3, 1, 2))
    x_val = np.ascontiguousarray(dataset.x_val.transpose(0, 3, 1, 2))
    per_rank = len(x_train) // dist.world   # every rank takes the same number of steps
    steps = config.train_steps(per_rank)
    val_steps = config.validation_steps(per_rank, len(x_val) // dist.world)
    if dist.reports:
        events.run_info(
            framework="torch", backend=None, model=config.model, device=str(device),
            device_asked=config.device, cpu_method=config.cpu_method if config.device == "cpu" else None,
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            params=params, data=dataset.source, data_origin=dataset.origin,
            train_samples=len(x_train), val_samples=len(x_val), batch_size=config.batch_size,
            epochs=config.epochs, steps_per_epoch=steps, val_steps=val_steps,
            threads=torch.get_num_threads(), ddp=dist.enabled, world_size=dist.world,
            dist_backend=dist.backend)
        log(f"training: torch {config.model} on {device}, {params:,} parameters, "
            f"{dataset.source} data, batch {config.batch_size}, {steps} steps/epoch"
            + (f" on each of {dist.world} ranks ({dist.backend})" if dist.enabled else ""))

    history = []
    for epoch in range(1, config.epochs + 1):
        rng = np.random.default_rng(config.seed + epoch)   # the same permutation on every rank
        order = rng.permutation(len(x_train))[dist.rank::dist.world]
        val_order = np.arange(len(x_val))[dist.rank::dist.world]
        timer = StepTimes()
        began = time.perf_counter()
        with events.phase("train", epoch=epoch, lane=dist.lane):
            loss_sum, correct, seen = train_epoch(trained, optimizer, x_train, dataset.y_train, order,
                                                  steps, config.batch_size, device, timer)
        train_seconds = time.perf_counter() - began
        with events.phase("validate", epoch=epoch, lane=dist.lane):
            val_loss_sum, val_correct, val_seen = evaluate(model, x_val, dataset.y_val, val_order,
                                                           val_steps, config.batch_size, device)
        totals = dist.sum([loss_sum, correct, seen, val_loss_sum, val_correct, val_seen], device)
        loss_sum, correct, seen, val_loss_sum, val_correct, val_seen = totals  # type: ignore[assignment]  # counts summed as floats across ranks
        metrics = {
            "loss": round(loss_sum / seen, 4),
            "accuracy": round(correct / seen, 4),
            "val_loss": round(val_loss_sum / val_seen, 4),
            "val_accuracy": round(val_correct / val_seen, 4),
            **timer.summary(),
            "train_s": round(train_seconds, 3),
        }
        history.append(metrics)
        if dist.reports:
            events.epoch_metrics(epoch, **metrics)
            log(epoch_line(epoch, config.epochs, metrics, train_seconds))
    return history


def epoch_line(epoch: int, epochs: int, metrics: dict[str, float], seconds: float) -> str:
    """The figures of one epoch, laid out as Keras prints them (but on one line: a bare
    ``Epoch 3/20`` line is what devicewatch reads from scripts that send no events)."""
    return (f"epoch {epoch}/{epochs}: {metrics['steps']}/{metrics['steps']} - {seconds:.0f}s"
            f" - {metrics['step_ms_mean']:.0f}ms/step"
            f" (p95 {metrics['step_ms_p95']:.0f}ms) - accuracy: {metrics['accuracy']:.4f}"
            f" - loss: {metrics['loss']:.4f} - val_accuracy: {metrics['val_accuracy']:.4f}"
            f" - val_loss: {metrics['val_loss']:.4f}")
