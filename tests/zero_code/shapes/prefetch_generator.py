"""A plain PyTorch loop that drives its DataLoader through a hand-written prefetcher (the
"DataPrefetcher" pattern of CUDA training scripts, kept for CPU): the next batch is fetched
as soon as the current one is handed out. Validated after every epoch.

Synthetic task: 6 classes, each a fixed pattern in 256 features, plus noise (the Dataset adds
the noise per sample, as augmentation).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 6
FEATURES = 256


class NoisyPatterns(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.centers = torch.randn(NUM_CLASSES, FEATURES, generator=torch.Generator().manual_seed(99))
        self.labels = torch.randint(0, NUM_CLASSES, (n,), generator=g)
        self.noise = 1.5 * torch.randn(n, FEATURES, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        y = self.labels[i]
        return self.centers[y] + self.noise[i], y


class DataPrefetcher:
    """Keeps one batch ahead of the loop (moves it to the device early on a GPU)."""

    def __init__(self, loader, device):
        self.loader = iter(loader)
        self.device = device
        self.preload()

    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = None
            self.next_target = None
            return
        self.next_input = self.next_input.to(self.device, non_blocking=True)
        self.next_target = self.next_target.to(self.device, non_blocking=True)

    def next(self):
        input, target = self.next_input, self.next_target
        self.preload()
        return input, target


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(NoisyPatterns(1024, seed=1), batch_size=64, shuffle=True,
                              pin_memory=torch.cuda.is_available())   # 1024 / 64 = 16 batches an epoch
    val_loader = DataLoader(NoisyPatterns(256, seed=2), batch_size=128)

    model = nn.Sequential(nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, NUM_CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    for epoch in range(3):
        model.train()
        prefetcher = DataPrefetcher(train_loader, device)
        input, target = prefetcher.next()
        i = 0
        while input is not None:
            output = model(input)
            loss = F.cross_entropy(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            i += 1
            input, target = prefetcher.next()

        model.eval()
        correct = 0
        with torch.no_grad():
            prefetcher = DataPrefetcher(val_loader, device)
            input, target = prefetcher.next()
            while input is not None:
                correct += (model(input).argmax(1) == target).sum().item()
                input, target = prefetcher.next()
        print(f"epoch {epoch}: {i} steps, last loss {loss.item():.4f}, "
              f"val acc {correct / len(val_loader.dataset):.3f}")


if __name__ == "__main__":
    main()
