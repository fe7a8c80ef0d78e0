"""Convolution layer tables of the two inference networks the source measured.

- SqueezeNet v1.1 (Iandola et al., arXiv:1602.07360; v1.1 as published in DeepScale's
  SqueezeNet repository, SqueezeNet_v1.1/train_val.prototxt, and torchvision's
  ``squeezenet1_1``): conv1 3×3/2 with 64 filters, eight Fire modules (1×1 squeeze, 1×1 and
  3×3 expand), 3×3/2 max pools (ceil mode) after conv1, fire3 and fire5, and conv10 1×1 to
  1000 classes.
- Tiny-darknet (Redmon, https://pjreddie.com/darknet/tiny-darknet/, ``cfg/tiny.cfg``):
  alternating 1×1 and 3×3 convolutions with 2×2/2 max pools, ending in a 1×1 conv to 1000
  classes and a global average pool.

Only the convolution layers are timed; the spatial size of each follows from the input size
(224 in both papers), so ``--input-size`` scales the work.
"""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass

NETS = ("squeezenet", "tinydarknet")


@dataclass(frozen=True)
class ConvLayer:
    name: str
    c_in: int
    c_out: int
    kernel: int
    stride: int
    pad: int
    height: int  # input height and width
    width: int

    @property
    def out_height(self) -> int:
        return (self.height + 2 * self.pad - self.kernel) // self.stride + 1

    @property
    def out_width(self) -> int:
        return (self.width + 2 * self.pad - self.kernel) // self.stride + 1

    @property
    def flops(self) -> int:
        return 2 * self.c_out * self.c_in * self.kernel * self.kernel * self.out_height * self.out_width

    def describe(self) -> str:
        return (f"{self.c_in}→{self.c_out} {self.kernel}×{self.kernel}/{self.stride} "
                f"@{self.height}×{self.width}")


# Ops: ("conv", name, filters, kernel, stride, pad), ("pool", kernel, stride, ceil_mode),
# ("fire", name, squeeze, expand) — a Fire module's expand outputs are concatenated.
SQUEEZENET_V1_1 = [
    ("conv", "conv1", 64, 3, 2, 0), ("pool", 3, 2, True),
    ("fire", "fire2", 16, 64), ("fire", "fire3", 16, 64), ("pool", 3, 2, True),
    ("fire", "fire4", 32, 128), ("fire", "fire5", 32, 128), ("pool", 3, 2, True),
    ("fire", "fire6", 48, 192), ("fire", "fire7", 48, 192),
    ("fire", "fire8", 64, 256), ("fire", "fire9", 64, 256),
    ("conv", "conv10", 1000, 1, 1, 0),
]

TINY_DARKNET = [
    ("conv", "conv1", 16, 3, 1, 1), ("pool", 2, 2, False),
    ("conv", "conv2", 32, 3, 1, 1), ("pool", 2, 2, False),
    ("conv", "conv3", 16, 1, 1, 0), ("conv", "conv4", 128, 3, 1, 1),
    ("conv", "conv5", 16, 1, 1, 0), ("conv", "conv6", 128, 3, 1, 1), ("pool", 2, 2, False),
    ("conv", "conv7", 32, 1, 1, 0), ("conv", "conv8", 256, 3, 1, 1),
    ("conv", "conv9", 32, 1, 1, 0), ("conv", "conv10", 256, 3, 1, 1), ("pool", 2, 2, False),
    ("conv", "conv11", 64, 1, 1, 0), ("conv", "conv12", 512, 3, 1, 1),
    ("conv", "conv13", 64, 1, 1, 0), ("conv", "conv14", 512, 3, 1, 1),
    ("conv", "conv15", 128, 1, 1, 0),
    ("conv", "conv16", 1000, 1, 1, 0),
]

_TABLES: dict[str, list[tuple[Any, ...]]] = {"squeezenet": SQUEEZENET_V1_1, "tinydarknet": TINY_DARKNET}


def _pooled(size: int, kernel: int, stride: int, ceil_mode: bool) -> int:
    span = size - kernel
    return (-(-span // stride) if ceil_mode else span // stride) + 1


def conv_layers(net: str, input_size: int = 224, channels: int = 3) -> list[ConvLayer]:
    """The network's convolution layers with the input size of each, for a square input."""
    if net not in _TABLES:
        raise ValueError(f"unknown network {net!r} (choose from {', '.join(NETS)})")
    layers: list[ConvLayer] = []
    size, c = input_size, channels
    for op in _TABLES[net]:
        if op[0] == "pool":
            size = _pooled(size, op[1], op[2], op[3])
        elif op[0] == "conv":
            _, name, filters, k, stride, pad = op
            layer = ConvLayer(name, c, filters, k, stride, pad, size, size)
            layers.append(layer)
            size, c = layer.out_height, filters
        else:
            _, name, squeeze, expand = op
            layers.append(ConvLayer(f"{name}/squeeze1x1", c, squeeze, 1, 1, 0, size, size))
            layers.append(ConvLayer(f"{name}/expand1x1", squeeze, expand, 1, 1, 0, size, size))
            layers.append(ConvLayer(f"{name}/expand3x3", squeeze, expand, 3, 1, 1, size, size))
            c = 2 * expand
        if size < 1:
            raise ValueError(f"input size {input_size} is too small for {net}")
    return layers
