"""The CIFAR-100 training set, or synthetic data of the same shape that a network can learn.

Images are kept as uint8 NHWC (50,000 × 32 × 32 × 3 is 150 MB, a quarter of the float32 copy)
and turned into ``pixel / 255`` floats one batch at a time, so a short demo never pays for
converting the whole set. Labels are class indices; the loss takes them as the one-hot targets
of categorical cross-entropy.
"""

from __future__ import annotations

import os
import pickle
import tarfile
from dataclasses import dataclass

import numpy as np

from .config import VALIDATION_SPLIT

TRAIN_SAMPLES = 50_000
IMAGE_SHAPE = (32, 32, 3)
CLASSES = 100
ARCHIVE_NAME = "cifar-100-python.tar.gz"
FOLDER_NAME = "cifar-100-python"


class DataError(Exception):
    """The data cannot be read; the message is one line for the user."""


@dataclass
class Dataset:
    """Training and validation images (uint8 NHWC) and labels (int64), and where they came from."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    source: str          # "real" or "synthetic"
    origin: str          # the file or folder read, or how the synthetic set was made


def keras_cache_candidates() -> list[str]:
    """Where ``keras.datasets.cifar100.load_data()`` leaves its download."""
    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    datasets = os.path.join(base, "datasets")
    return [os.path.join(datasets, FOLDER_NAME), os.path.join(datasets, ARCHIVE_NAME)]


def _decode_batch(raw: dict) -> tuple[np.ndarray, np.ndarray]:
    try:
        data = np.asarray(raw[b"data"], dtype=np.uint8)
        labels = np.asarray(raw[b"fine_labels"], dtype=np.int64)
    except KeyError as exc:
        raise DataError(f"not a CIFAR-100 python batch: no {exc.args[0]!r} entry") from None
    if data.ndim != 2 or data.shape[1] != 32 * 32 * 3 or len(labels) != len(data):
        raise DataError(f"not a CIFAR-100 python batch: data of shape {data.shape}")
    # Rows are 3,072 bytes: the red plane, then green, then blue (channel-first).
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def read_cifar100_train(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The training batch from the python-version archive or its extracted folder."""
    try:
        if os.path.isdir(path):
            inner = os.path.join(path, FOLDER_NAME)
            folder = inner if os.path.isdir(inner) else path
            with open(os.path.join(folder, "train"), "rb") as handle:
                raw = pickle.load(handle, encoding="bytes")
        else:
            with tarfile.open(path, "r:*") as archive:
                member = archive.extractfile(f"{FOLDER_NAME}/train")
                if member is None:
                    raise DataError(f"{path}: {FOLDER_NAME}/train is not a file")
                raw = pickle.load(member, encoding="bytes")
    except FileNotFoundError as exc:
        raise DataError(f"{exc.filename or path}: no such file") from None
    except KeyError:
        raise DataError(f"{path}: no {FOLDER_NAME}/train inside; expected the python-version archive") from None
    except (tarfile.TarError, pickle.UnpicklingError, EOFError, OSError) as exc:
        raise DataError(f"{path}: cannot read CIFAR-100 ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: not a CIFAR-100 python batch")
    return _decode_batch(raw)


def synthetic_cifar(samples: int = TRAIN_SAMPLES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Images a small network can classify: each class has its own colour and stripe pattern,
    drawn under heavy per-pixel noise, so accuracy rises above chance in a few hundred steps
    without being trivial."""
    rng = np.random.default_rng(seed)
    rows = np.arange(32, dtype=np.float32)[:, None]
    cols = np.arange(32, dtype=np.float32)[None, :]
    templates = np.empty((CLASSES, 32, 32, 3), dtype=np.float32)
    colours = rng.uniform(40, 215, size=(CLASSES, 3)).astype(np.float32)
    for label in range(CLASSES):
        angle = np.pi * (label % 10) / 10
        frequency = 0.25 + 0.12 * (label // 10)
        stripes = np.sin(frequency * (np.cos(angle) * rows + np.sin(angle) * cols))
        templates[label] = colours[label] + 40.0 * stripes[:, :, None]
    labels = rng.integers(0, CLASSES, size=samples)
    images = np.empty((samples, 32, 32, 3), dtype=np.uint8)
    chunk = 5_000  # bounds the float32 scratch to ~60 MB
    for start in range(0, samples, chunk):
        stop = min(start + chunk, samples)
        noise = rng.normal(0.0, 50.0, size=(stop - start, 32, 32, 3)).astype(np.float32)
        np.clip(templates[labels[start:stop]] + noise, 0, 255, out=noise)
        images[start:stop] = noise.astype(np.uint8)
    return images, labels.astype(np.int64)


def split_validation(x: np.ndarray, y: np.ndarray, fraction: float = VALIDATION_SPLIT):
    """The last ``fraction`` of the samples, unshuffled, as Keras' ``validation_split`` takes it."""
    train = int(len(x) * (1.0 - fraction))
    return x[:train], y[:train], x[train:], y[train:]


def load(data_path: str | None, train_samples: int | None, seed: int = 0) -> Dataset:
    """CIFAR-100 from ``data_path`` or the Keras cache, else synthetic data of the same shape."""
    source, origin = "synthetic", "synthetic: per-class colour and stripes under noise"
    if data_path is not None:
        x, y = read_cifar100_train(data_path)
        source, origin = "real", data_path
    else:
        cached = next((p for p in keras_cache_candidates() if os.path.exists(p)), None)
        if cached is not None:
            x, y = read_cifar100_train(cached)
            source, origin = "real", cached
        else:
            x, y = synthetic_cifar(train_samples or TRAIN_SAMPLES, seed)
    if train_samples is not None:
        x, y = x[:train_samples], y[:train_samples]
    x_train, y_train, x_val, y_val = split_validation(x, y)
    if len(x_train) == 0 or len(x_val) == 0:
        raise DataError(f"{len(x)} samples leave nothing to train or validate on; use at least 7")
    return Dataset(x_train, y_train, x_val, y_val, source, origin)


def to_float(images: np.ndarray) -> np.ndarray:
    """``pixel / 255`` as the source does, one batch at a time."""
    return images.astype(np.float32) / np.float32(255.0)
