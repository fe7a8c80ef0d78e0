"""A step trainer: a DataLoader whose sampler draws with replacement practically forever,
one iterator for the whole run, an evaluation every 25 iterations, stopping at max_iters."""

import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, RandomSampler

MAX_ITERS = 75
EVAL_INTERVAL = 25
EVAL_ITERS = 4


class Tokens(Dataset):
    """Windows of a token stream, each read with a little latency."""

    def __init__(self, data, block_size):
        self.data, self.block_size = data, block_size

    def __len__(self):
        return len(self.data) - self.block_size - 1

    def __getitem__(self, i):
        time.sleep(0.0005)  # a memory-mapped read that misses the page cache
        chunk = self.data[i:i + self.block_size + 1]
        return chunk[:-1], chunk[1:]


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        h = self.embed(idx)
        return self.head(h + self.mlp(h))


def main():
    torch.manual_seed(0)
    data = torch.randint(0, 64, (20000,))
    train_set, val_set = Tokens(data[:18000], 32), Tokens(data[18000:], 32)
    sampler = RandomSampler(train_set, replacement=True, num_samples=int(1e10))
    train_loader = DataLoader(train_set, batch_size=16, sampler=sampler)
    val_loader = DataLoader(val_set, batch_size=16,
                            sampler=RandomSampler(val_set, replacement=True, num_samples=int(1e10)))
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = []
        for _, (x, y) in zip(range(EVAL_ITERS), val_loader):
            logits = model(x)
            losses.append(nn.functional.cross_entropy(logits.view(-1, 64), y.view(-1)).item())
        model.train()
        return sum(losses) / len(losses)

    wait = loop = 0.0
    steps, validations = [], []
    n = 0
    train_iter = iter(train_loader)
    model.train()
    for it in range(MAX_ITERS):
        start = time.perf_counter()
        x, y = next(train_iter)
        wait += time.perf_counter() - start
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.view(-1, 64), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        n += 1
        loop += time.perf_counter() - start

        if (it + 1) % EVAL_INTERVAL == 0:
            val_loss = estimate_loss()
            steps.append(n)
            validations.append(1)
            n = 0
            print(f"iter {it + 1}: train loss {loss.item():.3f} val loss {val_loss:.3f}", flush=True)

    truth = {"unit": "segment", "units": len(steps), "steps": steps, "validations": validations,
             "wait_share": round(wait / loop, 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
