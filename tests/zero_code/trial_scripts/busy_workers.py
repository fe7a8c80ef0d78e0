"""A plain PyTorch loop whose Dataset works for each item (a decode, in Python) on a DataLoader
with two workers that keep every core of a 2-core machine busy: the loop waits on them, and no
knob set from outside gives them more cores. Knows nothing of devicewatch."""

import math

import torch
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)


class Decoded(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        acc = 0.0
        for k in range(6000):   # the decode: about a millisecond of one core
            acc += math.sin(i + k)
        x = torch.randn(64, generator=torch.Generator().manual_seed(i)) + acc * 1e-6
        return x, int(x[0] > 0)


model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Decoded(), batch_size=16, shuffle=True, num_workers=2)
for epoch in range(20):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}", flush=True)
