"""The numba.cuda kernels and the data-parallel split, run under numba's CUDA simulator.

The simulator must be switched on before numba is first imported, so the checks run in a
fresh interpreter with NUMBA_ENABLE_CUDASIM=1; tiny shapes, as it runs each thread in Python.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json
import numpy as np
import torch
import torch.nn.functional as F
from numba import cuda
from workloads.conv.measure import ATOL, RTOL
from workloads.conv.cuda_kernels import launch, channel_chunk
from workloads.conv.gpu import data_parallel_conv

def close(y, ref):
    return y.shape == ref.shape and bool(np.allclose(y, ref, rtol=RTOL, atol=ATOL * float(np.abs(ref).max())))

rng = np.random.default_rng(0)
report = {}
# (batch, channels, height, width, filters, kernel, stride, pad); tile 4: the 5×5 kernel is
# larger than the tile, 1×1 and stride 2 included, and 9 channels exceed one staged chunk.
cases = [(1, 2, 5, 6, 2, 3, 1, 1), (2, 3, 5, 5, 1, 1, 1, 0), (1, 1, 7, 6, 2, 5, 2, 2), (1, 9, 4, 5, 1, 3, 1, 1)]
for n, c, h, w, k, kh, s, p in cases:
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    wt = rng.standard_normal((k, c, kh, kh), dtype=np.float32)
    ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(wt), stride=s, padding=p).numpy()
    for method in ("naive", "tiled"):
        out = cuda.device_array(ref.shape, dtype=np.float32)
        launch(method, cuda.to_device(x), cuda.to_device(wt), out, s, p, tile=4)
        report[f"{method} {n, c, h, w, k, kh, s, p}"] = close(out.copy_to_host(), ref)
x = rng.standard_normal((3, 2, 4, 4), dtype=np.float32)
wt = rng.standard_normal((2, 2, 3, 3), dtype=np.float32)
ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(wt), padding=1).numpy()
for streams in (1, 2, 4):
    y, seconds = data_parallel_conv("naive", x, wt, 1, 1, streams)
    report[f"data parallel, {streams} streams"] = close(y, ref) and seconds > 0
report["chunk fits 48 KiB"] = channel_chunk(16, 11, 11, 4) * (15 * 4 + 11) ** 2 <= 11000
print(json.dumps(report))
"""


def test_cuda_kernels_match_torch_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=150)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    failed = [name for name, ok in report.items() if not ok]
    assert not failed and len(report) == 4 * 2 + 3 + 1
