"""Serial, tf.data / DataLoader, and overlapped training and validation of a small MNIST CNN.

The source (002) saw the GPU idle every epoch while the CPU prepared data and validated,
and removed most of that dip by validating copies of each epoch's final weights on a pool
of threads while training went on. Here the same four schemes run on the CPU; the
dashboard shows the training lane, the validation lanes and the cores side by side.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any

from devicewatch import events

TITLE = "Training vs validation overlap: serial NumPy, tf.data/DataLoader and overlapped threads on an MNIST CNN"
SOURCE = "002: overlapping training and validation with a model copy and a validation thread pool"
NAME = "pipeline"
VARIANT_NAMES = ("serial", "tfdata", "dataloader", "overlapped")
SUPPORTED = {
    "tensorflow": ("serial", "tfdata", "overlapped"),
    "torch": ("serial", "dataloader", "overlapped"),
}
MODEL_LAYERS = "Conv(16,3x3,relu)-MaxPool(2)-Conv(32,3x3,relu)-MaxPool(2)-Flatten-Dense(64,relu)-Dense(10)"


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad option in one line, without the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]  # argparse's error never returns; ours raises
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog=NAME, description=TITLE)
    p.add_argument("--variant", choices=VARIANT_NAMES, default="overlapped",
                   help="serial | tfdata (tensorflow) | dataloader (torch) | overlapped (default)")
    p.add_argument("--backend", choices=["torch", "tensorflow"], default="torch",
                   help="torch (default) or tensorflow (Keras 3 on TensorFlow, as the source)")
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu",
                   help="where torch trains and validates: cpu (default), cuda, or auto (cuda when "
                        "available); tensorflow places operations itself")
    p.add_argument("--epochs", type=int, default=3, help="epochs (default 3; the source ran 10)")
    p.add_argument("--threads", type=int, default=2,
                   help="parallel calls of tf.data, DataLoader workers, or validation threads (default 2; "
                        "the source used 1, 6 and 48); serial ignores it")
    p.add_argument("--intra-threads", type=int, default=1,
                   help="the framework's intra-op threads per operation (default 1; 0 = the framework's own "
                        "choice, all cores); see docs/workload-pipeline.md")
    p.add_argument("--batch", type=int, default=128, help="batch size (default 128)")
    p.add_argument("--data", metavar="NPZ", help="MNIST .npz with x_train, y_train, x_test, y_test; "
                                                 "without it, synthetic digits")
    p.add_argument("--train-samples", type=int, default=None,
                   help="training samples (default 12000; all of --data when given)")
    p.add_argument("--val-samples", type=int, default=None,
                   help="validation samples (default 10000, the size of MNIST's test set)")
    p.add_argument("--inflate-gb", type=float, default=0.0,
                   help="replicate the training set to about this many GB of raw pixels (source: 1)")
    p.add_argument("--chunk", type=int, default=65536,
                   help="samples the NumPy pipeline prepares at once (default 65536: MNIST in one go)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--summary", metavar="JSON", help="also write the run's timings and epochs to this file")
    return p


def _check(args: argparse.Namespace) -> str | None:
    for name in ("epochs", "threads", "batch", "chunk"):
        if getattr(args, name) < 1:
            return f"--{name} must be at least 1"
    for name in ("train_samples", "val_samples"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return f"--{name.replace('_', '-')} must be at least 1"
    if args.intra_threads < 0:
        return "--intra-threads must be 0 (framework default) or more"
    if args.inflate_gb < 0 or args.inflate_gb > 4:
        return "--inflate-gb must be between 0 and 4"
    if args.device == "cuda" and args.backend != "torch":
        return "--device cuda goes with --backend torch (tensorflow places operations itself)"
    if args.variant not in SUPPORTED[args.backend]:
        return (f"--variant {args.variant} does not run on --backend {args.backend} "
                f"(it offers {', '.join(SUPPORTED[args.backend])})")
    return None


def _load_data(args: argparse.Namespace) -> Any:
    from workloads.pipeline import data as datamod

    if args.data:
        d = datamod.load_npz(args.data, args.train_samples, args.val_samples or 10_000)
    else:
        d = datamod.synthetic(args.train_samples or 12_000, args.val_samples or 10_000, args.seed)
    if args.inflate_gb:
        d = datamod.inflate(d, args.inflate_gb)
    return d


def build_model(backend: str, seed: int, intra_threads: int, device: str = "cpu") -> Any:
    if backend == "torch":
        from workloads.pipeline.model_torch import TorchModel
        return TorchModel(seed, intra_threads, device)
    from workloads.pipeline.model_tf import KerasModel
    return KerasModel(seed, intra_threads)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    problem = _check(args)
    if problem:
        print(f"{NAME}: {problem}", file=sys.stderr)
        return 2
    from workloads.pipeline import data as datamod
    from workloads.pipeline import schemes

    print_lock = threading.Lock()

    def echo(line: str) -> None:
        with print_lock:
            print(line, flush=True)

    stop = threading.Event()
    # A process started in the background inherits SIGINT ignored; Ctrl-C and devicewatch's
    # cancel must still stop the run, so take SIGINT back explicitly.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            d = _load_data(args)
        except datamod.DataError as exc:
            print(f"{NAME}: {exc}", file=sys.stderr)
            return 2
        except FileNotFoundError:
            print(f"{NAME}: no such data file: {args.data}", file=sys.stderr)
            return 2
        try:
            model = build_model(args.backend, args.seed, args.intra_threads, args.device)
        except ImportError as exc:
            if str(exc).startswith("--device"):
                print(f"{NAME}: {exc}", file=sys.stderr)
            else:
                print(f"{NAME}: --backend {args.backend} is not installed ({exc})", file=sys.stderr)
            return 2
        settings = schemes.Settings(args.variant, args.epochs, args.threads, args.batch, args.chunk, args.seed)
        outcome = schemes.Outcome()
        reporter = schemes.Reporter(args.epochs, outcome, echo)
        events.run_info(workload=NAME, variant=args.variant, backend=args.backend, framework=model.framework,
                        device=getattr(model, "device_name", "cpu"), threads=args.threads,
                        intra_threads=model.intra_threads, data=d.source,
                        params=model.params, epochs=args.epochs, batch_size=args.batch,
                        train_samples=len(d.x_train), val_samples=len(d.x_val), model=MODEL_LAYERS)
        echo(f"{NAME}: {args.variant} on {args.backend}, {args.threads} thread(s), {model.intra_threads} intra-op, "
             f"{len(d.x_train)} training / {len(d.x_val)} validation samples ({d.source}), "
             f"{args.epochs} epochs, {model.params} parameters")
        began = time.perf_counter()
        schemes.VARIANTS[args.variant](model, d, settings, reporter, stop)
        outcome.total_s = time.perf_counter() - began
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (workloads.Stopped): stop the threads, then workloads.run says so
        stop.set()
        raise
    summary = {"variant": args.variant, "backend": args.backend, "threads": args.threads,
               "intra_threads": model.intra_threads, "data": d.source, "total_s": round(outcome.total_s, 4),
               "train_lane_s": round(outcome.train_lane_s, 4), "last_validate_s": round(outcome.last_validate_s, 4),
               "epochs": outcome.epochs}
    events.result(f"{args.variant}/{args.backend}", total_s=summary["total_s"],
                  train_lane_s=summary["train_lane_s"], last_validate_s=summary["last_validate_s"])
    echo(f"{NAME}: total {outcome.total_s:.2f} s (training lane {outcome.train_lane_s:.2f} s, "
         f"last validation {outcome.last_validate_s:.2f} s)")
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=1)
    return 0
