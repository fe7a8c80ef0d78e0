"""A regression model trained on batches yielded by a generator function that reads each
batch from "disk"; one pass of the generator is an epoch, validated after each."""

import json
import time

import torch
from torch import nn


def batches(x, y, batch_size, shuffle=True):
    order = torch.randperm(len(x)) if shuffle else torch.arange(len(x))
    for i in range(0, len(x), batch_size):
        idx = order[i:i + batch_size]
        time.sleep(0.02)  # reading the batch's files
        yield x[idx], y[idx]


def main():
    torch.manual_seed(0)
    x = torch.randn(384, 16)
    y = x @ torch.randn(16, 1) + 0.1 * torch.randn(384, 1)
    x_train, y_train, x_val, y_val = x[:320], y[:320], x[320:], y[320:]
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    data_time = batch_time = 0.0
    steps, validations = [], []
    for epoch in range(3):
        model.train()
        n = 0
        end = time.perf_counter()
        for xb, yb in batches(x_train, y_train, 32):
            data_time += time.perf_counter() - end
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            n += 1
            batch_time += time.perf_counter() - end
            end = time.perf_counter()
        steps.append(n)

        model.eval()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb).item()
                      for xb, yb in batches(x_val, y_val, 32, shuffle=False))
        validations.append(1)
        print(f"epoch {epoch + 1}: train mse {loss.item():.4f} val mse {val / 2:.4f}", flush=True)

    truth = {"unit": "epoch", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(data_time / batch_time, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
