"""A tiny Lightning fit on the CPU with the devicewatch callback: 2 epochs, validation each."""

import lightning
import torch
from torch.utils.data import DataLoader, TensorDataset

from devicewatch.integrations.lightning import DevicewatchCallback


class Regression(lightning.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)  # 8 weights + 1 bias

    def training_step(self, batch, _index):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, _index):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def loader(n):
    x = torch.randn(n, 8)
    return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=16)


if __name__ == "__main__":
    torch.manual_seed(0)
    trainer = lightning.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False,
                                enable_model_summary=False, callbacks=[DevicewatchCallback()])
    trainer.fit(Regression(), loader(64), loader(32))
