"""A step budget over ``itertools.cycle(train_loader)``, evaluating every 20 steps. cycle reads
the loader once and replays the batches it kept, so only the first pass pays for the disk."""

import itertools
import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

MAX_STEPS = 60
EVAL_EVERY = 20


class SlowDisk(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 64, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.002)  # one sample from a slow disk
        return self.x[i], self.y[i]


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(SlowDisk(256, 0), batch_size=16, shuffle=True)
    val_loader = DataLoader(SlowDisk(64, 1), batch_size=64)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    batches = itertools.cycle(train_loader)
    wait = loop = 0.0
    steps, validations = [], []
    n = 0
    model.train()
    for step in range(1, MAX_STEPS + 1):
        start = time.perf_counter()
        x, y = next(batches)
        wait += time.perf_counter() - start
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        n += 1
        loop += time.perf_counter() - start

        if step % EVAL_EVERY == 0:
            model.eval()
            with torch.no_grad():
                val_loss = sum(loss_fn(model(x), y).item() for x, y in val_loader)
            model.train()
            steps.append(n)
            validations.append(1)
            n = 0
            print(f"step {step}: loss {loss.item():.3f} val loss {val_loss:.3f}", flush=True)

    truth = {"unit": "segment", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(wait / loop, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
