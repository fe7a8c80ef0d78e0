"""Direct-convolution kernels for the CPU, compiled by numba (imported only when a method needs them).

Kept in their own module so that numba can be a top-level import here, which its on-disk
cache (``cache=True``) needs, while ``workloads.conv`` itself stays instant to import.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(parallel=True, fastmath=True, cache=True)
def mcmk(xp, w, out, stride):
    """The six nested loops. xp: (C, Hp, Wp) padded input; w: (K, C, KH, KW); out: (K, OH, OW).

    Parallel over output channels (OpenMP's ``parallel for`` on the outer loop); the inner
    loop walks one output row so that it vectorises when the stride is 1."""
    k_out, c_in, kh, kw = w.shape
    oh, ow = out.shape[1], out.shape[2]
    for k in nb.prange(k_out):
        out[k, :, :] = 0.0
        for c in range(c_in):
            for r in range(kh):
                for s in range(kw):
                    weight = w[k, c, r, s]
                    for y in range(oh):
                        src = xp[c, y * stride + r]
                        dst = out[k, y]
                        if stride == 1:  # contiguous: the loop vectorises
                            for x in range(ow):
                                dst[x] += weight * src[x + s]
                        else:
                            for x in range(ow):
                                dst[x] += weight * src[x * stride + s]


@nb.njit(parallel=True, fastmath=True, cache=True)
def tiled(xp, wt, out, stride, rows):
    """Cache-blocked direct convolution. wt: (ceil(K/T), C, KH, KW, T) blocked weights.

    One parallel job is a tile of T output channels × ``rows`` output rows: its accumulator
    (T·rows·OW floats) stays in L1/L2 for the whole reduction over input channels and kernel
    taps, and every input row of the band is reused for T channels while it is cached."""
    blocks, c_in, kh, kw, tile = wt.shape
    k_out, oh, ow = out.shape
    bands = (oh + rows - 1) // rows
    for job in nb.prange(blocks * bands):
        b = job // bands
        y0 = (job % bands) * rows
        nr = min(rows, oh - y0)
        acc = np.zeros((tile, rows, ow), dtype=np.float32)
        for c in range(c_in):
            for r in range(kh):
                for s in range(kw):
                    for t in range(tile):
                        weight = wt[b, c, r, s, t]
                        for yy in range(nr):
                            src = xp[c, (y0 + yy) * stride + r]
                            dst = acc[t, yy]
                            if stride == 1:
                                for x in range(ow):
                                    dst[x] += weight * src[x + s]
                            else:
                                for x in range(ow):
                                    dst[x] += weight * src[x * stride + s]
        for t in range(tile):
            k = b * tile + t
            if k < k_out:
                out[k, y0:y0 + nr, :] = acc[t, :nr]
