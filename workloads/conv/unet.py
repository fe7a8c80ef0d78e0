"""U-Net inference with a pluggable convolution and a per-operation time breakdown.

The classic four-level U-Net (Ronneberger et al., 2015): an encoder of four levels, each two
3×3 convolutions + ReLU then a 2×2 max pool; a bottleneck of two 3×3 convolutions; a decoder
of four levels, each a 2×2 stride-2 transposed convolution (the "up-conv"), concatenation with
the encoder's feature map of the same level, and two 3×3 convolutions + ReLU; a final 1×1
convolution to the classes. Channel widths are ``width``·(1, 2, 4, 8, 16) (the paper's 64
gives 64…1024). Convolutions use padding 1 ("same") and no bias, so the output has the
input's size; odd sizes (191 columns) are floored by pooling and the up-conv's output is
zero-padded back to the skip connection's size.

Tensors are torch tensors (NCHW logical shape) so that the same forward runs on the CPU and
on a GPU; only the 3×3 and 1×1 convolutions go through the method under test. Pooling,
up-conv, concatenation and ReLU are the same torch operations for every method.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any
from collections.abc import Callable, Iterator

OPS = ("conv", "pool", "upsample", "concat", "activation")
LEVELS = 4


class OpTimer:
    """Seconds spent per operation kind; ``sync`` waits for a device before reading the clock."""

    def __init__(self, sync: Callable[[], None] = lambda: None) -> None:
        self.sync = sync
        self.seconds = dict.fromkeys(OPS, 0.0)

    @contextmanager
    def op(self, kind: str) -> Iterator[None]:
        self.sync()
        started = time.perf_counter()
        try:
            yield
        finally:
            self.sync()
            self.seconds[kind] += time.perf_counter() - started


def conv_shapes(width: int, in_channels: int = 3, classes: int = 2) -> list[tuple[int, int, int]]:
    """(out, in, kernel) of every convolution, in forward order."""
    shapes = []
    c = in_channels
    for level in range(LEVELS + 1):  # encoder levels, then the bottleneck
        out = width * 2 ** level
        shapes += [(out, c, 3), (out, out, 3)]
        c = out
    for level in reversed(range(LEVELS)):
        out = width * 2 ** level
        shapes += [(out, 2 * out, 3), (out, out, 3)]
    shapes.append((classes, width, 1))
    return shapes


def make_weights(width: int, seed: int = 0, in_channels: int = 3, classes: int = 2) -> dict[str, list[Any]]:
    """He-initialised float32 weights: "conv" (K, C, KH, KW) and "up" (C_in, C_out, 2, 2)."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def he(shape: tuple[int, ...], fan_in: int) -> Any:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    conv = [he((k, c, s, s), c * s * s) for k, c, s in conv_shapes(width, in_channels, classes)]
    up = [he((width * 2 ** (level + 1), width * 2 ** level, 2, 2), width * 2 ** (level + 1))
          for level in reversed(range(LEVELS))]
    return {"conv": conv, "up": up}


def conv_flops(width: int, height: int, cols: int, in_channels: int = 3, classes: int = 2) -> int:
    """Floating-point operations of the convolutions (not the up-convs) for one image."""
    total, h, w = 0, height, cols
    shapes = conv_shapes(width, in_channels, classes)
    sizes = []
    for level in range(LEVELS + 1):
        sizes += [(h, w), (h, w)]
        if level < LEVELS:
            h, w = h // 2, w // 2
    encoder_sizes = sizes[0:2 * LEVELS:2]
    for level in reversed(range(LEVELS)):
        sizes += [encoder_sizes[level]] * 2
    sizes.append(encoder_sizes[0])
    for (k, c, s), (h, w) in zip(shapes, sizes):
        total += 2 * k * c * s * s * h * w
    return total


def forward(x: Any, conv: Callable[[Any, int], Any], up: list[Any], timer: OpTimer) -> Any:
    """One U-Net pass. ``conv(x, i)`` runs the i-th convolution (stride 1, padding k//2)."""
    import torch
    import torch.nn.functional as F

    index = 0

    def conv_relu(t: Any) -> Any:
        nonlocal index
        with timer.op("conv"):
            t = conv(t, index)
        index += 1
        with timer.op("activation"):
            return torch.relu_(t)

    skips = []
    for _level in range(LEVELS):
        x = conv_relu(conv_relu(x))
        skips.append(x)
        with timer.op("pool"):
            x = F.max_pool2d(x, 2)
    x = conv_relu(conv_relu(x))
    for step, skip in enumerate(reversed(skips)):
        with timer.op("upsample"):
            x = F.conv_transpose2d(x, up[step], stride=2)
            dh, dw = skip.shape[2] - x.shape[2], skip.shape[3] - x.shape[3]
            if dh or dw:
                x = F.pad(x, (0, dw, 0, dh))
        with timer.op("concat"):
            x = torch.cat([skip, x], dim=1)
        x = conv_relu(conv_relu(x))
    with timer.op("conv"):
        x = conv(x, index)
    return x


def cpu_conv(method: Any, weights: list[Any]) -> Callable[[Any, int], Any]:
    """A ``conv(x, i)`` for a CPU method, on torch tensors that share memory with NumPy."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    if method.name == "torch":
        tensors = [torch.from_numpy(w) for w in weights]
        return lambda x, i: F.conv2d(x, tensors[i], padding=tensors[i].shape[2] // 2)
    prepared = [method.prepare(w) for w in weights]
    shapes = [(w.shape[0], w.shape[2], w.shape[3]) for w in weights]

    def conv(x: Any, i: int) -> Any:
        k = shapes[i][1]
        if method.layout == "nhwc":
            nhwc = np.ascontiguousarray(x.permute(0, 2, 3, 1).numpy())  # no copy if channels-last
            y = method.run(nhwc, prepared[i], shapes[i], 1, k // 2)
            return torch.from_numpy(y).permute(0, 3, 1, 2)
        nchw = np.ascontiguousarray(x.numpy())
        return torch.from_numpy(method.run(nchw, prepared[i], shapes[i], 1, k // 2))

    return conv


def input_tensor(method_layout: str, batch: int, height: int, width: int, seed: int = 1) -> Any:
    """A random image batch; channels-last storage for NHWC methods so no layer copies it."""
    import numpy as np
    import torch

    x = torch.from_numpy(np.random.default_rng(seed).random((batch, 3, height, width), dtype=np.float32))
    return x.contiguous(memory_format=torch.channels_last) if method_layout == "nhwc" else x
