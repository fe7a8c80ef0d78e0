"""A small regression trained for two epochs from a DataLoader, printing what it learned."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(256, 8)
y = x @ torch.arange(8.0).unsqueeze(1) + 0.1 * torch.randn(256, 1)
train = DataLoader(TensorDataset(x[:192], y[:192]), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(x[192:], y[192:]), batch_size=16)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)

for epoch in range(1, 3):
    model.train()
    for xb, yb in train:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = sum(nn.functional.mse_loss(model(xb), yb, reduction="sum").item() for xb, yb in val) / 64
    print(f"epoch {epoch}: train loss {loss.item()!r} val loss {val_loss!r}")
print("weights", repr(sum(p.double().sum().item() for p in model.parameters())))
print("done", file=sys.stderr)
