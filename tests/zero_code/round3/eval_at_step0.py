"""Evaluate the untrained model first (the baseline at step 0), then train three epochs,
evaluating after each."""

import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def evaluate(model, loader, loss_fn):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += loss_fn(model(x), y).item() * len(x)
    return total / len(loader.dataset)


def main():
    torch.manual_seed(0)
    x = torch.randn(960, 24)
    y = torch.sin(x[:, :4]).sum(1, keepdim=True)
    train_loader = DataLoader(TensorDataset(x[:768], y[:768]), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[768:], y[768:]), batch_size=64)
    model = nn.Sequential(nn.Linear(24, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    print(f"step 0: val loss {evaluate(model, val_loader, loss_fn):.4f}", flush=True)

    data_time = batch_time = 0.0
    steps, validations = [], []
    for epoch in range(3):
        model.train()
        n = 0
        end = time.perf_counter()
        for xb, yb in train_loader:
            data_time += time.perf_counter() - end
            loss = loss_fn(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            n += 1
            batch_time += time.perf_counter() - end
            end = time.perf_counter()
        steps.append(n)
        val_loss = evaluate(model, val_loader, loss_fn)
        validations.append(1)
        print(f"epoch {epoch + 1}: loss {loss.item():.4f} val loss {val_loss:.4f}", flush=True)

    truth = {"unit": "epoch", "units": len(steps), "steps": steps, "validations": validations,
             "validations_before_training": 1, "wait_share": round(data_time / batch_time, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
