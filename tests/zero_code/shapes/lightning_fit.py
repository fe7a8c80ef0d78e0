"""A LightningModule fitted by a default-configured Trainer with a validation dataloader.

Synthetic task: 28x28 "images" where each of 4 classes lights up its own quadrant, plus noise.
"""

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_images(n, generator):
    labels = torch.randint(0, 4, (n,), generator=generator)
    images = 0.5 * torch.randn(n, 1, 28, 28, generator=generator)
    for c in range(4):
        r, q = divmod(c, 2)
        images[labels == c, :, r * 14:(r + 1) * 14, q * 14:(q + 1) * 14] += 1.0
    return TensorDataset(images, labels)


class LitClassifier(L.LightningModule):
    def __init__(self, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 7 * 7, 4),
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(dim=1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    L.seed_everything(42)
    g = torch.Generator().manual_seed(0)
    train_loader = DataLoader(make_images(640, g), batch_size=32, shuffle=True)   # 20 batches an epoch
    val_loader = DataLoader(make_images(256, g), batch_size=64)

    model = LitClassifier()
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False)
    trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)


if __name__ == "__main__":
    main()
