"""The four ways to run an epoch's training and validation, all over the same model and data.

``serial`` and ``overlapped`` share one training path (the NumPy pipeline in the training
thread), so whatever ``overlapped`` gains over ``serial`` comes from running validation
beside training, nothing else. ``tfdata`` and ``dataloader`` are the frameworks' own parallel
input pipelines, still validating after training.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterator

import numpy as np

from devicewatch import events
from workloads.pipeline import data as datamod

TRAIN_LANE = "train"
SERIAL_VALIDATE_LANE = "validate"


class Stopped(Exception):
    """Raised inside worker threads once the run has been told to stop."""


@dataclass
class Settings:
    variant: str
    epochs: int
    threads: int
    batch: int
    chunk: int
    seed: int


@dataclass
class Outcome:
    """What a run measured. ``epochs`` holds one dict of metrics per finished epoch."""

    epochs: list[dict[str, Any]] = field(default_factory=list)
    total_s: float = 0.0
    train_lane_s: float = 0.0       # data preparation plus training, all epochs
    last_validate_s: float = 0.0    # the last epoch's validation, wall clock


class Reporter:
    """Collects per-epoch figures; emits and prints an epoch once its validation is in."""

    def __init__(self, epochs: int, outcome: Outcome, echo: Callable[[str], None]) -> None:
        self.total = epochs
        self.outcome = outcome
        self.echo = echo
        self.lock = threading.Lock()

    def finish_epoch(self, epoch: int, train: dict[str, Any], loss_sum: float, correct: int, count: int) -> None:
        metrics = dict(train)
        metrics["val_loss"] = round(loss_sum / count, 5)
        metrics["val_accuracy"] = round(correct / count, 5)
        with self.lock:
            events.epoch_metrics(epoch, **metrics)
            self.outcome.epochs.append({"epoch": epoch, **metrics})
            extra = ""
            if "copy_s" in metrics:
                extra = f" - copy {metrics['copy_s'] * 1000:.2f} ms ({metrics['copy_share_pct']:.3f}% of training)"
            self.echo(f"Epoch {epoch}/{self.total} - loss {metrics['loss']:.4f} - accuracy {metrics['accuracy']:.4f}"
                      f" - val_loss {metrics['val_loss']:.4f} - val_accuracy {metrics['val_accuracy']:.4f}"
                      f" - train {metrics['train_s']:.2f}s - validate {metrics['validate_s']:.2f}s{extra}")


def _eval_batches(x: np.ndarray, y: np.ndarray, batch: int, stop: threading.Event) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The NumPy validation pipeline: to tensor, batch; checks for a stop between batches."""
    for start in range(0, len(x), batch):
        if stop.is_set():
            raise Stopped
        yield datamod.preprocess_eval(x[start:start + batch]), y[start:start + batch]


def _train_numpy_epoch(model: Any, d: datamod.Dataset, s: Settings, epoch: int,
                       rng: np.random.Generator) -> dict[str, Any]:
    """The NumPy pipeline: load -> shuffle -> to tensor (augment) -> batch, then train, in this thread.

    The epoch's data is prepared chunk by chunk (one chunk covers MNIST whole) so that a
    1 GB training set never needs its float32 copy in memory at once."""
    order = rng.permutation(len(d.x_train))
    data_s = train_s = loss_sum = 0.0
    correct = 0
    for start in range(0, len(order), s.chunk):
        idx = order[start:start + s.chunk]
        began = time.perf_counter()
        with events.phase("data", epoch=epoch, lane=TRAIN_LANE):
            x = datamod.preprocess_train(d.x_train[idx], rng)
            y = d.y_train[idx]
        prepared = time.perf_counter()
        with events.phase("train", epoch=epoch, lane=TRAIN_LANE):
            for b in range(0, len(idx), s.batch):
                batch_loss, batch_correct = model.train_step(x[b:b + s.batch], y[b:b + s.batch])
                loss_sum += batch_loss
                correct += batch_correct
        data_s += prepared - began
        train_s += time.perf_counter() - prepared
    n = len(order)
    return {"loss": round(loss_sum / n, 5), "accuracy": round(correct / n, 5),
            "data_s": round(data_s, 4), "train_s": round(data_s + train_s, 4)}


def run_serial(model: Any, d: datamod.Dataset, s: Settings, reporter: Reporter, stop: threading.Event) -> None:
    rng = np.random.default_rng(s.seed + 1)
    outcome = reporter.outcome
    for epoch in range(1, s.epochs + 1):
        train = _train_numpy_epoch(model, d, s, epoch, rng)
        began = time.perf_counter()
        with events.phase("validate", epoch=epoch, lane=SERIAL_VALIDATE_LANE):
            result = model.evaluate(model.live(), _eval_batches(d.x_val, d.y_val, s.batch, stop))
        train["validate_s"] = round(time.perf_counter() - began, 4)
        outcome.train_lane_s += train["train_s"]
        outcome.last_validate_s = train["validate_s"]
        reporter.finish_epoch(epoch, train, *result)


def run_tfdata(model: Any, d: datamod.Dataset, s: Settings, reporter: Reporter, stop: threading.Event) -> None:
    """tf.data: shuffle indices, batch, augment batches on ``threads`` parallel calls, prefetch."""
    from workloads.pipeline import pipeline_tf

    train_ds, val_ds = pipeline_tf.datasets(d, s.batch, s.threads, s.seed)
    _train_then_validate(model, d, s, reporter, train_ds, val_ds)


