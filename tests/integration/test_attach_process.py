"""devicewatch attach on real training loops started without it: epochs, shares and verdicts
checked against the loop's own ``[truth]`` timing, a detach that leaves its result as a bare
run's, and a refusal named with its fix."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from devicewatch.attach.loop_variable import find_py_spy
from devicewatch.attach.sampler import find_austin

ROOT = Path(__file__).resolve().parents[2]
PY_SPY = find_py_spy()
AUSTIN = find_austin()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(AUSTIN is None or PY_SPY is None,
                                                   reason="austin or py-spy is not installed")]
SHARE_POINTS = 5.0   # the bound on a sampled share against the loop's own timing

# A plain PyTorch loop with a slow Dataset (DELAY seconds a sample): its own timing of each epoch
# printed as it ends, and a checksum of its weights at the end. Seeded and without shuffling, so
# two runs of it end with the same checksum.
LOOP = '''
import hashlib, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

EPOCHS, DELAY, WIDTH = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
VALIDATION = int(sys.argv[4]) if len(sys.argv) > 4 else 64


class Slow(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if DELAY:
            time.sleep(DELAY)
        return torch.randn(WIDTH, generator=torch.Generator().manual_seed(i)), i % 10


torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train = DataLoader(Slow(256), batch_size=16)
val = DataLoader(Slow(VALIDATION), batch_size=16)
print("ready", flush=True)
for epoch in range(1, EPOCHS + 1):
    data = 0.0
    t0 = time.perf_counter()
    it = iter(train)
    while True:
        a = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        data += time.perf_counter() - a
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    v0 = time.perf_counter()
    model.eval()
    with torch.no_grad():
        for x, y in val:
            model(x)
    model.train()
    t1 = time.perf_counter()
    print(f"[truth] epoch {epoch} total {t1 - t0:.4f} data {data:.4f} train {v0 - t0 - data:.4f} "
          f"validate {t1 - v0:.4f} end {time.monotonic():.4f}", flush=True)
h = hashlib.sha256()
for p in model.parameters():
    h.update(p.detach().numpy().tobytes())
print("checksum", h.hexdigest(), flush=True)
'''
TRUTH = re.compile(r"\[truth\] epoch (\d+) total (\S+) data (\S+) train (\S+) validate (\S+) end (\S+)")


# The same in Lightning's fit: a callback times each epoch and its validation (Lightning runs
# the validation inside the training epoch, at its end). Its data and train are not told apart.
LIGHTNING = '''
import sys, time, warnings
warnings.filterwarnings("ignore")
import torch, lightning as L
from torch.utils.data import DataLoader, Dataset

EPOCHS, DELAY, WIDTH = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
VALIDATION = int(sys.argv[4]) if len(sys.argv) > 4 else 64


class Slow(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        time.sleep(DELAY)
        return torch.randn(WIDTH, generator=torch.Generator().manual_seed(i)), i % 10


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10))

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, i):
        self.net(batch[0])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class Truth(L.Callback):
    def on_train_epoch_start(self, trainer, module):
        self.t0, self.v = time.monotonic(), 0.0

    def on_validation_epoch_start(self, trainer, module):
        self.v0 = time.monotonic()

    def on_validation_epoch_end(self, trainer, module):
        self.v += time.monotonic() - self.v0

    def on_train_epoch_end(self, trainer, module):
        now = time.monotonic()
        print(f"[truth] epoch {trainer.current_epoch + 1} total {now - self.t0:.4f} validate {self.v:.4f} "
              f"end {now:.4f}", flush=True)


torch.manual_seed(0)
torch.set_num_threads(1)
print("ready", flush=True)
trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                    callbacks=[Truth()])
small = torch.utils.data.Subset(Slow(), range(64))
trainer.fit(Net(), DataLoader(Slow(), batch_size=16), DataLoader(small, batch_size=16))
'''
# Keras 3 on PyTorch: fit with a slow PyDataset, timed by a callback as Lightning's is.
KERAS = '''
import os, sys, time
os.environ["KERAS_BACKEND"] = "torch"
import numpy as np, keras

EPOCHS, DELAY, WIDTH = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])


class Slow(keras.utils.PyDataset):
    def __init__(self, n, **kw):
        super().__init__(**kw)
        self.n = n

    def __len__(self):
        return self.n // 16

    def __getitem__(self, i):
        time.sleep(DELAY * 16)
        r = np.random.default_rng(i)
        return r.standard_normal((16, WIDTH)).astype("float32"), np.arange(16) % 10


class Truth(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.t0, self.v = time.monotonic(), 0.0

    def on_test_begin(self, logs=None):
        self.v0 = time.monotonic()

    def on_test_end(self, logs=None):
        self.v += time.monotonic() - self.v0

    def on_epoch_end(self, epoch, logs=None):
        now = time.monotonic()
        print(f"[truth] epoch {epoch + 1} total {now - self.t0:.4f} validate {self.v:.4f} end {now:.4f}", flush=True)


keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((WIDTH,)), keras.layers.Dense(WIDTH, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
print("ready", flush=True)
model.fit(Slow(256), validation_data=Slow(64), epochs=EPOCHS, verbose=0, callbacks=[Truth()])
'''
LIGHTNING_TRUTH = re.compile(r"\[truth\] epoch (\d+) total (\S+) validate (\S+) end (\S+)")


class Loop:
    """The loop, started bare; its output read line by line as it comes."""

    def __init__(self, folder: Path, epochs: int, delay: float, width: int, user: list[str] | None = None,
                 text: str = LOOP, more: tuple[str, ...] = ()):
        script = folder / "loop.py"
        script.write_text(text)
        self.lines: list[str] = []
        self.process = subprocess.Popen([*(user or []), sys.executable, str(script), str(epochs), str(delay), str(width),
                                         *more], stdout=subprocess.PIPE, text=True, cwd=folder)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None or self._reader.is_alive(), f"the loop ended: {self.lines[-3:]}"
            assert time.monotonic() < deadline, f"no {text!r} in {timeout} s: {self.lines[-3:]}"
            time.sleep(0.05)

    def finish(self, timeout: float = 300) -> None:
        self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)

    def truths(self) -> list[dict[str, float]]:
        out = []
        for line in self.lines:
            lit = LIGHTNING_TRUTH.search(line)
            if lit:
                epoch, total, validate, end = lit.groups()
                out.append({"epoch": int(epoch), "total": float(total), "validate": float(validate),
                            "start": float(end) - float(total)})
            m = TRUTH.search(line)
            if m:
                epoch, total, data, train, validate, end = m.groups()
                out.append({"epoch": int(epoch), "total": float(total), "data": float(data), "train": float(train),
                            "validate": float(validate), "start": float(end) - float(total)})
        return out

    def checksum(self) -> str:
        return next(line.split()[1] for line in self.lines if line.startswith("checksum "))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def attach(pid: int, output: Path, *, user: list[str] | None = None, **kwargs: Any) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), DEVICEWATCH_PY_SPY=str(PY_SPY), DEVICEWATCH_AUSTIN=str(AUSTIN),
               COLUMNS="200")
    return subprocess.Popen([*(user or []), sys.executable, "-m", "devicewatch", "attach", str(pid),
                             "--record", str(output)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def passes(run: list[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """Each whole pass's sampled seconds: data wait, train (its loop less the wait), validate."""
    begun: dict[tuple[str, Any], float] = {}
    out: dict[int, dict[str, float]] = {}
    for r in run:
        if r.get("type") != "event":
            continue
        key = (r.get("name"), r.get("epoch"))
        if r["kind"] == "phase_begin":
            begun[key] = r["t"]
        elif r["kind"] == "phase_end" and r.get("name") in ("train", "validate") and r.get("epoch") is not None:
            out.setdefault(r["epoch"], {})[r["name"]] = r["t"] - begun[key]
        elif r["kind"] == "epoch":
            out.setdefault(r["epoch"], {})["data"] = r["metrics"]["data_wait_s"]
    for parts in out.values():   # the train phase holds its data waits: train alone is the rest
        if "train" in parts and "data" in parts:
            parts["train"] -= parts["data"]
    # A pass without its epoch event never ended: the run ended inside it (the loop's last lines
    # after its last evaluation), as the loop printed no [truth] line for it.
    return {n: parts for n, parts in out.items() if "data" in parts}


