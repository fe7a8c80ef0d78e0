"""Patch-matrix builders for the two GEMM methods, compiled by numba (imported only when needed).

Both gather straight from the unpadded input and write zeros where a patch overhangs the border,
so no padded copy of the input is made. They run in parallel over output rows (im2row) or over
patch-matrix rows (im2col), and fill a caller-supplied buffer, so one scratch matrix serves every
layer of a network. Kept apart from ``cpu.py`` so numba can be a top-level import (its on-disk
cache needs that) while ``workloads.conv`` stays instant to import.
"""

from __future__ import annotations

import numba as nb


@nb.njit(parallel=True, cache=True)
def im2row(x, kh, kw, stride, pad, oh, ow, rows):
    """x: (H, W, C) one NHWC image; rows: (OH·OW, KH·KW·C), row = one output pixel's patch.

    The patch of pixel (y, x) is, per kernel row, a run of KW·C floats that is contiguous in the
    NHWC input when it lies inside the image: it is copied as one run, element by element only
    at the border."""
    h, w, c = x.shape
    flat = x.reshape(h, w * c)  # one image row: W·C contiguous floats
    run = kw * c
    for oy in nb.prange(oh):
        for ox in range(ow):
            row = rows[oy * ow + ox]
            x0 = ox * stride - pad
            inside_x = x0 >= 0 and x0 + kw <= w
            for r in range(kh):
                iy = oy * stride - pad + r
                base = r * run
                if iy < 0 or iy >= h:
                    row[base:base + run] = 0.0
                elif inside_x:
                    start = x0 * c
                    if run >= 16:  # a slice copy (memcpy-like) pays off for long runs
                        row[base:base + run] = flat[iy, start:start + run]
                    else:  # e.g. 3 input channels: an explicit loop is cheaper
                        src = flat[iy]
                        for j in range(run):
                            row[base + j] = src[start + j]
                else:
                    for s in range(kw):
                        ix = x0 + s
                        if ix < 0 or ix >= w:
                            for ch in range(c):
                                row[base + s * c + ch] = 0.0
                        else:
                            for ch in range(c):
                                row[base + s * c + ch] = x[iy, ix, ch]


@nb.njit(parallel=True, cache=True)
def im2col(x, kh, kw, stride, pad, oh, ow, cols):
    """x: (C, H, W) one NCHW image; cols: (C·KH·KW, OH·OW), column = one output pixel's patch.

    Darknet's im2col_cpu: row (c, r, s) of the matrix is the input plane c shifted by (r, s),
    written one output row at a time (contiguous when the stride is 1)."""
    c, h, w = x.shape
    taps = kh * kw
    for job in nb.prange(c * taps * oh):
        row = job // oh
        oy = job % oh
        ch = row // taps
        r = (row % taps) // kw
        s = row % kw
        iy = oy * stride - pad + r
        dst = cols[row, oy * ow:(oy + 1) * ow]
        if iy < 0 or iy >= h:
            dst[:] = 0.0
            continue
        src = x[ch, iy]
        for ox in range(ow):
            ix = ox * stride - pad + s
            dst[ox] = src[ix] if 0 <= ix < w else 0.0
