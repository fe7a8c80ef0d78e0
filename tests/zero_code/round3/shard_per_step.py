"""Training data kept as shards on disk (written first, into a temporary folder): each step
loads one shard with ``torch.load`` from slow storage; one pass over the shard list is an
epoch, validated on a held-out shard."""

import json
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

SHARDS = 12


def write_shards(folder):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(48, 3, generator=g)
    paths = []
    for i in range(SHARDS + 1):
        x = torch.randn(64, 48, generator=g)
        path = Path(folder) / f"shard-{i:03d}.pt"
        torch.save({"x": x, "y": (x @ w).argmax(1)}, path)
        paths.append(path)
    return paths[:SHARDS], paths[SHARDS]


def read_shard(path):
    time.sleep(0.03)  # object storage: the shard's latency
    shard = torch.load(path)
    return shard["x"], shard["y"]


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        train_shards, val_shard = write_shards(folder)
        model = nn.Sequential(nn.Linear(48, 128), nn.GELU(), nn.Linear(128, 3))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        loss_fn = nn.CrossEntropyLoss()

        wait = loop = 0.0
        steps, validations = [], []
        for epoch in range(3):
            model.train()
            n = 0
            for path in train_shards:
                start = time.perf_counter()
                x, y = read_shard(path)
                wait += time.perf_counter() - start
                loss = loss_fn(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                n += 1
                loop += time.perf_counter() - start
            steps.append(n)

            model.eval()
            with torch.no_grad():
                x, y = read_shard(val_shard)
                acc = (model(x).argmax(1) == y).float().mean().item()
            validations.append(1)
            print(f"epoch {epoch + 1}: loss {loss.item():.3f} val acc {acc:.3f}", flush=True)

    truth = {"unit": "epoch", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(wait / loop, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