def shares(parts: dict[str, float]) -> dict[str, float]:
    total = parts["data"] + parts["train"] + parts["validate"]
    return {k: 100 * parts[k] / total for k in ("data", "train", "validate")}


def attached_run(tmp_path: Path, delay: float, width: int, epochs: int,
                 text: str = LOOP, more: tuple[str, ...] = ()) -> tuple[Loop, list[dict[str, Any]], str]:
    loop = Loop(tmp_path, epochs, delay, width, text=text, more=more)
    try:
        loop.wait_for("[truth] epoch 1 ")
        out = tmp_path / "attached.jsonl"
        watcher = attach(loop.process.pid, out)
        text, err = watcher.communicate(timeout=300)
        loop.finish()
    finally:
        loop.kill()
    assert watcher.returncode == 0, err
    return loop, records(out), text


# How late the sampler may stamp its first sample: austin's lines are read by a thread of
# devicewatch, which a busy machine runs tens of milliseconds late (37-77 ms measured beside two
# busy programs). An epoch that began within this of the first sample's stamp may have begun
# before the sample or after it: seen whole or partial, either is right.
READ_LAG = 0.15


def whole_after(loop: Loop, run: list[dict[str, Any]], sampled: dict[int, dict[str, float]] | None = None
                ) -> list[dict[str, float]]:
    """The loop's epochs that began after the sampler's first sample: those it saw whole. Given
    the passes SAMPLED, their count is checked (the one epoch that began within READ_LAG of the
    first sample counted or not) and the epochs they are returned."""
    header = run[0]
    first = min(r["t"] for r in run if r.get("type") == "event" and r.get("kind") == "phase_begin")
    seen_from = header["clock"]["mono"] + first
    surely = [t for t in loop.truths() if t["start"] > seen_from]
    if sampled is None:
        return surely
    maybe = [t for t in loop.truths() if t["start"] > seen_from - READ_LAG]
    assert len(sampled) in (len(surely), len(maybe)), (sorted(sampled), [t["epoch"] for t in surely],
                                                       [t["epoch"] for t in maybe])
    return maybe[len(maybe) - len(sampled):]


