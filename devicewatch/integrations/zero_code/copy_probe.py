"""What pinned memory would save a loop that copies its batches to the GPU from pageable host
memory: the figures behind ``devicewatch try``'s prediction for ``pin_memory``.

Measured once, at the first training batch that comes out of a DataLoader with
``pin_memory=False`` on the training thread, and only where the script already uses CUDA
(``torch.cuda.is_initialized()``: it put its model on the GPU before that batch), so a process
that trains on the CPU, or a machine without a GPU, is never probed and no CUDA context is made
for it. The batch's tensors that are on the CPU and not pinned are copied to the current GPU
from where they are (``pageable_s``) and from a pinned copy of them (``pinned_s``), each copy
synchronized; the pinning itself is timed too (``pin_s``): it is what PyTorch's DataLoader
does to every batch with ``pin_memory=True`` (``torch/utils/data/_utils/pin_memory.py``), in
its pin thread beside the loop where it has workers, in ``__next__`` where it has none. Each
figure is the fastest of REPEATS after one that warms the allocators: a few milliseconds for a
batch of tens of megabytes, once per process. They go out as one ``instrument`` event, state
``copy``, with the bytes copied.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ... import events

REPEATS = 3
MAX_BYTES = 1 << 30   # a batch larger than this is not probed: its pinned copy would hold as much host memory
MAX_DEPTH = 4         # how deep a batch's containers are searched for tensors


def tensors_in(batch: Any, is_tensor: Callable[[Any], bool], depth: int = 0) -> list[Any]:
    """The tensors of BATCH, in its tuples, lists and mappings, as the DataLoader's pinning
    finds them."""
    if is_tensor(batch):
        return [batch]
    if depth >= MAX_DEPTH or isinstance(batch, (str, bytes)):
        return []
    if isinstance(batch, Mapping):
        items = list(batch.values())
    elif isinstance(batch, (tuple, list)):
        items = list(batch)
    else:
        return []
    return [t for item in items for t in tensors_in(item, is_tensor, depth + 1)]


def fastest(run: Callable[[], object], repeats: int = REPEATS,
            clock: Callable[[], float] = time.perf_counter) -> float:
    """The shortest of REPEATS timed calls of RUN, after one untimed call (the first copy
    also makes the allocators' blocks)."""
    run()
    best = float("inf")
    for _ in range(max(1, repeats)):
        start = clock()
        run()
        best = min(best, clock() - start)
    return best


def probe(torch: Any, batch: Any) -> dict[str, Any] | None:
    """The copy figures of BATCH (None: CUDA not in use, or nothing pageable to copy)."""
    cuda = torch.cuda
    if not cuda.is_initialized():
        return None
    pageable = [t for t in tensors_in(batch, torch.is_tensor) if t.device.type == "cpu" and not t.is_pinned()]
    size = sum(t.numel() * t.element_size() for t in pageable)
    if not pageable or size == 0 or size > MAX_BYTES:
        return None
    device = torch.device("cuda", cuda.current_device())
    synchronize = cuda.synchronize
    pinned = [t.pin_memory() for t in pageable]

    def from_pageable() -> None:
        for t in pageable:
            t.to(device)
        synchronize()

    def from_pinned() -> None:
        for t in pinned:
            t.to(device, non_blocking=True)
        synchronize()

    def pin() -> None:
        for t in pageable:
            t.pin_memory()

    synchronize()   # the script's own queued GPU work is not the copy's
    return {"bytes": int(size), "pageable_s": round(fastest(from_pageable), 6),
            "pinned_s": round(fastest(from_pinned), 6), "pin_s": round(fastest(pin), 6)}


def probe_and_say(torch: Any, batch: Any, say: Callable[..., None] = events.emit) -> bool:
    """Probe BATCH and say its figures; whether there were any."""
    figures = probe(torch, batch)
    if figures is None:
        return False
    say(events.INSTRUMENT, state="copy", **figures)
    return True
