"""A plain PyTorch loop of a few optimizer steps (its first argument, default 30) that ends long
before a trial's window is full; given ``fail`` as its second argument it then fails as a
script with a bad batch does: a traceback on its stderr and exit status 1. Knows nothing of
devicewatch."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.train()
for step in range(steps):
    x = torch.randn(64, 32)
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long())
    loss.backward()
    optimizer.step()


def check_batch(index):
    raise ValueError(f"batch {index} has 31 features, the model takes 32")


if sys.argv[2:] == ["fail"]:
    check_batch(steps)
print(f"trained {steps} steps", flush=True)
