"""A plain PyTorch training loop whose Dataset is slow to produce each sample (it decodes
"files" that take a while), so the loop spends most of its time waiting for data.

    python slow_dataset.py [--workers N] [--epochs N]
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowImages(Dataset):
    def __init__(self, count, seed):
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.randn(count, 32, generator=generator)
        self.labels = torch.randint(0, 4, (count,), generator=generator)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        time.sleep(0.03)  # reading and decoding one sample
        return self.images[index], self.labels[index]


parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

torch.manual_seed(0)
train_loader = DataLoader(SlowImages(64, 1), batch_size=8, shuffle=True, num_workers=args.workers)
val_loader = DataLoader(SlowImages(16, 2), batch_size=8, num_workers=args.workers)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(args.epochs):
    model.train()
    for images, labels in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in val_loader:
            correct += (model(images).argmax(1) == labels).sum().item()
    print(f"epoch {epoch + 1}: loss {loss.item():.3f}, val accuracy {correct / 16:.2f}")
