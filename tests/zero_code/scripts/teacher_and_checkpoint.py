"""A student distilled from a frozen teacher built and loaded before training (of another
class, or with ``same`` of the student's own), the teacher's ``eval()`` called after the
student's ``train()`` at every epoch's start; batches from a generator, 3 epochs of 8 steps, each validated; then the best
checkpoint is loaded back with ``torch.load`` and tested. Truth: 3 epochs, 8 steps each,
validations 1, 1, 2 (the test is the last epoch's second)."""

import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))

    def forward(self, x):
        return self.net(x)


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)


def batches(x, size):
    for i in range(0, len(x), size):
        time.sleep(0.03)  # reading the batch; a loop of a few ms a step also sends its phases faster than they are kept
        yield x[i:i + size]


def main():
    torch.manual_seed(0)
    x, x_val = torch.randn(256, 16), torch.randn(64, 16)
    teacher = Student() if sys.argv[1:] == ["same"] else Teacher()
    teacher.load_state_dict({k: torch.randn_like(v) for k, v in teacher.state_dict().items()})
    teacher.requires_grad_(False)
    student = Student()
    optimizer = torch.optim.SGD(student.parameters(), lr=0.05)
    with tempfile.TemporaryDirectory() as folder:
        best = Path(folder) / "best.pt"
        for epoch in range(3):
            student.train()
            teacher.eval()
            for xb in batches(x, 32):
                with torch.no_grad():
                    target = teacher(xb).softmax(-1)
                loss = nn.functional.cross_entropy(student(xb), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            student.eval()
            with torch.no_grad():
                val = nn.functional.cross_entropy(student(x_val), teacher(x_val).softmax(-1)).item()
            torch.save(student, best)
            print(f"epoch {epoch + 1}: val {val:.3f}", flush=True)
        model = torch.load(best, weights_only=False)
        model.eval()
        with torch.no_grad():
            test = nn.functional.cross_entropy(model(x_val), teacher(x_val).softmax(-1)).item()
        print(f"test {test:.3f}", flush=True)


if __name__ == "__main__":
    main()
