"""A PyTorch loop with gradient accumulation (one optimizer step every 4 batches), a
validation pass halfway through every epoch and another at its end, and early stopping on the
end-of-epoch validation loss (patience 1, at most 10 epochs).

Synthetic task: 3 classes in 20 features with heavy noise, so that the validation loss stops
improving after a few epochs. Early stopping asks for an improvement of at least
MIN_DELTA, so that the epoch it stops at does not hang on the last digits of a loss.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3
FEATURES = 20
ACCUMULATION_STEPS = 4
MAX_EPOCHS = 10
PATIENCE = 1
MIN_DELTA = 0.02


def make_data(n, g, centers):
    y = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    x = centers[y] + 3.0 * torch.randn(n, FEATURES, generator=g)
    return TensorDataset(x, y)


def evaluate(model, loader):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += F.cross_entropy(model(x), y, reduction="sum").item()
            count += len(y)
    model.train()
    return total / count


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(NUM_CLASSES, FEATURES, generator=g)
    train_loader = DataLoader(make_data(768, g, centers), batch_size=16, shuffle=True)  # 48 batches, 12 steps
    val_loader = DataLoader(make_data(512, g, centers), batch_size=128)

    model = nn.Sequential(nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, NUM_CLASSES))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-5)

    best, bad_epochs = float("inf"), 0
    for epoch in range(1, MAX_EPOCHS + 1):
        model.train()
        optimizer.zero_grad()
        steps = 0
        for i, (x, y) in enumerate(train_loader):
            loss = F.cross_entropy(model(x), y) / ACCUMULATION_STEPS
            loss.backward()
            if (i + 1) % ACCUMULATION_STEPS == 0:
                optimizer.step()
                optimizer.zero_grad()
                steps += 1
            if i + 1 == len(train_loader) // 2:
                print(f"epoch {epoch} half-way: val loss {evaluate(model, val_loader):.4f}")

        val_loss = evaluate(model, val_loader)
        print(f"epoch {epoch}: {steps} optimizer steps, val loss {val_loss:.4f}")
        if val_loss < best - MIN_DELTA:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
            if bad_epochs >= PATIENCE:
                print(f"early stopping after epoch {epoch} (best val loss {best:.4f})")
                break


if __name__ == "__main__":
    main()
