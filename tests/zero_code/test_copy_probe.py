"""The copy probe behind ``pin_memory``'s prediction (``integrations.zero_code.copy_probe``).

No GPU is available here: its CUDA path is run only on the literal inputs below (a batch of
stand-in tensors and a stand-in ``torch.cuda``, each recording what was asked of it), which
check its decisions: what it copies, how it synchronizes, when it does not probe. Its CPU path
runs on the real torch: a process that has not started CUDA is never probed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from devicewatch.integrations.zero_code import copy_probe
from devicewatch.runformat import runfile

from conftest import devicewatch

# A loop under the instrumentation that reads what wraps the DataLoader's __next__: before its
# first training batch, the probe over the timing; after it, the timing alone (torch's own under it).
SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import _BaseDataLoaderIter

def depth():
    f, n = _BaseDataLoaderIter.__next__, 0
    while hasattr(f, "__wrapped__"):
        f, n = f.__wrapped__, n + 1
    return n

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.zeros(64, dtype=torch.long)), batch_size=8)
before = depth()
for x, y in loader:
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
print("WRAPPERS", before, depth())
"""


class Tensor:
    """A tensor of NBYTES on DEVICE that records its copies into CALLS."""

    def __init__(self, calls: list[Any], nbytes: int, device: str = "cpu", pinned: bool = False):
        self.calls, self.nbytes, self.device, self.pinned = calls, nbytes, SimpleNamespace(type=device), pinned

    def is_pinned(self) -> bool:
        return self.pinned

    def numel(self) -> int:
        return self.nbytes // 4

    def element_size(self) -> int:
        return 4

    def to(self, device: Any, non_blocking: bool = False) -> Tensor:
        self.calls.append(("to", self.nbytes, self.pinned, non_blocking))
        return Tensor(self.calls, self.nbytes, "cuda")

    def pin_memory(self) -> Tensor:
        self.calls.append(("pin", self.nbytes))
        return Tensor(self.calls, self.nbytes, "cpu", pinned=True)


def accelerator(calls: list[Any], initialized: bool = True) -> Any:
    cuda = SimpleNamespace(is_initialized=lambda: initialized, current_device=lambda: 0,
                           synchronize=lambda: calls.append(("sync",)))
    return SimpleNamespace(cuda=cuda, is_tensor=lambda x: isinstance(x, Tensor), device=lambda *a: a)


def test_the_pageable_tensors_of_a_batch_are_copied_from_where_they_are_and_from_pinned_memory():
    calls: list[Any] = []
    image, label = Tensor(calls, 4096), Tensor(calls, 64)
    batch = {"image": image, "meta": ["a name", (label, Tensor(calls, 128, pinned=True))], "gpu": Tensor(calls, 8, "cuda")}
    figures = copy_probe.probe(accelerator(calls), batch)
    assert figures is not None and figures["bytes"] == 4096 + 64   # the pinned and the GPU tensors are not copied
    assert all(figures[k] >= 0 for k in ("pageable_s", "pinned_s", "pin_s"))
    copies = [c for c in calls if c[0] == "to"]
    runs = 1 + copy_probe.REPEATS   # a first to warm the allocators, then the timed ones
    assert copies.count(("to", 4096, False, False)) == runs and copies.count(("to", 4096, True, True)) == runs
    # each copy is synchronized before its clock stops: a sync after every pair of tensors copied
    assert calls.count(("sync",)) == 1 + 2 * runs
    assert calls[-1] == ("pin", 64)


def test_no_probe_without_cuda_in_use_or_without_pageable_tensors():
    calls: list[Any] = []
    assert copy_probe.probe(accelerator(calls, initialized=False), (Tensor(calls, 4096),)) is None
    assert copy_probe.probe(accelerator(calls), (Tensor(calls, 4096, pinned=True), "text", 3)) is None
    assert copy_probe.probe(accelerator(calls), [Tensor(calls, copy_probe.MAX_BYTES + 4)]) is None
    assert calls == []


def test_fastest_is_the_shortest_timed_run_after_a_first_untimed_one():
    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 23.0])
    runs: list[int] = []
    assert copy_probe.fastest(lambda: runs.append(1), repeats=3, clock=lambda: next(ticks)) == 2.0
    assert len(runs) == 4


def test_a_process_that_has_not_started_cuda_is_not_probed_and_says_nothing():
    said: list[dict] = []
    batch = (torch.randn(16, 32), torch.zeros(16, dtype=torch.long))
    assert not torch.cuda.is_initialized()
    assert copy_probe.probe_and_say(torch, batch, say=lambda kind, **f: said.append(f)) is False
    assert said == []
    assert copy_probe.tensors_in(batch, torch.is_tensor)[0] is batch[0]


def test_on_the_cpu_the_probe_wraps_the_first_training_batch_alone_and_says_nothing(tmp_path: Path):
    script = tmp_path / "loop.py"
    script.write_text(SCRIPT)
    out = tmp_path / "run.jsonl"
    result = devicewatch("--record", str(out), "--quiet", "--", sys.executable, str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    run = runfile.load(out)
    line = next(log.line for log in run.logs if log.line.startswith("WRAPPERS"))
    assert line.split()[1:] == ["2", "1"]
    assert not [e for e in run.events.of("instrument") if e.get("state") in ("copy", "error")], \
        json.dumps(list(run.events.of("instrument")))[:2000]
