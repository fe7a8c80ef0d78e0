"""A torchrun rank that trains a few tiny epochs under devicewatch.events phases.

Rank 1 spends SLOW_BY seconds more in every train phase, and every rank meets the others at a
barrier after it, so the merged run has a known straggler (rank 1) and a known wait (rank 0,
about SLOW_BY). DEVICEWATCH_TEST_LINGER=S keeps rank 0 alive S seconds after its last event,
the way a node's torchrun agent can sit in its exit barrier after training.
"""

import os
import time

import torch
import torch.distributed as dist

from devicewatch import events

EPOCHS = 3
SLOW_BY = 0.3


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    events.run_info(framework="torch", device="cpu", params=sum(p.numel() for p in model.parameters()),
                    data="synthetic", epochs=EPOCHS)
    dist.barrier()
    for epoch in range(1, EPOCHS + 1):
        with events.phase("train", epoch=epoch):
            loss = model(torch.randn(64, 8)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if rank == 1:
                time.sleep(SLOW_BY)
        dist.barrier()
        events.epoch_metrics(epoch, loss=loss.item())
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    events.marker("trained")
    dist.destroy_process_group()
    if rank == 0:
        time.sleep(float(os.environ.get("DEVICEWATCH_TEST_LINGER", "0")))


if __name__ == "__main__":
    main()
