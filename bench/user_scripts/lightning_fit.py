"""A LightningModule (a small CNN on CIFAR-100-sized images) fitted by a Trainer that picks the
GPU when there is one, validating every epoch. Nothing here knows of devicewatch.

Without a data set on disk it makes one: each class has its own pattern, and every image is its
class's pattern plus noise, so the network learns (val_acc rises).

    python lightning_fit.py [--epochs 3] [--train-samples 20000] [--root DIR]
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LitCNN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 3, padding=1), nn.BatchNorm2d(256), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(256 * 4 * 4, 100))

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = nn.functional.cross_entropy(self.net(images), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        images, labels = batch
        logits = self.net(images)
        self.log("val_loss", nn.functional.cross_entropy(logits, labels))
        self.log("val_acc", (logits.argmax(1) == labels).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)


def images(count, seed):
    generator = torch.Generator().manual_seed(seed)
    patterns = torch.randn(100, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    labels = torch.randint(0, 100, (count,), generator=generator)
    return TensorDataset(patterns[labels] + 1.0 * torch.randn(count, 3, 32, 32, generator=generator), labels)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train-samples", type=int, default=20000)
    parser.add_argument("--val-samples", type=int, default=4000)
    parser.add_argument("--root", default="lightning_runs", help="where Lightning writes its logs and checkpoints")
    args = parser.parse_args()
    L.seed_everything(0)
    train = DataLoader(images(args.train_samples, 1), batch_size=128, shuffle=True)
    val = DataLoader(images(args.val_samples, 2), batch_size=256)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="auto", devices=1, default_root_dir=args.root)
    trainer.fit(LitCNN(), train, val)
