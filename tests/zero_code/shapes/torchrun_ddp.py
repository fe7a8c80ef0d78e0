"""DistributedDataParallel on CPU (gloo), launched by torchrun with two processes:

    python -m torch.distributed.run --standalone --nproc-per-node 2 torchrun_ddp.py

Each rank trains on its shard (DistributedSampler); after every epoch rank 0 alone runs the
validation set while the other rank waits for it at a barrier.

Synthetic task: 4 classes, each a fixed pattern in 64 features, plus noise.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

NUM_CLASSES = 4
FEATURES = 64
EPOCHS = 3


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(NUM_CLASSES, FEATURES, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    return TensorDataset(centers[y] + 2.0 * torch.randn(n, FEATURES, generator=g), y)


def main():
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    torch.manual_seed(0)

    train_set = make_data(2048, seed=1)
    sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True)
    # 2048 samples over 2 ranks: 1024 each, in batches of 32: 32 steps per rank and epoch
    train_loader = DataLoader(train_set, batch_size=32, sampler=sampler)

    model = nn.Sequential(nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, NUM_CLASSES))
    ddp_model = DDP(model)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01, momentum=0.9)

    if rank == 0:
        val_loader = DataLoader(make_data(16384, seed=2), batch_size=512)

    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        ddp_model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(ddp_model(x), y)
            loss.backward()
            optimizer.step()

        if rank == 0:
            model.eval()
            correct = 0
            with torch.no_grad():
                for x, y in val_loader:
                    correct += (model(x).argmax(1) == y).sum().item()
            print(f"epoch {epoch}: loss {loss.item():.4f} val acc {correct / len(val_loader.dataset):.3f}",
                  flush=True)
        dist.barrier()

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
