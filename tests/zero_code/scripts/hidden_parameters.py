"""A wrapper that keeps its model's parameters to itself: asking for them is an error."""

import torch
from torch import nn


class Private(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def parameters(self, recurse=True):
        raise RuntimeError("this model's parameters are private")

    def forward(self, x):
        return self.inner(x)


torch.manual_seed(0)
inner = nn.Linear(4, 1)
model = Private(inner)
optimizer = torch.optim.SGD(inner.parameters(), lr=0.1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for epoch in range(2):
    model.train()
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        print(epoch, repr(nn.functional.mse_loss(model(x), y).item()))
