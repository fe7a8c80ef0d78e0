"""A torch loop that says its own phases through devicewatch.events."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from devicewatch import events

torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(1, 3):
    with events.phase("train", epoch=epoch):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    with events.phase("validate", epoch=epoch, lane="validate"):
        model.eval()
        with torch.no_grad():
            for x, y in loader:
                model(x)
