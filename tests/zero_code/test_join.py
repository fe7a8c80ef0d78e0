"""A process joined mid-run (``instrument.join``, what ``devicewatch attach`` has a Python 3.14
process run by ``sys.remote_exec``) and left again (``instrument.leave``), here called by the
training script itself at a chosen batch, in a real PyTorch loop: the pass under way is partial
and has no epoch, the passes after it carry the script's own epoch numbers, the DataLoader made
before the join is known, and the leave puts back every attribute the hooks replaced, the same
objects, with nothing more said and the loop's result unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
import hashlib, json, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

JOIN_AT, LEAVE_AT, EVENTS = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


class Slow(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.001)
        return torch.randn(8, generator=torch.Generator().manual_seed(i)), i % 2


def touched():
    """What the hooks may replace, each by identity, and PyTorch's global step hooks."""
    from torch.utils.data import dataloader as d
    from torch.optim import optimizer
    places = {"Module": torch.nn.Module, "DataLoader": d.DataLoader, "_BaseDataLoaderIter": d._BaseDataLoaderIter,
              "_MultiProcessingDataLoaderIter": d._MultiProcessingDataLoaderIter, "autograd": torch.autograd,
              "distributed": torch.distributed, "torch": torch}
    out = {f"{place}.{name}": id(value) for place, owner in places.items()
           for name, value in vars(owner).items() if callable(value) or name.startswith("__")}
    out["step hooks"] = len(optimizer._global_optimizer_post_hooks)
    return out


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train = DataLoader(Slow(), batch_size=8)
    val = DataLoader(Slow(), batch_size=8)
    before = touched()
    n = 0
    for epoch in range(1, 7):
        for x, y in train:
            n += 1
            if n == JOIN_AT:
                sys.path.insert(0, sys.argv[4])
                from devicewatch.integrations.zero_code import instrument
                sys.path.pop(0)
                instrument.join(EVENTS)
                during = touched()
            if n == LEAVE_AT:
                instrument.leave()
                after = touched()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for x, y in val:
                model(x)
        model.train()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    changed = sorted(k for k in before if during.get(k) != before[k]) if JOIN_AT else []
    left = sorted(k for k in set(before) | set(after) if after.get(k) != before.get(k)) if LEAVE_AT else []
    print(json.dumps({"checksum": h.hexdigest(), "changed": changed, "left": left}))


main()
'''


def run(tmp_path: Path, join_at: int, leave_at: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    script = tmp_path / "loop.py"
    script.write_text(SCRIPT)
    events = tmp_path / "events.jsonl"
    events.write_text("")
    done = subprocess.run([sys.executable, str(script), str(join_at), str(leave_at), str(events), str(ROOT)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [json.loads(line) for line in events.read_text().splitlines()]
    return json.loads(done.stdout.strip().splitlines()[-1]), said


def epochs(said: list[dict[str, Any]]) -> list[Any]:
    return [e["epoch"] for e in said if e["kind"] == "epoch"]


def test_a_pass_joined_in_its_middle_is_partial_and_the_next_are_numbered_by_the_loop_variable(tmp_path: Path) -> None:
    result, said = run(tmp_path, join_at=11)     # the 3rd batch of epoch 2 (8 batches a pass)
    numbered = next(e for e in said if e.get("state") == "numbered")
    assert (numbered["whole"], numbered["variable"], numbered["epoch"]) == (False, "epoch", 2)
    assert epochs(said) == [3, 4, 5, 6]           # no epoch event for the partial pass
    assert {e["metrics"]["steps"] for e in said if e["kind"] == "epoch"} == {8}
    partial = [e for e in said if e["kind"] == "phase_begin" and e.get("epoch") is None]
    assert {e["name"] for e in partial} >= {"train", "validate"}
    setup = next(e for e in said if e.get("state") == "setup")   # the DataLoader was made before the join
    assert setup["loader"]["num_workers"] == 0 and setup["loader"]["batch_size"] == 8
    assert "DataLoader.__init__" in result["changed"] and "_BaseDataLoaderIter.__next__" in result["changed"]


def test_a_join_between_passes_sees_the_next_pass_whole(tmp_path: Path) -> None:
    _, said = run(tmp_path, join_at=16)          # the last batch of epoch 2: its step, then validation
    numbered = next(e for e in said if e.get("state") == "numbered")
    assert (numbered["whole"], numbered["epoch"]) == (True, 3)
    assert epochs(said) == [3, 4, 5, 6]


def test_leave_puts_back_every_attribute_and_says_nothing_more(tmp_path: Path) -> None:
    bare, _ = run(tmp_path, join_at=0)
    result, said = run(tmp_path, join_at=5, leave_at=30)
    assert result["changed"], "the join replaced nothing"
    assert result["left"] == []                   # the same objects as before the join, step hooks included
    assert said[-1]["kind"] == "instrument" and said[-1]["state"] == "left"
    assert epochs(said) == [2, 3]                 # epoch 4, under way at the leave, sends nothing
    assert result["checksum"] == bare["checksum"]
