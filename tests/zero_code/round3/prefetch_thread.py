"""A small classifier fed by a background thread: the thread runs the DataLoader and fills a
queue, the training loop takes its batches from the queue (the BackgroundGenerator recipe)."""

import json
import queue
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDisk(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        self.y = (self.x[:, 0] + self.x[:, 1] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.002)  # one sample from a slow disk
        return self.x[i], self.y[i]


class BackgroundGenerator:
    """Reads ahead of the training loop in a thread of its own."""

    def __init__(self, loader, max_prefetch=4):
        self.queue = queue.Queue(max_prefetch)
        self.thread = threading.Thread(target=self._fill, args=(loader,), daemon=True)
        self.thread.start()

    def _fill(self, loader):
        for batch in loader:
            self.queue.put(batch)
        self.queue.put(None)

    def __iter__(self):
        return self

    def __next__(self):
        batch = self.queue.get()
        if batch is None:
            raise StopIteration
        return batch


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(SlowDisk(256, 0), batch_size=16, shuffle=True)
    val_loader = DataLoader(SlowDisk(64, 1), batch_size=32)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()

    data_time = batch_time = 0.0
    steps, validations = [], []
    for epoch in range(3):
        model.train()
        n = 0
        end = time.perf_counter()
        for x, y in BackgroundGenerator(train_loader):
            data_time += time.perf_counter() - end
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            n += 1
            batch_time += time.perf_counter() - end
            end = time.perf_counter()
        steps.append(n)

        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        validations.append(1)
        print(f"epoch {epoch + 1}: loss {loss.item():.3f} val acc {correct / 64:.2f}", flush=True)

    truth = {"unit": "epoch", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(data_time / batch_time, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