def test_an_input_bound_loop_attached_after_its_first_epoch(tmp_path: Path) -> None:
    loop, run, text = attached_run(tmp_path, delay=0.004, width=256, epochs=8)
    sampled = passes(run)
    truths = whole_after(loop, run, sampled)
    # The passes in order are the loop's last epochs in order; over them all, each share within
    # SHARE_POINTS of the loop's own (one epoch alone may be off more on a busy machine: a
    # boundary in a moment nobody sampled; bench_attach.py measures the worst).
    seen = {k: sum(sampled[n][k] for n in sampled) for k in ("data", "train", "validate")}
    truth = {k: sum(t[k] for t in truths) for k in ("data", "train", "validate")}
    got, want = shares(seen), shares(truth)
    assert all(abs(got[k] - want[k]) <= SHARE_POINTS for k in got), (got, want)
    assert run[0]["attached"]["pid"] == loop.process.pid and run[0]["attached"]["command"][-3:] == ["8", "0.004", "256"]
    assert run[-1]["reason"] == "the attached process ended"
    assert "verdict: input-bound" in text
    assert re.search(r"advice: on the next start: try num_workers=\d", text), text


# The same loop inside a function: its loop variable is a local, which py-spy reads.
IN_A_FUNCTION = "def main():\n" + textwrap.indent(LOOP, "    ") + "\n\nmain()\n"


def test_a_loop_in_a_function_is_numbered_by_its_own_loop_variable(tmp_path: Path) -> None:
    loop, run, text = attached_run(tmp_path, delay=0.004, width=256, epochs=6, text=IN_A_FUNCTION)
    sampled = passes(run)
    truths = whole_after(loop, run, sampled)
    # The passes seen whole carry the script's own epoch numbers, not 1, 2, … from the attach.
    assert sorted(sampled) == [t["epoch"] for t in truths] and truths[0]["epoch"] >= 2
    assert "epochs: the script's loop variable epoch" in " ".join(text.split()), text


def test_a_compute_bound_loop_is_not_input_bound(tmp_path: Path) -> None:
    # Wide layers and no delay: about 0.4 GFLOP a step; a validation of 1536 samples, long enough
    # (some 0.6 s, twice the windows' overlap) to be seen between two py-spy runs on a busy
    # machine (docs/attach.md: a shorter one can fall between them and join two passes).
    loop, run, text = attached_run(tmp_path, delay=0.0, width=2048, epochs=12, more=("1536",))
    sampled = passes(run)
    assert len(whole_after(loop, run, sampled)) > 0
    assert "verdict: input-bound" not in text
    assert "verdict:" in text


def test_detach_mid_run_leaves_the_result_of_a_bare_run(tmp_path: Path) -> None:
    bare, watched, run = detached_mid_epoch(tmp_path, Loop, 5, attach, signal.SIGINT)
    assert run[-1]["reason"] == "detached: the process runs on, untouched"
    assert watched.checksum() == bare.checksum()


def detached_mid_epoch(tmp_path: Path, kind: type[Loop], epochs: int, attach: Any,
                       sig: signal.Signals) -> tuple[Loop, Loop, list[dict[str, Any]]]:
    """A bare run of the loop, then one attached after its first epoch and left (SIG to
    devicewatch) once its phases come: both run to their end; the second's recording."""
    (tmp_path / "bare").mkdir()
    (tmp_path / "watched").mkdir()
    bare = kind(tmp_path / "bare", epochs, 0.002, 256)
    bare.finish()
    watched = kind(tmp_path / "watched", epochs, 0.002, 256)
    try:
        watched.wait_for("[truth] epoch 1 ", timeout=180)
        out = tmp_path / "detached.jsonl"
        watcher = attach(watched.process.pid, out)
        deadline = time.monotonic() + 60
        while not (out.exists() and '"phase_begin"' in out.read_text()):   # the phases have begun
            assert time.monotonic() < deadline and watcher.poll() is None
            time.sleep(0.05)
        watcher.send_signal(sig)   # mid-epoch: a detach
        _, err = watcher.communicate(timeout=60)
        assert watched.process.poll() is None, "the loop ended with the detach"
        watched.finish()
    finally:
        watched.kill()
    assert watcher.returncode == 0, err
    return bare, watched, records(out)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to start a process another user may not trace")
