"""A step loop that draws every batch with ``next(iter(train_loader))``: with two workers the
loader starts its workers anew at every step. Evaluates every 10 steps."""

import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

MAX_STEPS = 30
EVAL_EVERY = 10


class SlowDisk(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.001)  # one sample from a slow disk
        return self.x[i], self.y[i]


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(SlowDisk(512, 0), batch_size=16, shuffle=True, num_workers=2)
    val_loader = DataLoader(SlowDisk(64, 1), batch_size=32)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    wait = loop = 0.0
    steps, validations = [], []
    n = 0
    for step in range(1, MAX_STEPS + 1):
        model.train()
        start = time.perf_counter()
        x, y = next(iter(train_loader))
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
                val_loss = sum(loss_fn(model(x), y).item() for x, y in val_loader) / len(val_loader)
            steps.append(n)
            validations.append(1)
            n = 0
            print(f"step {step}: train loss {loss.item():.3f} val loss {val_loss:.3f}", flush=True)

    truth = {"unit": "segment", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(wait / loop, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