def run_dataloader(model: Any, d: datamod.Dataset, s: Settings, reporter: Reporter, stop: threading.Event) -> None:
    """PyTorch DataLoader: ``threads`` worker processes prepare whole batches, two batches ahead each."""
    from workloads.pipeline import pipeline_torch

    train_loader, val_loader = pipeline_torch.loaders(d, s.batch, s.threads, s.seed)
    try:
        _train_then_validate(model, d, s, reporter, train_loader, val_loader)
    finally:
        pipeline_torch.close(train_loader, val_loader)


def _train_then_validate(model: Any, d: datamod.Dataset, s: Settings, reporter: Reporter,
                         train_batches: Any, val_batches: Any) -> None:
    """Each epoch trains on the framework's batches, then validates: tf.data and DataLoader alike."""
    outcome = reporter.outcome
    for epoch in range(1, s.epochs + 1):
        began = time.perf_counter()
        loss_sum, correct = 0.0, 0
        with events.phase("train", epoch=epoch, lane=TRAIN_LANE):
            for x, y in train_batches:
                batch_loss, batch_correct = model.train_step(x, y)
                loss_sum += batch_loss
                correct += batch_correct
        trained = time.perf_counter()
        with events.phase("validate", epoch=epoch, lane=SERIAL_VALIDATE_LANE):
            result = model.evaluate(model.live(), val_batches)
        n = len(d.x_train)
        train = {"loss": round(loss_sum / n, 5), "accuracy": round(correct / n, 5),
                 "train_s": round(trained - began, 4), "validate_s": round(time.perf_counter() - trained, 4)}
        outcome.train_lane_s += train["train_s"]
        outcome.last_validate_s = train["validate_s"]
        reporter.finish_epoch(epoch, train, *result)


class _EpochValidation:
    """One epoch's validation across the pool: shard results are summed when the last one lands."""

    def __init__(self, epoch: int, train: dict[str, Any], futures: list[Future], began: float,
                 reporter: Reporter) -> None:
        self.epoch, self.train, self.futures, self.began = epoch, train, futures, began
        self.reporter = reporter
        self.remaining = len(futures)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.elapsed = 0.0
        for future in futures:
            future.add_done_callback(self._one_done)

    def _one_done(self, _: Future) -> None:
        with self.lock:
            self.remaining -= 1
            if self.remaining:
                return
        self.elapsed = time.perf_counter() - self.began
        try:
            if all(not f.cancelled() and f.exception() is None for f in self.futures):
                parts = [f.result() for f in self.futures]
                self.train["validate_s"] = round(self.elapsed, 4)
                self.reporter.finish_epoch(self.epoch, self.train, sum(p[0] for p in parts),
                                           sum(p[1] for p in parts), sum(p[2] for p in parts))
        finally:
            self.finished.set()  # never leave the training thread waiting, whatever happened

    def wait(self) -> None:
        """Block until every shard is done; re-raise a shard's error in this thread."""
        self.finished.wait()
        for future in self.futures:
            error = None if future.cancelled() else future.exception()
            if error is not None:
                raise error


def run_overlapped(model: Any, d: datamod.Dataset, s: Settings, reporter: Reporter, stop: threading.Event,
                   on_copy: Callable[[int], None] | None = None) -> None:
    """The source's scheme: train in this thread; at each epoch's end copy the weights into one
    replica per validation thread, hand each thread an equal shard of the validation data,
    and go straight on with the next epoch. ``on_copy(epoch)`` runs right after the copy
    (tests take a snapshot there)."""
    rng = np.random.default_rng(s.seed + 1)
    outcome = reporter.outcome
    replicas = [model.make_replica() for _ in range(s.threads)]
    shard_slices = datamod.shards(len(d.x_val), s.threads)

    def validate_shard(index: int, epoch: int) -> tuple[float, int, int]:
        part = shard_slices[index]
        with events.phase("validate", epoch=epoch, lane=f"validate-{index}"):
            return model.evaluate(replicas[index], _eval_batches(d.x_val[part], d.y_val[part], s.batch, stop))

    pending: _EpochValidation | None = None
    # Each validation thread runs its operators on as many threads as the training thread does.
    pool = ThreadPoolExecutor(max_workers=s.threads, thread_name_prefix="validate", initializer=model.thread_setup)
    try:
        for epoch in range(1, s.epochs + 1):
            train = _train_numpy_epoch(model, d, s, epoch, rng)
            outcome.train_lane_s += train["train_s"]
            if pending is not None and not pending.finished.is_set():
                with events.phase("wait-validation", epoch=epoch, lane=TRAIN_LANE):
                    pending.wait()
            elif pending is not None:
                pending.wait()
            began = time.perf_counter()
            with events.phase("copy", epoch=epoch, lane=TRAIN_LANE):
                for replica in replicas:
                    model.copy_into(replica)
            copy_s = time.perf_counter() - began
            train["copy_s"] = round(copy_s, 6)
            train["copy_share_pct"] = round(100 * copy_s / train["train_s"], 4)
            if on_copy is not None:
                on_copy(epoch)
            futures = [pool.submit(validate_shard, i, epoch) for i in range(s.threads)]
            pending = _EpochValidation(epoch, train, futures, time.perf_counter(), reporter)
        if pending is not None:
            pending.wait()
            outcome.last_validate_s = pending.elapsed
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)


VARIANTS: dict[str, Callable[..., None]] = {
    "serial": run_serial, "tfdata": run_tfdata, "dataloader": run_dataloader, "overlapped": run_overlapped,
}
