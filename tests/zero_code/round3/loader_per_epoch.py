"""A classifier whose DataLoader is built anew at the top of every epoch (a batch size that
grows with the epoch), over the same in-memory data set; validated after each epoch."""

import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    x = torch.randn(1280, 20)
    y = (x[:, :3].sum(1) > 0).long()
    train_set = TensorDataset(x[:1024], y[:1024])
    val_loader = DataLoader(TensorDataset(x[1024:], y[1024:]), batch_size=128)
    model = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    data_time = batch_time = 0.0
    steps, validations = [], []
    for epoch, batch_size in enumerate((16, 32, 64)):
        train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)
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

        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in val_loader:
                correct += (model(xb).argmax(1) == yb).sum().item()
        validations.append(1)
        print(f"epoch {epoch + 1} (batch {batch_size}): loss {loss.item():.3f} acc {correct / 256:.3f}", flush=True)

    truth = {"unit": "epoch", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(data_time / batch_time, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
