"""A torchrun rank of a job that trains epoch after epoch until it is told how many (or ended).

Every epoch's train phase takes about STEP seconds, rank 1's SLOW_BY longer, and the ranks meet
at a barrier after it, so each finished epoch has a known straggler (rank 1, about SLOW_BY
ahead of the others' median in train). DEVICEWATCH_TEST_EPOCHS sets the number of epochs.
"""

import os
import time

import torch.distributed as dist

from devicewatch import events

STEP = 0.2
SLOW_BY = 0.3


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    epochs = int(os.environ.get("DEVICEWATCH_TEST_EPOCHS", "40"))
    events.run_info(framework="torch", device="cpu", data="synthetic", epochs=epochs)
    dist.barrier()
    for epoch in range(1, epochs + 1):
        with events.phase("train", epoch=epoch):
            time.sleep(STEP + (SLOW_BY if rank == 1 else 0.0))
        dist.barrier()
        events.epoch_metrics(epoch, loss=1.0 / epoch)
        print(f"epoch {epoch}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
