"""The conv workload: every CPU method against torch's conv2d, layer tables, U-Net, command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from workloads.conv import main
from workloads.conv.measure import ATOL, RTOL
from workloads.conv.nets import conv_layers

PY = sys.executable


def _reference(x, w, stride, pad):
    import torch
    import torch.nn.functional as F

    return F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=pad).numpy()


def _assert_close(y, ref):
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL * float(np.abs(ref).max()))


# (batch, channels, height, width, filters, kernel, stride, pad): 1×1 kernels, strides 2 and 3,
# odd and non-square sizes, more filters than a tile (8), and a 9×9 kernel taller than the
# tiled kernel's 8-row tile.
EDGE_CASES = [
    (1, 3, 9, 7, 5, 3, 1, 1),
    (2, 4, 10, 11, 9, 1, 1, 0),
    (1, 6, 12, 12, 3, 1, 2, 0),
    (1, 5, 13, 12, 3, 5, 2, 2),
    (1, 2, 11, 10, 17, 7, 3, 3),
    (1, 3, 12, 12, 4, 9, 1, 0),
    (1, 1, 3, 3, 1, 3, 1, 0),
]


def _random_cases(count: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        kernel = int(rng.choice([1, 2, 3, 5]))
        stride = int(rng.integers(1, 3))
        pad = int(rng.integers(0, kernel // 2 + 1))
        h = int(rng.integers(kernel, 16))
        w = int(rng.integers(kernel, 16))
        yield (int(rng.integers(1, 3)), int(rng.integers(1, 9)), h, w, int(rng.integers(1, 20)), kernel, stride, pad)


@pytest.mark.parametrize("method_name", ["mcmk", "im2col", "im2row", "tiled", "torch"])
def test_cpu_method_matches_torch(method_name):
    from workloads.conv.cpu import make_method

    method = make_method(method_name)
    rng = np.random.default_rng(0)
    for n, c, h, w, k, kernel, stride, pad in EDGE_CASES + list(_random_cases(12)):
        x = rng.standard_normal((n, c, h, w), dtype=np.float32)
        weights = rng.standard_normal((k, c, kernel, kernel), dtype=np.float32)
        _assert_close(np.asarray(method.conv(x, weights, stride, pad)), _reference(x, weights, stride, pad))


def test_im2row_keeps_activations_channels_last():
    from workloads.conv.cpu import make_method

    method = make_method("im2row")
    x = np.zeros((1, 4, 6, 5), dtype=np.float32)
    assert method.to_layout(x).shape == (1, 6, 5, 4)
    y = method.run(method.to_layout(x), method.prepare(np.zeros((7, 4, 3, 3), np.float32)), (7, 3, 3), 1, 1)
    assert y.shape == (1, 6, 5, 7)


def test_squeezenet_v1_1_layer_table():
    layers = conv_layers("squeezenet", 224)
    assert len(layers) == 1 + 8 * 3 + 1
    by_name = {l.name: l for l in layers}
    assert by_name["conv1"].out_height == (224 - 3) // 2 + 1 == 111
    # 3×3/2 max pools in ceil mode: 111 → 55 → 27 → 13
    assert by_name["fire2/squeeze1x1"].height == 55
    assert by_name["fire4/expand3x3"].height == 27
    assert by_name["fire6/squeeze1x1"].height == 13
    assert by_name["fire3/squeeze1x1"].c_in == 128  # fire2's two 64-channel expands
    assert by_name["conv10"].flops == 2 * 1000 * 512 * 13 * 13


def test_tiny_darknet_layer_table():
    layers = conv_layers("tinydarknet", 224)
    assert len(layers) == 16
    assert [l.height for l in layers[:3]] == [224, 112, 56]
    assert layers[-1].c_in == 128 and layers[-1].c_out == 1000 and layers[-1].height == 14
    assert sum(l.kernel == 3 for l in layers) == 2 + 3 * 2  # conv1, conv2, then two per stage


def test_too_small_input_is_refused():
    with pytest.raises(ValueError):
        conv_layers("squeezenet", 8)


def test_unet_flops_and_every_method_agrees_with_torch():
    import torch
    import torch.nn.functional as F

    from workloads.conv import unet
    from workloads.conv.cpu import CPU_METHODS, make_method

    width, h, w = 2, 32, 47  # odd width: floored by pooling, padded back after each up-conv
    shapes = unet.conv_shapes(width)
    assert len(shapes) == 4 * 2 + 2 + 4 * 2 + 1
    # the first conv alone: 3→2 channels, 3×3, at full size
    assert unet.conv_flops(width, h, w) > 2 * 2 * 3 * 9 * h * w
    weights = unet.make_weights(width, seed=3)
    tensors = [torch.from_numpy(x) for x in weights["conv"]]
    up = [torch.from_numpy(u) for u in weights["up"]]
    x = unet.input_tensor("nchw", 1, h, w)
    ref = unet.forward(x, lambda t, i: F.conv2d(t, tensors[i], padding=tensors[i].shape[2] // 2),
                       up, unet.OpTimer()).numpy()
    assert ref.shape == (1, 2, h, w)
    for name in CPU_METHODS:
        method = make_method(name)
        timer = unet.OpTimer()
        y = unet.forward(unet.input_tensor(method.layout, 1, h, w), unet.cpu_conv(method, weights["conv"]), up, timer)
        _assert_close(y.numpy(), ref)
        assert timer.seconds["conv"] > 0 and set(timer.seconds) == set(unet.OPS)


@pytest.mark.parametrize("argv, words", [
    (["--methods", "fft"], "unknown cpu method"),
    (["--net", "resnet"], "unknown network"),
    (["--repeats", "0"], "--repeats"),
    (["--unet-shape", "12"], "--unet-shape"),
    (["--net", "squeezenet", "--input-size", "16"], "--input-size 16: input size 16 is too small for squeezenet"),
    (["--device", "cuda", "--methods", "naive,cudnn"], "--device cuda"),
])
def test_bad_input_is_one_line_and_nonzero(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_small_run_end_to_end():
    result = subprocess.run(
        [PY, "-m", "workloads.conv", "--net", "squeezenet,unet", "--input-size", "32", "--unet-shape", "16x19",
         "--width", "2", "--repeats", "1", "--methods", "im2row,torch", "--threads", "1"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "squeezenet: ms per layer" in result.stdout and "unet: ms per operation" in result.stdout
    assert "disagrees" not in result.stdout


def test_import_is_light():
    code = ("import sys, workloads.conv as m; assert m.TITLE and m.SOURCE; m.build_parser();"
            "print(sorted(x for x in ('numba', 'torch', 'numpy') if x in sys.modules))")
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("method_name", ["im2col", "im2row"])
def test_gemm_methods_reuse_scratch_without_aliasing_outputs(method_name):
    """The patch matrix lives in one buffer shared by all layers: a later, larger layer must
    not overwrite an earlier layer's output."""
    from workloads.conv.cpu import make_method

    method = make_method(method_name)
    rng = np.random.default_rng(5)
    x1 = rng.standard_normal((1, 3, 8, 9), dtype=np.float32)
    w1 = rng.standard_normal((4, 3, 3, 3), dtype=np.float32)
    x2 = rng.standard_normal((1, 6, 20, 21), dtype=np.float32)
    w2 = rng.standard_normal((5, 6, 5, 5), dtype=np.float32)
    y1 = np.asarray(method.conv(x1, w1, 1, 1))
    y2 = np.asarray(method.conv(x2, w2, 2, 2))
    _assert_close(y1, _reference(x1, w1, 1, 1))
    _assert_close(y2, _reference(x2, w2, 2, 2))
