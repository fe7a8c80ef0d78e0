"""A LightningModule trained by a default Trainer (progress bar and all), two epochs with validation."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def loader(n, seed, shuffle):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16, shuffle=shuffle)


if __name__ == "__main__":
    L.seed_everything(0)
    trainer = L.Trainer(max_epochs=2, accelerator="cpu")
    trainer.fit(Regressor(), loader(256, 1, True), loader(64, 2, False))
