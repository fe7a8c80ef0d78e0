"""GPU polls on a thread of their own, so no NVML call can delay a CPU sample.

More GPUs are polled less often (``gpu_poll_period``): polling every tick cost more than the
recorder's whole budget with 8 GPUs (docs/benchmarks.md). What the driver buffers (utilization
samples, per-process use) is drained whole at each poll, so a slower poll loses none of it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..probes.gpu import GpuProbe

GPU_READS_PER_SECOND = 8         # device reads a second over all GPUs: eight GPUs are polled once a second
GPU_POLL_RANGE = (0.2, 1.0)      # seconds between GPU polls, at least and at most (every tick if slower)


class GpuSampler:
    """Polls the GPU probe on its own thread, one poll per request.

    The main loop requests a poll at the first tick at least ``gpu_poll_period`` after the
    previous request, and waits for it at most until a deadline. A poll that finishes later is
    taken at the next tick, with the time it was asked for; while one is running no other is
    asked for. So every poll lands in exactly one sample: none is lost, none repeated, and no
    NVML call can delay the CPU samples. Polling every tick cost more than the recorder's whole
    budget with 8 GPUs (docs/benchmarks.md); what the driver buffers (utilization samples,
    per-process use) is drained whole at each poll, so a slower poll loses none of it.
    """

    def __init__(self, probe: GpuProbe, start_unix: float):
        self._probe = probe
        self._start_unix = start_unix
        self._cond = threading.Condition()
        self._asked: tuple[float, list[int]] | None = None
        self._result: tuple[float, list[dict[str, Any]] | None, list[dict[str, Any]]] | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
        self._thread.start()

    def request(self, t: float, pids: list[int]) -> None:
        with self._cond:
            if self._asked is None and self._result is None:
                self._asked = (t, pids)
                self._cond.notify_all()

    def collect(self, deadline: float) -> tuple[float, list[dict[str, Any]] | None, list[dict[str, Any]]] | None:
        """(asked at, one record per GPU or None if NVML failed, probe news), or None if not ready."""
        with self._cond:
            if self._asked is None and self._result is None:
                return None  # nothing asked for: no wait
            self._cond.wait_for(lambda: self._result is not None, max(0.0, deadline - time.monotonic()))
            result, self._result = self._result, None
            return result

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or self._asked is not None)
                if self._stopping:
                    return
                t, pids = self._asked  # type: ignore[misc]  # not None once woken without stopping
            gpus = self._probe.sample(pids, self._start_unix)
            news = self._probe.take_news()
            with self._cond:
                self._asked = None
                self._result = (t, gpus, news)
                self._cond.notify_all()


def gpu_poll_period(devices: int) -> float:
    """Seconds between GPU polls: a poll's cost grows with the GPUs it reads, so more GPUs are
    polled less often (one or two every 0.2 s, four every 0.5 s, eight or more every second)."""
    low, high = GPU_POLL_RANGE
    return min(high, max(low, devices / GPU_READS_PER_SECOND))
