"""Five ways to run one convolution layer on a CPU, all float32, batch-first.

Each method is a ``CpuMethod``: it owns a memory layout (``nchw`` or ``nhwc``), turns a
weight tensor of shape (K, C, KH, KW) into the form it computes with once (as a loaded model
would), and convolves an input already in its layout. A network therefore runs each method
in its own layout end to end: im2row keeps activations NHWC, the others NCHW.

- ``mcmk``: direct convolution, the six nested loops of the source (output channel, input
  channel, kernel row, kernel column, output row, output column), parallel over output
  channels with numba ``prange`` as OpenMP would. The innermost loop runs along a contiguous
  output row so the compiler can vectorise it; nothing is deliberately slowed down.
- ``im2col``: Darknet's layout: patches become the columns of a (C·KH·KW) × (OH·OW) matrix,
  then one GEMM with the (K) × (C·KH·KW) weights, on NumPy's BLAS.
- ``im2row``: the transpose: NHWC input, each output pixel's patch becomes one row of a
  (OH·OW) × (KH·KW·C) matrix, copied as contiguous runs of KW·C floats (the cache-friendlier
  gather), then one GEMM giving the NHWC output.

Both build the patch matrix with a numba-parallel copy (``patches.py``) straight from the
unpadded input into one float32 scratch buffer shared by all layers, and hand C-contiguous
float32 operands to ``np.matmul`` with ``out=``, so BLAS runs sgemm with no hidden copy and
the result is already in the method's layout (no transpose follows).
- ``tiled``: a cache-blocked direct convolution: a block of output channels shares each input
  row while it is in L1, and accumulates into a small output tile.
- ``torch``: ``torch.nn.functional.conv2d``, the reference (oneDNN on x86).

1×1 stride-1 unpadded layers need no patch matrix: both GEMM methods then multiply the
input directly, as Darknet does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

CPU_METHODS = ("mcmk", "im2col", "im2row", "tiled", "torch")
# The tiled kernel's output tile: 8 channels × 8 rows (8·8·OW floats: 14 KiB at OW = 55).
TILE_CHANNELS = 8
TILE_ROWS = 8


def output_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def conv_flops(n: int, c: int, k: int, kh: int, kw: int, oh: int, ow: int) -> int:
    """Multiply-adds counted as two floating-point operations."""
    return 2 * n * k * c * kh * kw * oh * ow


def _pad_nchw(x: Any, pad: int) -> Any:
    import numpy as np

    if pad == 0:
        return x
    return np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))


# --------------------------------------------------------------------------- GEMM methods

_scratch: list[Any] = []


def scratch(size: int) -> Any:
    """A float32 work buffer of ``size`` elements, reused by every layer (grown, never shrunk):
    the patch matrix is rebuilt for each layer, so one allocation serves a whole network."""
    import numpy as np

    if not _scratch or _scratch[0].size < size:
        _scratch[:] = [np.empty(size, dtype=np.float32)]
    return _scratch[0][:size]

def im2col_conv(x: Any, w_matrix: Any, kh: int, kw: int, stride: int, pad: int) -> Any:
    """x: (N, C, H, W); w_matrix: (K, C·KH·KW). Returns (N, K, OH, OW)."""
    import numpy as np

    n, c, h, w = x.shape
    oh, ow = output_size(h, kh, stride, pad), output_size(w, kw, stride, pad)
    k = w_matrix.shape[0]
    out = np.empty((n, k, oh * ow), dtype=np.float32)
    if kh == 1 and kw == 1 and stride == 1 and pad == 0:
        for i in range(n):
            np.matmul(w_matrix, x[i].reshape(c, h * w), out=out[i])
        return out.reshape(n, k, oh, ow)
    from workloads.conv import patches

    cols = scratch(c * kh * kw * oh * ow).reshape(c * kh * kw, oh * ow)
    for i in range(n):
        patches.im2col(x[i], kh, kw, stride, pad, oh, ow, cols)
        np.matmul(w_matrix, cols, out=out[i])
    return out.reshape(n, k, oh, ow)


def im2row_conv(x: Any, w_matrix: Any, kh: int, kw: int, stride: int, pad: int) -> Any:
    """x: (N, H, W, C); w_matrix: (KH·KW·C, K). Returns (N, OH, OW, K)."""
    import numpy as np

    n, h, w, c = x.shape
    oh, ow = output_size(h, kh, stride, pad), output_size(w, kw, stride, pad)
    k = w_matrix.shape[1]
    out = np.empty((n, oh * ow, k), dtype=np.float32)
    if kh == 1 and kw == 1 and stride == 1 and pad == 0:
        np.matmul(x.reshape(n * h * w, c), w_matrix, out=out.reshape(n * oh * ow, k))
        return out.reshape(n, oh, ow, k)
    from workloads.conv import patches

    rows = scratch(oh * ow * kh * kw * c).reshape(oh * ow, kh * kw * c)
    for i in range(n):
        patches.im2row(x[i], kh, kw, stride, pad, oh, ow, rows)
        np.matmul(rows, w_matrix, out=out[i])
    return out.reshape(n, oh, ow, k)


# --------------------------------------------------------------------------- direct methods

def _blocked_weights(w: Any, tile: int) -> Any:
    """(K, C, KH, KW) → (ceil(K/T), C, KH, KW, T), zero-padded, T output channels innermost."""
    import numpy as np

    k, c, kh, kw = w.shape
    blocks = -(-k // tile)
    padded = np.zeros((blocks * tile, c, kh, kw), dtype=np.float32)
    padded[:k] = w
    return np.ascontiguousarray(padded.reshape(blocks, tile, c, kh, kw).transpose(0, 2, 3, 4, 1))


def direct_conv(kernel: Callable[..., Any], x: Any, w: Any, k_out: int, kh: int, kw: int,
                stride: int, pad: int, *extra: int) -> Any:
    import numpy as np

    n, _, h, wd = x.shape
    oh, ow = output_size(h, kh, stride, pad), output_size(wd, kw, stride, pad)
    xp = _pad_nchw(x, pad)
    out = np.empty((n, k_out, oh, ow), dtype=np.float32)
    for i in range(n):
        kernel(xp[i], w, out[i], stride, *extra)
    return out


# --------------------------------------------------------------------------- the methods

@dataclass
class CpuMethod:
    """One convolution method: its layout, its weight preparation and its convolution."""

    name: str
    layout: str  # "nchw" or "nhwc"
    prepare: Callable[[Any], Any]  # (K, C, KH, KW) weights → the method's own form
    run: Callable[[Any, Any, tuple[int, int, int], int, int], Any]  # (x, prepared, (K, KH, KW), stride, pad)

    def to_layout(self, x_nchw: Any) -> Any:
        import numpy as np

        if self.layout == "nhwc":
            return np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))
        return np.ascontiguousarray(x_nchw)

    def to_nchw(self, y: Any) -> Any:
        return y.transpose(0, 3, 1, 2) if self.layout == "nhwc" else y

    def conv(self, x_nchw: Any, w: Any, stride: int = 1, pad: int = 0) -> Any:
        """Convenience for tests: NCHW in, NCHW out, weights prepared on the spot."""
        k, _, kh, kw = w.shape
        return self.to_nchw(self.run(self.to_layout(x_nchw), self.prepare(w), (k, kh, kw), stride, pad))


def _torch_prepare(w: Any) -> Any:
    import torch

    return torch.from_numpy(w.copy())


def _torch_run(x: Any, w: Any, shape: tuple[int, int, int], stride: int, pad: int) -> Any:
    import torch
    import torch.nn.functional as F

    with torch.inference_mode():
        return F.conv2d(torch.from_numpy(x), w, stride=stride, padding=pad).numpy()


def make_method(name: str) -> CpuMethod:
    import numpy as np

    if name == "mcmk":
        from workloads.conv import direct

        kernel = direct.mcmk
        return CpuMethod(name, "nchw", lambda w: np.ascontiguousarray(w, dtype=np.float32),
                         lambda x, w, shp, st, p: direct_conv(kernel, x, w, shp[0], shp[1], shp[2], st, p))
    if name == "tiled":
        from workloads.conv import direct

        tiled = direct.tiled
        return CpuMethod(name, "nchw", lambda w: _blocked_weights(w, TILE_CHANNELS),
                         lambda x, w, shp, st, p: direct_conv(tiled, x, w, shp[0], shp[1], shp[2], st, p,
                                                              TILE_ROWS))
    if name == "im2col":
        return CpuMethod(name, "nchw", lambda w: np.ascontiguousarray(w.reshape(w.shape[0], -1)),
                         lambda x, w, shp, st, p: im2col_conv(x, w, shp[1], shp[2], st, p))
    if name == "im2row":
        return CpuMethod(name, "nhwc",
                         lambda w: np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0])),
                         lambda x, w, shp, st, p: im2row_conv(x, w, shp[1], shp[2], st, p))
    if name == "torch":
        return CpuMethod(name, "nchw", _torch_prepare, _torch_run)
    raise ValueError(f"unknown CPU method {name!r} (choose from {', '.join(CPU_METHODS)})")
