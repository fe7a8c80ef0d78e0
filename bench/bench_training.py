"""What the training workload's harness costs: its epoch loop (phase events to a live FIFO,
per-step timing, loss and accuracy sums, epoch metrics) against a bare loop of the same model,
optimizer and batch size. Repetitions alternate (bare, harness, harness, bare, …) so that load
from other processes falls on both alike; the figure is the ratio of their total times.

    python -m bench.bench_training [--model cnn|dense] [--steps 20] [--repeats 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time

BUDGET = 1.05  # the harness may add at most 5 %


def drain(path: str) -> None:
    """Stand in for the recorder: read the event FIFO until every writer has gone."""
    with open(path, "rb") as fifo:
        while fifo.read(65536):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_training", description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["cnn", "dense"], default="cnn")
    parser.add_argument("--steps", type=int, default=None, help="steps per repetition (default 20 cnn, 400 dense)")
    parser.add_argument("--repeats", type=int, default=4, help="repetitions of each loop (default 4)")
    args = parser.parse_args(argv)
    steps = args.steps or (20 if args.model == "cnn" else 400)

    fifo_dir = tempfile.mkdtemp(prefix="bench-training-")
    fifo = os.path.join(fifo_dir, "events")
    os.mkfifo(fifo)
    reader = threading.Thread(target=drain, args=(fifo,), daemon=True)
    reader.start()
    os.environ["DEVICEWATCH_EVENTS"] = fifo

    import numpy as np
    import torch
    import torch.nn.functional as F

    from devicewatch import events
    from workloads.training import data, torch_run
    from workloads.training.steptimes import StepTimes

    batch = 32
    torch.manual_seed(0)
    x_nhwc, y = data.synthetic_cifar(steps * batch)
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
    order = np.arange(len(x))
    device = torch.device("cpu")
    model = torch_run.build_model(args.model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

    def bare() -> None:
        model.train()
        for step in range(steps):
            index = order[step * batch:(step + 1) * batch]
            xb = torch.from_numpy(x[index]).float().div_(255.0)
            yb = torch.from_numpy(y[index])
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()

    epoch = 0

    def harness() -> None:
        nonlocal epoch
        epoch += 1
        timer = StepTimes()
        with events.phase("train", epoch=epoch):
            loss_sum, correct, seen = torch_run.train_epoch(model, optimizer, x, y, order, steps, batch,
                                                            device, timer)
        events.epoch_metrics(epoch, loss=loss_sum / seen, accuracy=correct / seen, **timer.summary())

    bare()  # warm-up: first-call allocations and kernel selection
    totals = {"bare": 0.0, "harness": 0.0}
    loops = {"bare": bare, "harness": harness}
    for repeat in range(args.repeats):
        for name in (("bare", "harness") if repeat % 2 == 0 else ("harness", "bare")):
            began = time.perf_counter()
            loops[name]()
            totals[name] += time.perf_counter() - began
    os.environ.pop("DEVICEWATCH_EVENTS")

    total_steps = steps * args.repeats
    ratio = totals["harness"] / totals["bare"]
    print(f"model {args.model}, batch {batch}, {total_steps} steps per loop, torch threads {torch.get_num_threads()}")
    for name in ("bare", "harness"):
        print(f"  {name:8s} {total_steps / totals[name]:8.2f} steps/s  ({1000 * totals[name] / total_steps:.1f} ms/step)")
    verdict = "within" if ratio <= BUDGET else "OVER"
    print(f"  harness / bare = {ratio:.3f}  ({verdict} the {BUDGET:.2f} budget)")
    return 0 if ratio <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
