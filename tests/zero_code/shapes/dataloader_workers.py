"""A plain PyTorch loop whose Dataset reads every sample "from disk" (a short sleep standing in
for file I/O, then a little decoding work), loaded by a DataLoader with two worker processes.
Validated after every epoch.

    python dataloader_workers.py [--persistent-workers]

Synthetic task: 4 classes of 3x16x16 "images", each class a fixed colour pattern, plus noise.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 4


class DiskImages(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, NUM_CLASSES, size=n)
        self.seeds = rng.integers(0, 2**31, size=n)
        self.patterns = np.random.default_rng(1234).normal(size=(NUM_CLASSES, 3, 16, 16)).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        time.sleep(0.006)  # read the file
        rng = np.random.default_rng(self.seeds[idx])
        label = self.labels[idx]
        image = self.patterns[label] + rng.normal(scale=1.5, size=(3, 16, 16)).astype(np.float32)
        return torch.from_numpy(image), int(label)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, NUM_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--persistent-workers", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    train_set = DiskImages(384, seed=0)   # 384 / 32 = 12 batches an epoch
    val_set = DiskImages(128, seed=1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers, persistent_workers=args.persistent_workers)
    val_loader = DataLoader(val_set, batch_size=64, num_workers=args.workers,
                            persistent_workers=args.persistent_workers)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallCNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for epoch in range(1, args.epochs + 1):
        model.train()
        running = 0.0
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()

        model.eval()
        correct = 0
        with torch.no_grad():
            for images, labels in val_loader:
                images, labels = images.to(device), labels.to(device)
                correct += (model(images).argmax(1) == labels).sum().item()
        print(f"epoch {epoch}: train loss {running / len(train_loader):.4f} "
              f"val acc {correct / len(val_set):.3f}")


if __name__ == "__main__":
    main()
