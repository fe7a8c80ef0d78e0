"""A plain PyTorch loop whose Dataset waits on each item (a file or network read, as a sleep):
the loop waits on its DataLoader, which has no workers. Knows nothing of devicewatch."""

import time

import torch
from torch.utils.data import DataLoader, Dataset


class Sleepy(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        time.sleep(0.004)
        x = torch.randn(32, generator=torch.Generator().manual_seed(i))
        return x, int(x[0] > 0)


model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Sleepy(), batch_size=16, shuffle=True)
with open("training.log", "a") as log:   # a script that writes a file of its own
    for epoch in range(5):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}", file=log, flush=True)
