"""A small classifier trained with Hugging Face Accelerate, evaluated after every epoch.

Synthetic task: 4 classes, each a fixed random pattern in 32 features, plus noise.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4
FEATURES = 32


def make_data(n, generator, centers):
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    x = centers[labels] + 3.0 * torch.randn(n, FEATURES, generator=generator)
    return TensorDataset(x, labels)


def main():
    accelerator = Accelerator()
    set_seed(1234)

    g = torch.Generator().manual_seed(0)
    centers = torch.randn(NUM_CLASSES, FEATURES, generator=g)
    train_ds = make_data(1280, g, centers)   # 1280 / 32 = 40 batches an epoch
    eval_ds = make_data(256, g, centers)
    train_dl = DataLoader(train_ds, batch_size=32, shuffle=True)
    eval_dl = DataLoader(eval_ds, batch_size=64)

    model = nn.Sequential(nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, NUM_CLASSES))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    model, optimizer, train_dl, eval_dl = accelerator.prepare(model, optimizer, train_dl, eval_dl)

    num_epochs = 3
    for epoch in range(num_epochs):
        model.train()
        for inputs, targets in train_dl:
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = F.cross_entropy(outputs, targets)
            accelerator.backward(loss)
            optimizer.step()

        model.eval()
        correct, total = 0, 0
        for inputs, targets in eval_dl:
            with torch.no_grad():
                outputs = model(inputs)
            predictions = outputs.argmax(dim=-1)
            predictions, targets = accelerator.gather_for_metrics((predictions, targets))
            correct += (predictions == targets).sum().item()
            total += targets.numel()
        accelerator.print(f"epoch {epoch}: loss {loss.item():.4f} accuracy {correct / total:.3f}")


if __name__ == "__main__":
    main()
