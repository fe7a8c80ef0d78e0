"""GPU methods: numba.cuda ``naive`` and ``tiled`` kernels, cuDNN through PyTorch, and data
parallelism over every visible GPU × ``streams`` CUDA streams per GPU.

Host↔device copies are timed apart from the kernels: the source's unoptimised GPU
convolution lost to the CPU because of them.
"""

from __future__ import annotations

import time
from typing import Any
from collections.abc import Callable

GPU_METHODS = ("naive", "tiled", "cudnn")


def gpu_missing_reason(methods: list[str]) -> str | None:
    """Why ``--device cuda`` cannot run here, or None when it can."""
    try:
        from numba import cuda
    except ImportError as exc:  # pragma: no cover - numba is a dependency
        return f"numba.cuda is unavailable ({exc})"
    if not cuda.is_available():
        return "no CUDA GPU is available (numba.cuda found no device)"
    if "cudnn" in methods:
        import torch

        if not torch.cuda.is_available():
            return "method cudnn needs a CUDA build of PyTorch with a visible GPU"
    return None


def _sync_all() -> None:
    from numba import cuda

    for gpu in cuda.gpus:
        with gpu:
            cuda.synchronize()


def time_layer(method: str, x: Any, w: Any, stride: int, pad: int, repeats: int) -> dict[str, float]:
    """Milliseconds for host→device, the convolution alone (median of ``repeats``) and
    device→host, on GPU 0 and its default stream; also returns the output for checking."""
    import numpy as np

    n, _, h, wd = x.shape
    k, _, kh, kw = w.shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    if method == "cudnn":
        import torch
        import torch.nn.functional as F

        def sync() -> None:
            torch.cuda.synchronize()

        w_dev = torch.from_numpy(w).cuda()
        sync()
        started = time.perf_counter()
        x_dev = torch.from_numpy(x).cuda()
        sync()
        h2d = time.perf_counter() - started

        def run() -> Any:
            return F.conv2d(x_dev, w_dev, stride=stride, padding=pad)

        def fetch(y: Any) -> Any:
            return y.cpu().numpy()
    else:
        from numba import cuda

        from workloads.conv.cuda_kernels import launch

        sync = cuda.synchronize
        w_dev = cuda.to_device(w)
        started = time.perf_counter()
        x_dev = cuda.to_device(x)
        sync()
        h2d = time.perf_counter() - started
        out = cuda.device_array((n, k, oh, ow), dtype=np.float32)

        def run() -> Any:
            launch(method, x_dev, w_dev, out, stride, pad)
            return out

        def fetch(y: Any) -> Any:
            return y.copy_to_host()
    run()
    sync()  # compile / autotune outside the timing
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        y = run()
        sync()
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    result = fetch(y)
    d2h = time.perf_counter() - started
    return {"h2d_ms": h2d * 1e3, "kernel_ms": float(np.median(times)) * 1e3, "d2h_ms": d2h * 1e3,
            "output": result}


def data_parallel_conv(method: str, x: Any, w: Any, stride: int, pad: int, streams: int) -> tuple[Any, float]:
    """Split the batch into one chunk per (GPU, stream), copy in, convolve and copy out, all
    asynchronously; returns the output and the wall time in seconds, copies included.

    Chunks go round-robin over GPUs first so that two chunks land on two GPUs before a GPU
    gets a second stream. Weights are uploaded to every GPU beforehand, as a loaded model."""
    import numpy as np

    n = x.shape[0]
    k, _, kh, kw = w.shape
    oh = (x.shape[2] + 2 * pad - kh) // stride + 1
    ow = (x.shape[3] + 2 * pad - kw) // stride + 1
    if method == "cudnn":
        return _data_parallel_torch(x, w, stride, pad, streams)
    from numba import cuda

    from workloads.conv.cuda_kernels import launch

    gpus = list(cuda.gpus)
    slots = [(g, s) for s in range(streams) for g in range(len(gpus))]
    bounds = np.linspace(0, n, min(n, len(slots)) + 1).astype(int)
    weights, stream_of, host_in, host_out = {}, {}, {}, {}
    for g, gpu in enumerate(gpus):
        with gpu:
            weights[g] = cuda.to_device(w)
            for s in range(streams):
                stream_of[g, s] = cuda.stream()
    for j in range(len(bounds) - 1):
        g, _ = slots[j]
        with gpus[g]:  # page-locked buffers so the copies are truly asynchronous
            host_in[j] = cuda.pinned_array((bounds[j + 1] - bounds[j],) + x.shape[1:], dtype=np.float32)
            host_in[j][:] = x[bounds[j]:bounds[j + 1]]
            host_out[j] = cuda.pinned_array((bounds[j + 1] - bounds[j], k, oh, ow), dtype=np.float32)
    _sync_all()
    started = time.perf_counter()
    for j in range(len(bounds) - 1):
        g, s = slots[j]
        with gpus[g]:
            stream = stream_of[g, s]
            x_dev = cuda.to_device(host_in[j], stream=stream)
            out_dev = cuda.device_array(host_out[j].shape, dtype=np.float32, stream=stream)
            launch(method, x_dev, weights[g], out_dev, stride, pad, stream=stream)
            out_dev.copy_to_host(host_out[j], stream=stream)
    for stream in stream_of.values():
        stream.synchronize()
    elapsed = time.perf_counter() - started
    return np.concatenate([host_out[j] for j in range(len(bounds) - 1)]), elapsed


def _data_parallel_torch(x: Any, w: Any, stride: int, pad: int, streams: int) -> tuple[Any, float]:
    import numpy as np
    import torch
    import torch.nn.functional as F

    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    slots = [(g, s) for s in range(streams) for g in range(len(devices))]
    chunks = [c for c in np.array_split(x, min(x.shape[0], len(slots))) if len(c)]
    weights = {g: torch.from_numpy(w).to(d) for g, d in enumerate(devices)}
    stream_of = {(g, s): torch.cuda.Stream(device=devices[g]) for g, s in slots}
    host_in = [torch.from_numpy(np.ascontiguousarray(c)).pin_memory() for c in chunks]
    outputs = []
    for d in devices:
        torch.cuda.synchronize(d)
    started = time.perf_counter()
    for j, chunk in enumerate(host_in):
        g, s = slots[j]
        with torch.cuda.device(devices[g]), torch.cuda.stream(stream_of[g, s]):
            y = F.conv2d(chunk.to(devices[g], non_blocking=True), weights[g], stride=stride, padding=pad)
            outputs.append(y.to("cpu", non_blocking=True))
    for stream in stream_of.values():
        stream.synchronize()
    elapsed = time.perf_counter() - started
    return torch.cat(outputs).numpy(), elapsed


def unet_conv(method: str, weights: list[Any]) -> Callable[[Any, int], Any]:
    """A ``conv(x, i)`` for U-Net on CUDA torch tensors (stride 1, padding k//2)."""
    import torch
    import torch.nn.functional as F

    tensors = [torch.from_numpy(w).cuda() for w in weights]
    if method == "cudnn":
        return lambda x, i: F.conv2d(x, tensors[i], padding=tensors[i].shape[2] // 2)
    from numba import cuda

    from workloads.conv.cuda_kernels import launch

    def conv(x: Any, i: int) -> Any:
        w = tensors[i]
        x = x.contiguous()
        out = torch.empty((x.shape[0], w.shape[0], x.shape[2], x.shape[3]), device=x.device)
        stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
        launch(method, x, w, out, 1, w.shape[2] // 2, stream=stream)
        return out

    return conv
