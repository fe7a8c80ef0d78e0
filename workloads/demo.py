"""A small NumPy workload with data, train and validate phases: devicewatch without a framework.

Each epoch first prepares its data the way a naive input pipeline does, one sample at a
time in a Python loop (random shift and noise: one core busy, the others idle), then trains
a softmax classifier over random ReLU features by mini-batch gradient descent (matrix
products on every core through BLAS), then validates on held-out data. Real work in every
phase, so the per-core chart shows the pattern devicewatch exists for: a serial data phase
leaving cores idle between parallel compute phases.
"""

from __future__ import annotations

import argparse
import sys
import time

from devicewatch import events

TITLE = "NumPy classifier: a serial data phase, then parallel train and validate, every epoch (no framework)"
SOURCE = ""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="demo", description=TITLE)
    parser.add_argument("--epochs", type=int, default=5, help="number of epochs (default 5)")
    parser.add_argument("--samples", type=int, default=30_000, help="training samples (default 30000)")
    parser.add_argument("--features", type=int, default=512, help="features per sample (default 512)")
    parser.add_argument("--hidden", type=int, default=1024, help="width of the random feature layer (default 1024)")
    parser.add_argument("--batch", type=int, default=256, help="batch size (default 256)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("epochs", "samples", "features", "hidden", "batch"):
        if getattr(args, name) < 1:
            print(f"demo: --{name} must be at least 1", file=sys.stderr)
            return 2
    import numpy as np

    classes = 10
    rng = np.random.default_rng(args.seed)
    centers = rng.normal(size=(classes, args.features)).astype(np.float32)
    total = args.samples + args.samples // 5
    labels = rng.integers(0, classes, size=total)
    x = (centers[labels] + 8.0 * rng.normal(size=(total, args.features))).astype(np.float32)
    x /= x.std()  # unit scale keeps the logits, and so the learning rate, sensible
    x_train, y_train = x[: args.samples], labels[: args.samples]
    x_val, y_val = x[args.samples:], labels[args.samples:]
    projection = (rng.normal(size=(args.features, args.hidden)) / np.sqrt(args.features)).astype(np.float32)
    weights = np.zeros((args.hidden, classes), dtype=np.float32)

    def forward(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hidden = np.maximum(batch @ projection, 0.0)
        logits = hidden @ weights
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return hidden, probs

    events.run_info(framework="numpy", device="cpu", params=int(projection.size + weights.size),
                    data="synthetic", epochs=args.epochs, batch_size=args.batch, samples=args.samples)
    print(f"demo: {args.samples} samples, {args.epochs} epochs, batch {args.batch}", flush=True)
    for epoch in range(1, args.epochs + 1):
        with events.phase("data", epoch=epoch):
            # One sample at a time, as a naive pipeline augments: a random shift and noise.
            augmented = np.empty_like(x_train)
            shifts = rng.integers(-2, 3, size=args.samples)
            for i in range(args.samples):
                augmented[i] = np.roll(x_train[i], shifts[i]) + rng.normal(0.0, 0.1, args.features).astype(np.float32)
        started = time.perf_counter()
        with events.phase("train", epoch=epoch):
            order = rng.permutation(args.samples)
            loss_sum = 0.0
            for start in range(0, args.samples, args.batch):
                idx = order[start:start + args.batch]
                hidden, probs = forward(augmented[idx])
                targets = y_train[idx]
                loss_sum += float(-np.log(probs[np.arange(len(idx)), targets] + 1e-9).sum())
                probs[np.arange(len(idx)), targets] -= 1.0
                weights -= 0.02 * (hidden.T @ probs) / len(idx)
        train_seconds = time.perf_counter() - started
        with events.phase("validate", epoch=epoch):
            _, probs = forward(x_val)
            val_loss = float(-np.log(probs[np.arange(len(y_val)), y_val] + 1e-9).mean())
            val_accuracy = float((probs.argmax(axis=1) == y_val).mean())
        loss = loss_sum / args.samples
        events.epoch_metrics(epoch, loss=round(loss, 4), val_loss=round(val_loss, 4),
                             val_accuracy=round(val_accuracy, 4), train_s=round(train_seconds, 3))
        print(f"Epoch {epoch}/{args.epochs} - loss {loss:.4f} - val_loss {val_loss:.4f} "
              f"- val_accuracy {val_accuracy:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    import workloads

    sys.exit(workloads.run("demo", main))
