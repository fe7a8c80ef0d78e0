"""The data path: MNIST from an .npz file or synthetic digits, and the NumPy preprocessing.

Synthetic digits are seven-segment glyphs drawn with random position, size, slant, stroke
width and segment jitter, plus pixel noise: learnable (a CNN gets well above the 10% of
chance) yet not trivial. Preprocessing does per-sample work as real pipelines do:
scale to [0, 1], a random shift of up to two pixels (pad and crop), Gaussian pixel noise,
and normalization. Validation data is only scaled and normalized, so it is deterministic.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

IMAGE_SIDE = 28
CLASSES = 10
SHIFT = 2            # random shift of up to SHIFT pixels in each direction
NOISE_STD = 0.08     # Gaussian pixel noise added during training, on the [0, 1] scale
MEAN, STD = 0.1307, 0.3081  # the usual MNIST normalization

# Seven segments in a unit box (x right, y down): a top, b upper right, c lower right,
# d bottom, e lower left, f upper left, g middle.
_SEGMENTS = np.array([
    [(0, 0), (1, 0)], [(1, 0), (1, .5)], [(1, .5), (1, 1)], [(0, 1), (1, 1)],
    [(0, .5), (0, 1)], [(0, 0), (0, .5)], [(0, .5), (1, .5)],
], dtype=np.float32)
_DIGIT_SEGMENTS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]
_ACTIVE = np.array([[ch in segs for ch in "abcdefg"] for segs in _DIGIT_SEGMENTS])


class DataError(Exception):
    """A data file that cannot be used; the message is one line for the user."""


@dataclass
class Dataset:
    x_train: np.ndarray  # uint8 (N, 28, 28)
    y_train: np.ndarray  # int64 (N,)
    x_val: np.ndarray
    y_val: np.ndarray
    source: str          # "real" or "synthetic"


def render_digits(labels: np.ndarray, rng: np.random.Generator, chunk: int = 4096) -> np.ndarray:
    """Draw one glyph per label as uint8 28x28 images."""
    ys, xs = np.mgrid[0:IMAGE_SIDE, 0:IMAGE_SIDE].astype(np.float32)
    out = np.empty((len(labels), IMAGE_SIDE, IMAGE_SIDE), dtype=np.uint8)
    for start in range(0, len(labels), chunk):
        lab = labels[start:start + chunk]
        n = len(lab)
        height = rng.uniform(14, 20, n).astype(np.float32)
        width = height * rng.uniform(0.45, 0.7, n).astype(np.float32)
        slant = rng.uniform(-0.25, 0.25, n).astype(np.float32)
        cx = 14 + rng.uniform(-3, 3, n).astype(np.float32)
        cy = 14 + rng.uniform(-3, 3, n).astype(np.float32)
        stroke = rng.uniform(0.7, 1.4, n).astype(np.float32)
        ends = _SEGMENTS[None] + rng.normal(0, 0.06, (n, 7, 2, 2)).astype(np.float32)
        ux, uy = ends[..., 0] - 0.5, ends[..., 1] - 0.5  # (n, 7, 2)
        px = cx[:, None, None] + ux * width[:, None, None] + uy * height[:, None, None] * slant[:, None, None]
        py = cy[:, None, None] + uy * height[:, None, None]
        ax, ay = px[..., 0], py[..., 0]  # (n, 7)
        vx, vy = px[..., 1] - ax, py[..., 1] - ay
        inv_len2 = 1.0 / np.maximum(vx * vx + vy * vy, 1e-6)
        best = np.full((n, xs.size), np.inf, dtype=np.float32)
        active = _ACTIVE[lab]  # (n, 7)
        for seg in range(7):
            apx = xs.ravel()[None] - ax[:, seg, None]  # (n, 784)
            apy = ys.ravel()[None] - ay[:, seg, None]
            t = np.clip((apx * vx[:, seg, None] + apy * vy[:, seg, None]) * inv_len2[:, seg, None], 0, 1)
            apx -= t * vx[:, seg, None]
            apy -= t * vy[:, seg, None]
            dist2 = apx * apx + apy * apy
            dist2[~active[:, seg]] = np.inf
            np.minimum(best, dist2, out=best)
        ink = np.clip(0.5 + stroke[:, None] - np.sqrt(best), 0, 1)
        ink += rng.normal(0, 0.05, ink.shape).astype(np.float32)
        out[start:start + n] = (np.clip(ink, 0, 1) * 255).astype(np.uint8).reshape(n, IMAGE_SIDE, IMAGE_SIDE)
    return out


def synthetic(train_samples: int, val_samples: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    y_train = rng.integers(0, CLASSES, train_samples)
    y_val = rng.integers(0, CLASSES, val_samples)
    return Dataset(render_digits(y_train, rng), y_train, render_digits(y_val, rng), y_val, "synthetic")


def load_npz(path: str, train_samples: int | None, val_samples: int | None) -> Dataset:
    """MNIST in the Keras layout: x_train, y_train, x_test, y_test (uint8 28x28 images)."""
    try:
        with np.load(path) as archive:
            missing = [k for k in ("x_train", "y_train", "x_test", "y_test") if k not in archive.files]
            if missing:
                raise DataError(f"{path} lacks {', '.join(missing)} (needs x_train, y_train, x_test, y_test)")
            arrays = {k: archive[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    for key in ("x_train", "x_test"):
        if arrays[key].ndim != 3 or arrays[key].shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
            raise DataError(f"{path}: {key} has shape {arrays[key].shape}, expected (N, 28, 28)")
    xt, yt = arrays["x_train"][:train_samples], arrays["y_train"][:train_samples].astype(np.int64)
    xv, yv = arrays["x_test"][:val_samples], arrays["y_test"][:val_samples].astype(np.int64)
    return Dataset(np.ascontiguousarray(xt, dtype=np.uint8), yt,
                   np.ascontiguousarray(xv, dtype=np.uint8), yv, "real")


def inflate(data: Dataset, gigabytes: float) -> Dataset:
    """Replicate the training set until it holds about ``gigabytes`` of raw pixels."""
    per_sample = IMAGE_SIDE * IMAGE_SIDE
    target = int(gigabytes * 1e9 // per_sample)
    if target <= len(data.x_train):
        return data
    reps = -(-target // len(data.x_train))
    x = np.concatenate([data.x_train] * reps)[:target]
    y = np.concatenate([data.y_train] * reps)[:target]
    return Dataset(x, y, data.x_val, data.y_val, data.source)


_ROWS = np.arange(IMAGE_SIDE)


def preprocess_train(raw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """uint8 (n, 28, 28) -> float32 (n, 28, 28): scale, random shift, noise, normalize."""
    n = len(raw)
    padded = np.zeros((n, IMAGE_SIDE + 2 * SHIFT, IMAGE_SIDE + 2 * SHIFT), dtype=np.float32)
    np.multiply(raw, np.float32(1 / 255), out=padded[:, SHIFT:-SHIFT, SHIFT:-SHIFT], casting="unsafe")
    oy = rng.integers(0, 2 * SHIFT + 1, n)
    ox = rng.integers(0, 2 * SHIFT + 1, n)
    x = padded[np.arange(n)[:, None, None], (oy[:, None] + _ROWS)[:, :, None], (ox[:, None] + _ROWS)[:, None, :]]
    x += rng.standard_normal(x.shape, dtype=np.float32) * np.float32(NOISE_STD)
    np.clip(x, 0, 1, out=x)
    x -= np.float32(MEAN)
    x *= np.float32(1 / STD)
    return x


def preprocess_eval(raw: np.ndarray) -> np.ndarray:
    """uint8 (n, 28, 28) -> float32 (n, 28, 28): scale and normalize, nothing random."""
    x = raw.astype(np.float32) * np.float32(1 / 255)
    x -= np.float32(MEAN)
    x *= np.float32(1 / STD)
    return x


def shards(n: int, parts: int) -> list[slice]:
    """Split range(n) into ``parts`` contiguous shards whose sizes differ by at most one."""
    bounds = np.linspace(0, n, parts + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
