"""The two numba.cuda convolution kernels (imported only for ``--device cuda`` or the simulator).

Both take NCHW float32 arrays (numba device arrays or anything with
``__cuda_array_interface__``, e.g. torch CUDA tensors), weights (K, C, KH, KW), and write
(N, K, OH, OW). The grid is (⌈OW/tile⌉, ⌈OH/tile⌉, N·K) blocks of tile × tile threads, one
thread per output element.
"""

from __future__ import annotations

import functools
import math

from numba import cuda, float32

# 48 KiB of static shared memory per block, in floats, less room for the weights.
SHARED_FLOATS = 11_000
MAX_CHANNEL_CHUNK = 8


@cuda.jit
def conv_naive(x, w, out, stride, pad):
    """One thread per output element, every operand read from global memory."""
    ox = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    oy = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    k_out = w.shape[0]
    n = cuda.blockIdx.z // k_out
    k = cuda.blockIdx.z % k_out
    if ox >= out.shape[3] or oy >= out.shape[2]:
        return
    acc = float32(0.0)
    for c in range(x.shape[1]):
        for r in range(w.shape[2]):
            iy = oy * stride + r - pad
            if iy >= 0 and iy < x.shape[2]:
                for s in range(w.shape[3]):
                    ix = ox * stride + s - pad
                    if ix >= 0 and ix < x.shape[3]:
                        acc += x[n, c, iy, ix] * w[k, c, r, s]
    out[n, k, oy, ox] = acc


def channel_chunk(tile: int, kh: int, kw: int, stride: int) -> int:
    """Input channels staged per step so that the input tile fits in shared memory."""
    span = ((tile - 1) * stride + kh) * ((tile - 1) * stride + kw)
    return max(1, min(MAX_CHANNEL_CHUNK, SHARED_FLOATS // span))


@functools.cache
def tiled_kernel(tile: int, kh: int, kw: int, stride: int):
    """A kernel specialised for one tile and filter shape (shared arrays need constant sizes).

    Per step of ``chunk`` input channels, the block's threads cooperatively copy the input
    tile its outputs need (halo included, zero where padding) and the chunk's filter weights
    into shared memory, synchronise, and each thread accumulates its output from there; the
    input tile is read once from global memory instead of KH·KW times."""
    chunk = channel_chunk(tile, kh, kw, stride)
    in_h = (tile - 1) * stride + kh
    in_w = (tile - 1) * stride + kw
    threads = tile * tile

    @cuda.jit
    def conv_tiled(x, w, out, pad):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * tile + tx
        ox0 = cuda.blockIdx.x * tile
        oy0 = cuda.blockIdx.y * tile
        k_out = w.shape[0]
        n = cuda.blockIdx.z // k_out
        k = cuda.blockIdx.z % k_out
        channels = x.shape[1]
        height = x.shape[2]
        width = x.shape[3]
        x_tile = cuda.shared.array((chunk, in_h, in_w), float32)
        w_tile = cuda.shared.array((chunk, kh, kw), float32)
        acc = float32(0.0)
        for c0 in range(0, channels, chunk):
            for idx in range(tid, chunk * in_h * in_w, threads):
                cc = idx // (in_h * in_w)
                rest = idx % (in_h * in_w)
                iy = rest // in_w
                ix = rest % in_w
                gy = oy0 * stride + iy - pad
                gx = ox0 * stride + ix - pad
                value = float32(0.0)
                if c0 + cc < channels and gy >= 0 and gy < height and gx >= 0 and gx < width:
                    value = x[n, c0 + cc, gy, gx]
                x_tile[cc, iy, ix] = value
            for idx in range(tid, chunk * kh * kw, threads):
                cc = idx // (kh * kw)
                rest = idx % (kh * kw)
                value = float32(0.0)
                if c0 + cc < channels:
                    value = w[k, c0 + cc, rest // kw, rest % kw]
                w_tile[cc, rest // kw, rest % kw] = value
            cuda.syncthreads()
            for cc in range(chunk):
                for r in range(kh):
                    for s in range(kw):
                        acc += x_tile[cc, ty * stride + r, tx * stride + s] * w_tile[cc, r, s]
            cuda.syncthreads()
        ox = ox0 + tx
        oy = oy0 + ty
        if ox < out.shape[3] and oy < out.shape[2]:
            out[n, k, oy, ox] = acc

    return conv_tiled


def launch(method: str, x, w, out, stride: int, pad: int, stream=0, tile: int = 16) -> None:
    """Start ``naive`` or ``tiled`` on ``stream``; returns at once (the launch is asynchronous)."""
    n = x.shape[0]
    k_out, _, kh, kw = w.shape
    oh, ow = out.shape[2], out.shape[3]
    grid = (math.ceil(ow / tile), math.ceil(oh / tile), n * k_out)
    if method == "naive":
        conv_naive[grid, (tile, tile), stream](x, w, out, stride, pad)
    elif method == "tiled":
        tiled_kernel(tile, kh, kw, stride)[grid, (tile, tile), stream](x, w, out, pad)
    else:
        raise ValueError(f"no numba kernel for {method!r}")