def test_another_users_process_is_refused_with_its_fix(tmp_path: Path) -> None:
    """A non-root user attaching to root's process: one line naming the fix, exit status 2, and
    a run holding what /proc allows (samples), without phases."""
    shared = Path(tempfile.mkdtemp(prefix="devicewatch-attach-"))   # pytest's folders are root's alone
    shared.chmod(0o777)
    loop = Loop(shared, 3, 0.004, 64)
    try:
        loop.wait_for("ready")
        out = shared / "refused.jsonl"
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        watcher = attach(loop.process.pid, out, user=nobody)
        text, err = watcher.communicate(timeout=300)
        loop.finish()
        run = records(out)
    finally:
        loop.kill()
        shutil.rmtree(shared, ignore_errors=True)
    assert watcher.returncode == 2, (text, err)
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if line.strip()]
    assert len(said) == 1, err
    assert "permission denied" in said[0] and "CAP_SYS_PTRACE" in said[0] and "--cap-add SYS_PTRACE" in said[0]
    assert any(r.get("type") == "sample" for r in run)
    assert not any(r.get("type") == "event" and r.get("kind") == "phase_begin" for r in run)


@pytest.mark.parametrize("framework, script", [("lightning", LIGHTNING), ("keras", KERAS)], ids=["lightning", "keras"])
def test_a_framework_s_fit_attached_after_its_first_epoch(tmp_path: Path, framework: str, script: str) -> None:
    pytest.importorskip(framework)
    loop, run, text = attached_run(tmp_path, delay=0.004, width=256, epochs=6, text=script)
    sampled = passes(run)
    truths = whole_after(loop, run, sampled)
    validate = sum(p["validate"] for p in sampled.values())
    total = sum(p["validate"] + p["train"] + p["data"] for p in sampled.values())
    want = sum(t["validate"] for t in truths) / sum(t["total"] for t in truths)
    assert abs(100 * validate / total - 100 * want) <= SHARE_POINTS, (validate / total, want)
    assert "verdict: input-bound" in text


def test_a_recorder_killed_outright_leaves_the_process_running(tmp_path: Path) -> None:
    """SIGKILL to devicewatch (no handler, no clean-up: its watchdog is what remains) ends
    nothing of the process it watched."""
    loop = Loop(tmp_path, 4, 0.002, 64)
    try:
        loop.wait_for("ready")
        out = tmp_path / "killed.jsonl"
        watcher = attach(loop.process.pid, out)
        deadline = time.monotonic() + 60
        while not (out.exists() and '"phase_begin"' in out.read_text()):
            assert time.monotonic() < deadline and watcher.poll() is None
            time.sleep(0.05)
        watcher.kill()
        watcher.communicate(timeout=60)
        loop.finish()
    finally:
        loop.kill()
    assert loop.process.returncode == 0
    assert len(loop.truths()) == 4 and loop.checksum()


def test_a_launcher_that_is_not_python_names_its_python_child(tmp_path: Path) -> None:
    """Attached to the shell that started the training (a launcher, tmux, a job script), not to
    the training itself: the run says which process to attach to instead."""
    launcher = subprocess.Popen(["bash", "-c", f"{sys.executable} -c 'import time; time.sleep(120)'; true"])
    try:
        deadline = time.monotonic() + 60
        while not psutil.Process(launcher.pid).children():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        child = psutil.Process(launcher.pid).children()[0].pid
        out = tmp_path / "launcher.jsonl"
        watcher = attach(launcher.pid, out)
        deadline = time.monotonic() + 120
        while not (out.exists() and '"notice"' in out.read_text()):
            assert time.monotonic() < deadline and watcher.poll() is None, "nothing said of the launcher"
            time.sleep(0.1)
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=60)
    finally:
        for p in psutil.Process(launcher.pid).children(recursive=True):
            p.kill()
        launcher.kill()
        launcher.wait()
    (notice,) = [r for r in records(out) if r.get("type") == "notice"]
    assert f"it is bash, not Python; its Python child is {child} " in notice["message"], notice
    assert notice["message"].endswith(f"devicewatch attach {child}; recording without phases")
    assert err.count("not Python") == 1 and "Traceback" not in err
