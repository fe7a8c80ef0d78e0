"""Train a small CNN on CIFAR-100-sized images with a plain PyTorch loop.

The Dataset augments every image on the CPU (a random crop of the padded image, a flip, then
per-image normalisation) in __getitem__, and the DataLoader starts no worker processes unless
asked: the usual first version of a training script. Nothing here knows of devicewatch.

Without a data set on disk it makes one: each class has its own smooth pattern of colour, and
every image is its class's pattern plus noise, so the network learns (the accuracy printed each
epoch rises).

    python cifar_loop.py [--epochs 3] [--train-samples 20000] [--batch-size 128] [--workers 0]
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class AugmentedImages(Dataset):
    def __init__(self, count, seed, augment):
        generator = torch.Generator().manual_seed(seed)
        # smooth patterns (blobs of colour), so that a shifted or mirrored image is still its class
        coarse = torch.randn(100, 3, 4, 4, generator=torch.Generator().manual_seed(0))
        patterns = 2 * nn.functional.interpolate(coarse, size=(32, 32), mode="bilinear", align_corners=False)
        self.labels = torch.randint(0, 100, (count,), generator=generator)
        self.images = patterns[self.labels] + 1.0 * torch.randn(count, 3, 32, 32, generator=generator)
        self.augment = augment

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = self.images[index]
        if self.augment:
            padded = nn.functional.pad(image[None], (4, 4, 4, 4), mode="reflect")[0]
            x, y = torch.randint(0, 9, (2,)).tolist()
            image = padded[:, y:y + 32, x:x + 32]
            if torch.rand(()) < 0.5:
                image = image.flip(2)
        return (image - image.mean()) / (image.std() + 1e-6), self.labels[index]


def network():
    def block(c_in, c_out):
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
                             nn.Conv2d(c_out, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
                             nn.MaxPool2d(2))
    return nn.Sequential(block(3, 64), block(64, 128), block(128, 256), nn.Flatten(),
                         nn.Linear(256 * 4 * 4, 512), nn.ReLU(), nn.Dropout(0.3), nn.Linear(512, 100))


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--train-samples", type=int, default=20000)
parser.add_argument("--val-samples", type=int, default=4000)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--workers", type=int, default=0)
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
train_loader = DataLoader(AugmentedImages(args.train_samples, 1, augment=True), batch_size=args.batch_size,
                          shuffle=True, num_workers=args.workers, pin_memory=device == "cuda")
val_loader = DataLoader(AugmentedImages(args.val_samples, 2, augment=False), batch_size=args.batch_size,
                        num_workers=args.workers)
model = network().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
loss_fn = nn.CrossEntropyLoss()
print(f"training on {device}: {sum(p.numel() for p in model.parameters()):,} parameters")

for epoch in range(args.epochs):
    started = time.time()
    model.train()
    for images, labels in train_loader:
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in val_loader:
            correct += (model(images.to(device)).argmax(1).cpu() == labels).sum().item()
    print(f"epoch {epoch + 1}/{args.epochs}: loss {loss.item():.3f}, val accuracy {correct / args.val_samples:.3f}, "
          f"{time.time() - started:.1f} s")
