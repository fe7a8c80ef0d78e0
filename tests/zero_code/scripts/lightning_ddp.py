"""The LightningModule of lightning_module.py trained data-parallel on CPU processes, one
Trainer per torchrun process, whatever the number of nodes and processes per node."""

import os

import lightning as L

from lightning_module import Regressor, loader

if __name__ == "__main__":
    L.seed_everything(0)
    per_node = int(os.environ["LOCAL_WORLD_SIZE"])
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=per_node, strategy="ddp",
                        num_nodes=int(os.environ["WORLD_SIZE"]) // per_node, enable_progress_bar=False)
    trainer.fit(Regressor(), loader(256, 1, True), loader(64, 2, False))
