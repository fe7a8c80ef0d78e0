"""The Keras 3 side: the source's model as its own code writes it, trained by ``model.fit`` with a
callback that turns Keras' epoch and test hooks into devicewatch phases and metrics.

KERAS_BACKEND (and CUDA_VISIBLE_DEVICES for ``--cpu-method env``) are set by the caller before
this module imports keras, since Keras fixes its backend, and the backend its devices, at import.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable

import numpy as np

from devicewatch import events

from .config import DeviceError, TrainingConfig
from .data import CLASSES, Dataset, to_float
from .steptimes import StepTimes


def import_keras(config: TrainingConfig):
    """keras, imported after ``--cpu-method override`` has patched torch if it asks for that."""
    if config.device == "cpu" and config.cpu_method == "override":
        import torch  # the torch backend asks torch.cuda.is_available() once, at keras' import

        torch.cuda.is_available = lambda: False
    import keras

    return keras


def gpu_available(backend: str) -> bool:
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    import torch

    return torch.cuda.is_available()


def build_model(keras, name: str):
    """The source's Sequential model verbatim (``cnn``), or Dense layers only (``dense``)."""
    from keras import Input, layers, models

    if name == "cnn":
        return models.Sequential([
            Input(shape=(32, 32, 3)),
            layers.Conv2D(128, kernel_size=(7, 7), activation="relu", kernel_initializer="he_normal"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(256, kernel_size=(3, 3), activation="relu", kernel_initializer="he_normal"),
            layers.Conv2D(256, kernel_size=(3, 3), activation="relu", kernel_initializer="he_normal"),
            layers.GlobalAveragePooling2D(),
            layers.Flatten(),
            layers.Dense(200, activation="relu", kernel_initializer="he_normal"),
            layers.Dropout(0.5),
            layers.Dense(CLASSES, activation="softmax"),
        ])
    return models.Sequential([
        Input(shape=(32, 32, 3)),
        layers.Flatten(),
        layers.Dense(256, activation="relu", kernel_initializer="he_normal"),
        layers.Dense(128, activation="relu", kernel_initializer="he_normal"),
        layers.Dense(CLASSES, activation="softmax"),
    ])


def batches(keras, images: np.ndarray, labels: np.ndarray, batch_size: int, steps: int, seed: int | None):
    """A ``PyDataset`` of ``steps`` batches of (pixel / 255, one-hot label); reshuffled each
    epoch when ``seed`` is given, as ``fit(shuffle=True)`` does, fixed order otherwise."""

    class Batches(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__()
            self.epoch = 0
            self.order = self._order()

        def _order(self) -> np.ndarray:
            if seed is None:
                return np.arange(len(images))
            return np.random.default_rng(seed + self.epoch + 1).permutation(len(images))

        def __len__(self) -> int:
            return steps

        def __getitem__(self, step: int):
            index = self.order[step * batch_size:(step + 1) * batch_size]
            return to_float(images[index]), np.eye(CLASSES, dtype=np.float32)[labels[index]]

        def on_epoch_end(self) -> None:
            self.epoch += 1
            self.order = self._order()

    return Batches()


def reporting_callback(keras, on_epoch: Callable[[int, dict], None]):
    """devicewatch's Keras callback (train and validate phases, epoch metrics), plus the step
    times from the batch hooks and the epoch's training seconds that this workload reports."""
    from devicewatch.integrations.keras import DevicewatchCallback

    class TimedCallback(DevicewatchCallback):
        def __init__(self) -> None:
            super().__init__()
            self.timer = StepTimes()
            self.began = 0.0
            self.train_seconds = 0.0

        def on_epoch_begin(self, epoch, logs=None):
            self.timer = StepTimes()
            self.began = time.perf_counter()
            super().on_epoch_begin(epoch, logs)

        def on_train_batch_begin(self, batch, logs=None):
            self.timer.start()

        def on_train_batch_end(self, batch, logs=None):
            self.timer.stop()

        def on_test_begin(self, logs=None):
            if self._training:  # validation inside fit(): training of this epoch is over
                self.train_seconds = time.perf_counter() - self.began
            super().on_test_begin(logs)

        def on_epoch_end(self, epoch, logs=None):
            if self._training:  # no validation this epoch
                self.train_seconds = time.perf_counter() - self.began
            super().on_epoch_end(epoch, logs)

        def epoch_metrics(self, logs):
            metrics = {name: round(float(logs[name]), 4)
                       for name in ("loss", "accuracy", "val_loss", "val_accuracy") if name in logs}
            metrics.update(self.timer.summary())
            metrics["train_s"] = round(self.train_seconds, 3)
            on_epoch(self._epoch, metrics)
            return metrics

    return TimedCallback()


def weight_device(model) -> str:
    """Where the first weight lives, as 'cpu' or 'cuda' (TensorFlow says '/…/device:GPU:0')."""
    value = model.weights[0].value
    name = str(getattr(value, "device", "cpu"))
    return "cuda" if ("cuda" in name or "GPU" in name) else "cpu"


def run(config: TrainingConfig, load_dataset: Callable[[], Dataset], log=print) -> list[dict[str, float]]:
    """Train with ``model.fit`` as the source does, reporting through the callback."""
    backend = config.backend or "torch"
    keras = import_keras(config)
    if config.device == "cuda" and not gpu_available(backend):
        raise DeviceError(f"--device cuda: no CUDA GPU is available to Keras ({backend} backend) on this machine")
    keras.utils.set_random_seed(config.seed)
    # --cpu-method device places the weights and every tensor on the CPU explicitly.
    placement = (keras.device("cpu") if config.device == "cpu" and config.cpu_method == "device"
                 else contextlib.nullcontext())
    dataset = load_dataset()
    with placement:
        model = build_model(keras, config.model)
        model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
        params = int(model.count_params())
        steps = config.train_steps(len(dataset.x_train))
        val_steps = config.validation_steps(len(dataset.x_train), len(dataset.x_val))
        device = weight_device(model)
        events.run_info(
            framework="keras", backend=backend, keras_version=keras.__version__, model=config.model,
            device=device, device_asked=config.device,
            cpu_method=config.cpu_method if config.device == "cpu" else None,
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            params=params, data=dataset.source, data_origin=dataset.origin,
            train_samples=len(dataset.x_train), val_samples=len(dataset.x_val),
            batch_size=config.batch_size, epochs=config.epochs, steps_per_epoch=steps,
            val_steps=val_steps, ddp=False, world_size=1)
        log(f"training: keras ({backend}) {config.model} on {device}, {params:,} parameters, "
            f"{dataset.source} data, batch {config.batch_size}, {steps} steps/epoch")
        history: list[dict[str, float]] = []
        callback = reporting_callback(keras, lambda epoch, metrics: history.append(metrics))
        train = batches(keras, dataset.x_train, dataset.y_train, config.batch_size, steps, config.seed)
        validate = batches(keras, dataset.x_val, dataset.y_val, config.batch_size, val_steps, None)
        model.fit(train, validation_data=validate, epochs=config.epochs, callbacks=[callback],
                  verbose=2)
        sys.stdout.flush()
    return history
