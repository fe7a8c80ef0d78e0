"""Which convolution algorithm wins, and by how much: MCMK, im2col, im2row, a tiled direct
convolution and PyTorch on SqueezeNet, Tiny-darknet and U-Net; numba.cuda naive and
shared-memory tiled kernels, cuDNN and data parallelism over GPUs and streams on a GPU.

Every method runs as its own phase (``events.phase(method, net=...)``), methods interleaved
round by round so that a machine shared with others slows them alike, and every figure is
sent as a result (``im2row/squeezenet``: ms, GFLOP/s, share of peak, speedup over MCMK).
"""

from __future__ import annotations

import argparse
import os
import sys

TITLE = "Convolution algorithms head to head: MCMK vs im2col vs im2row vs tiled vs PyTorch; U-Net conv share"
SOURCE = ("003: shared-memory tiling and multi-GPU data parallelism for U-Net; "
          "004: MCMK vs im2col vs im2row on CPUs (up to 17.68×)")

CPU_METHODS = ("mcmk", "im2col", "im2row", "tiled", "torch")  # same as cpu.CPU_METHODS
GPU_METHODS = ("naive", "tiled", "cudnn")  # same as gpu.GPU_METHODS
NETS = ("squeezenet", "tinydarknet", "unet")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="conv", description=TITLE)
    p.add_argument("--net", default="squeezenet,tinydarknet",
                   help="comma-separated networks: squeezenet (v1.1), tinydarknet, unet (default squeezenet,tinydarknet)")
    p.add_argument("--methods", default=None,
                   help=f"comma-separated methods; cpu: {','.join(CPU_METHODS)} (default all); "
                        f"cuda: {','.join(GPU_METHODS)} (default all)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to convolve (default cpu)")
    p.add_argument("--input-size", type=int, default=224,
                   help="square input size of squeezenet/tinydarknet (default 224, as published)")
    p.add_argument("--unet-shape", default="128x191", help="U-Net input HxW (default 128x191, the source's image)")
    p.add_argument("--width", type=int, default=16,
                   help="U-Net base channel width; levels use width×1,2,4,8,16 (default 16; the paper's is 64)")
    p.add_argument("--batch", type=int, default=1, help="images per batch (default 1)")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds per method; the best is reported (default 5)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="CPU threads for numba, BLAS and torch (default: all cores)")
    p.add_argument("--streams", type=int, default=1, help="CUDA streams per GPU for data parallelism (default 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed for inputs and weights (default 0)")
    return p


def _fail(message: str) -> int:
    print(f"conv: {message}", file=sys.stderr)
    return 2


def _parse(args: argparse.Namespace) -> tuple[list[str], list[str], tuple[int, int]] | str:
    nets = [n.strip() for n in args.net.split(",") if n.strip()]
    for net in nets:
        if net not in NETS:
            return f"unknown network {net!r} (choose from {', '.join(NETS)})"
    allowed = CPU_METHODS if args.device == "cpu" else GPU_METHODS
    methods = list(allowed) if args.methods is None else [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in allowed:
            return f"unknown {args.device} method {m!r} (choose from {', '.join(allowed)})"
    if not methods or not nets:
        return "--methods and --net need at least one name"
    for name in ("input_size", "width", "batch", "repeats", "threads", "streams"):
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} must be at least 1"
    try:
        h, w = (int(v) for v in args.unet_shape.lower().split("x"))
    except ValueError:
        return f"--unet-shape must look like 128x191, not {args.unet_shape!r}"
    if h < 16 or w < 16:
        return "--unet-shape needs at least 16x16 (four 2×2 poolings)"
    from workloads.conv.nets import conv_layers  # pure Python: the layer table of each network

    for net in nets:
        if net != "unet":
            try:
                conv_layers(net, args.input_size)
            except ValueError as exc:  # the input shrinks to nothing before the last layer
                return f"--input-size {args.input_size}: {exc}"
    return nets, methods, (h, w)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    parsed = _parse(args)
    if isinstance(parsed, str):
        return _fail(parsed)
    nets, methods, unet_shape = parsed
    if "numpy" not in sys.modules:  # BLAS reads its thread count when it loads
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
        # OpenBLAS's idle workers otherwise spin for 2^28 cycles after every GEMM (tens of ms),
        # taking a core from the numba patch copy that follows and from the next method: 2^4
        # cycles lets them sleep at once, as OMP_WAIT_POLICY=PASSIVE does for OpenMP pools.
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    # Idle OpenMP workers of one pool must not spin on the cores the next method needs.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.device == "cuda":
        from workloads.conv.gpu import gpu_missing_reason

        reason = gpu_missing_reason(methods)
        if reason:
            return _fail(f"--device cuda: {reason}")
    from workloads.conv import measure

    return measure.run(args, nets, methods, unet_shape)


if __name__ == "__main__":
    import workloads

    sys.exit(workloads.run("conv", main))
