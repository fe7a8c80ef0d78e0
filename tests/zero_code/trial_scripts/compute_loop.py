"""A plain PyTorch loop that only computes: a small network on batches already in memory, with
PyTorch's own number of operator threads (one per core). Knows nothing of devicewatch."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
inputs = torch.randn(8192, 256)
labels = inputs[:, :10].argmax(1)
loader = DataLoader(TensorDataset(inputs, labels), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
for epoch in range(epochs):
    model.train()
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.3f}", flush=True)
