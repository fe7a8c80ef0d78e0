"""The measuring loop behind ``python -m workloads.conv``: phases, checks, tables, results."""

from __future__ import annotations

import functools
import time
from typing import Any

from devicewatch import events


def measure_peak_gflops(size: int = 2048, tries: int = 3) -> float:
    """This CPU's practical float32 peak: the best of a few large NumPy (BLAS) matmuls."""
    import numpy as np

    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - started)
    return 2 * size ** 3 / best / 1e9


# float32 agreement with torch's conv2d: |ours − torch| ≤ RTOL·|torch| + ATOL·max|torch|.
RTOL = 1e-3
ATOL = 1e-4


def agrees(y: Any, ref: Any) -> bool:
    import numpy as np

    y = np.asarray(y)
    return y.shape == ref.shape and bool(np.allclose(y, ref, rtol=RTOL, atol=ATOL * float(np.abs(ref).max() or 1.0)))


def _torch_reference(x: Any, w: Any, stride: int, pad: int) -> Any:
    import torch
    import torch.nn.functional as F

    with torch.inference_mode():
        return F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=pad).numpy()


def run(args: Any, nets: list[str], methods: list[str], unet_shape: tuple[int, int]) -> int:
    import numba
    import torch

    threads_known = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # numba sets it at import
    numba.set_num_threads(min(args.threads, threads_known))
    torch.set_num_threads(args.threads)
    peak = None
    if args.device == "cpu":
        with events.phase("peak", lane="main"):
            peak = measure_peak_gflops()
        print(f"conv: float32 GEMM peak of this CPU ≈ {peak:.1f} GFLOP/s ({args.threads} threads)", flush=True)
    events.run_info(framework="numba+numpy+torch", device=args.device, methods=methods, net=nets,
                    input_size=args.input_size, unet_shape=f"{unet_shape[0]}x{unet_shape[1]}",
                    unet_width=args.width, batch=args.batch, repeats=args.repeats, threads=args.threads,
                    streams=args.streams, peak_gflops=round(peak, 1) if peak else None, data="synthetic")
    failed = False
    for net in nets:
        if net == "unet":
            failed |= not run_unet(args, methods, unet_shape, peak)
        else:
            failed |= not run_layers(args, net, methods, peak)
    return 1 if failed else 0


# --------------------------------------------------------------------------- layer tables

def run_layers(args: Any, net: str, methods: list[str], peak: float | None) -> bool:
    import numpy as np

    from workloads.conv.nets import conv_layers

    layers = conv_layers(net, args.input_size)
    rng = np.random.default_rng(args.seed)
    inputs = [rng.standard_normal((args.batch, layer.c_in, layer.height, layer.width), dtype=np.float32) for layer in layers]
    weights = [(rng.standard_normal((layer.c_out, layer.c_in, layer.kernel, layer.kernel), dtype=np.float32)
                / np.sqrt(layer.c_in * layer.kernel ** 2)).astype(np.float32) for layer in layers]
    refs = [_torch_reference(x, w, layer.stride, layer.pad) for x, w, layer in zip(inputs, weights, layers)]
    total_flops = args.batch * sum(layer.flops for layer in layers)
    print(f"conv: {net}, {len(layers)} conv layers, input {args.input_size}², batch {args.batch}, "
          f"{total_flops / 1e9:.2f} GFLOP per pass", flush=True)
    times: dict[str, list[list[float]]] = {m: [[] for _ in layers] for m in methods}
    ok = True
    if args.device == "cpu":
        from workloads.conv.cpu import make_method

        runners = {}
        for m in methods:
            method = make_method(m)
            with events.phase("warmup", lane="main", net=net, method=m):
                started = time.perf_counter()
                calls = []
                for x, w, layer, ref in zip(inputs, weights, layers, refs):
                    xl, wp = method.to_layout(x), method.prepare(w)
                    call = functools.partial(method.run, xl, wp, (layer.c_out, layer.kernel, layer.kernel),
                                             layer.stride, layer.pad)
                    if not agrees(method.to_nchw(call()), ref):
                        print(f"conv: {m} disagrees with torch on {net}/{layer.name}", flush=True)
                        ok = False
                    calls.append(call)
                runners[m] = calls
            print(f"conv: {m:>7} ready ({time.perf_counter() - started:.1f} s, compile and check)", flush=True)
        for round_ in range(1, args.repeats + 1):  # interleaved: every method once per round
            for m in methods:
                with events.phase(m, lane="main", net=net, round=round_):
                    for i, call in enumerate(runners[m]):
                        started = time.perf_counter()
                        call()
                        times[m][i].append(time.perf_counter() - started)
            print(f"conv: {net} round {round_}/{args.repeats}: " + "  ".join(
                f"{m} {1e3 * sum(t[-1] for t in times[m]):.1f} ms" for m in methods), flush=True)
        per_layer = {m: [min(t) * 1e3 for t in times[m]] for m in methods}
    else:
        from workloads.conv.gpu import data_parallel_conv, time_layer

        per_layer, transfers = {}, {}
        for m in methods:
            with events.phase(m, lane="main", net=net, device="cuda"):
                rows = [time_layer(m, x, w, layer.stride, layer.pad, args.repeats)
                        for x, w, layer in zip(inputs, weights, layers)]
            for row, layer, ref in zip(rows, layers, refs):
                if not agrees(row["output"], ref):
                    print(f"conv: {m} disagrees with torch on {net}/{layer.name}", flush=True)
                    ok = False
            per_layer[m] = [r["kernel_ms"] for r in rows]
            transfers[m] = (sum(r["h2d_ms"] for r in rows), sum(r["d2h_ms"] for r in rows))
            with events.phase(f"{m}-dataparallel", lane="main", net=net, streams=args.streams):
                wall = sum(data_parallel_conv(m, x, w, layer.stride, layer.pad, args.streams)[1]
                           for x, w, layer in zip(inputs, weights, layers))
            events.result(f"{m}/{net}/transfers", h2d_ms=transfers[m][0], d2h_ms=transfers[m][1],
                          dataparallel_ms=wall * 1e3, streams=args.streams)
            print(f"conv: {m}: kernels {sum(per_layer[m]):.3f} ms, host→device {transfers[m][0]:.3f} ms, "
                  f"device→host {transfers[m][1]:.3f} ms, data-parallel with copies {wall * 1e3:.3f} ms", flush=True)
    label = f"best of {args.repeats} rounds" if args.device == "cpu" else f"kernel median of {args.repeats}"
    report(net, layers, per_layer, methods, args.batch, peak, label)
    return ok


def report(net: str, layers: list[Any], per_layer: dict[str, list[float]], methods: list[str],
           batch: int, peak: float | None, label: str) -> None:
    """Print the per-layer and per-network table and send every figure as a result."""
    baseline = "mcmk" if "mcmk" in per_layer else ("naive" if "naive" in per_layer else None)
    reference = "torch" if "torch" in per_layer else ("cudnn" if "cudnn" in per_layer else None)
    print(f"\n{net}: ms per layer, {label}" + (f" (share of {peak:.0f} GFLOP/s peak for the network)" if peak else ""))
    print(f"{'layer':<22}{'shape':<26}" + "".join(f"{m:>10}" for m in methods))
    for i, layer in enumerate(layers):
        print(f"{layer.name:<22}{layer.describe():<26}" + "".join(f"{per_layer[m][i]:>10.3f}" for m in methods))
        for m in methods:
            ms = per_layer[m][i]
            events.result(f"{m}/{net}/{layer.name}", ms=round(ms, 4),
                          gflops=round(batch * layer.flops / ms / 1e6, 2) if ms > 0 else None)
    flops = batch * sum(layer.flops for layer in layers)
    totals = {m: sum(per_layer[m]) for m in methods}
    print(f"{'total':<48}" + "".join(f"{totals[m]:>10.2f}" for m in methods))
    print(f"{'GFLOP/s':<48}" + "".join(f"{flops / totals[m] / 1e6:>10.1f}" for m in methods))
    if peak:
        print(f"{'% of peak':<48}" + "".join(f"{100 * flops / totals[m] / 1e6 / peak:>9.1f}%" for m in methods))
    if baseline:
        print(f"{'speedup vs ' + baseline:<48}" + "".join(f"{totals[baseline] / totals[m]:>9.2f}×" for m in methods))
    if reference:
        print(f"{'time / ' + reference:<48}" + "".join(f"{totals[m] / totals[reference]:>9.2f}×" for m in methods))
    for m in methods:
        gflops = flops / totals[m] / 1e6
        values: dict[str, Any] = {"ms": round(totals[m], 3), "gflops": round(gflops, 2)}
        if peak:
            values["peak_share"] = round(gflops / peak, 4)
        if baseline:
            values[f"speedup_vs_{baseline}"] = round(totals[baseline] / totals[m], 3)
        if reference:
            values[f"time_vs_{reference}"] = round(totals[m] / totals[reference], 3)
        events.result(f"{m}/{net}", **values)
    print(flush=True)


# --------------------------------------------------------------------------- U-Net

def run_unet(args: Any, methods: list[str], shape: tuple[int, int], peak: float | None) -> bool:
    import torch

    from workloads.conv import unet

    height, width = shape
    weights = unet.make_weights(args.width, args.seed)
    flops = args.batch * unet.conv_flops(args.width, height, width)
    print(f"conv: unet width {args.width}, input {height}×{width}×3, batch {args.batch}, "
          f"{flops / 1e9:.2f} GFLOP of convolution per pass", flush=True)
    cuda = args.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    forwards, ok = {}, True
    reference = None
    for m in methods:
        if cuda:
            from workloads.conv.gpu import unet_conv

            conv = unet_conv(m, weights["conv"])
            up = [torch.from_numpy(u).cuda() for u in weights["up"]]
            x = unet.input_tensor("nchw", args.batch, height, width, args.seed + 1).cuda()
        else:
            from workloads.conv.cpu import make_method

            method = make_method(m)
            conv = unet.cpu_conv(method, weights["conv"])
            up = [torch.from_numpy(u) for u in weights["up"]]
            x = unet.input_tensor(method.layout, args.batch, height, width, args.seed + 1)
        forwards[m] = (conv, up, x)
        with events.phase("warmup", lane="main", net="unet", method=m), torch.inference_mode():
            y = unet.forward(x, conv, up, unet.OpTimer(sync)).cpu().numpy()
        if reference is None:
            reference = _unet_reference(weights, args.batch, height, width, args.seed + 1)
        if not agrees(y, reference):
            print(f"conv: {m} U-Net output disagrees with the torch forward", flush=True)
            ok = False
        print(f"conv: {m:>7} ready", flush=True)
    samples: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    for round_ in range(1, args.repeats + 1):
        for m in methods:
            conv, up, x = forwards[m]
            timer = unet.OpTimer(sync)
            with events.phase(m, lane="main", net="unet", round=round_), torch.inference_mode():
                unet.forward(x, conv, up, timer)
            samples[m].append(timer.seconds)
        print(f"conv: unet round {round_}/{args.repeats}: " + "  ".join(
            f"{m} {1e3 * sum(samples[m][-1].values()):.1f} ms" for m in methods), flush=True)
    # the fastest round's breakdown: on a shared machine it is the least disturbed one
    medians = {m: min(samples[m], key=lambda s: sum(s.values())) for m in methods}
    medians = {m: {op: v * 1e3 for op, v in medians[m].items()} for m in methods}
    baseline = "mcmk" if "mcmk" in methods else ("naive" if "naive" in methods else None)
    print(f"\nunet: ms per operation, fastest of {args.repeats} rounds ({height}×{width}×3, width {args.width})")
    print(f"{'method':<10}" + "".join(f"{op:>12}" for op in unet.OPS) + f"{'total':>10}{'conv %':>9}{'GFLOP/s':>9}")
    for m in methods:
        total = sum(medians[m].values())
        share = medians[m]["conv"] / total
        gflops = flops / medians[m]["conv"] / 1e6
        print(f"{m:<10}" + "".join(f"{medians[m][op]:>12.2f}" for op in unet.OPS)
              + f"{total:>10.2f}{100 * share:>8.1f}%{gflops:>9.1f}")
        values: dict[str, Any] = {"ms": round(total, 3), "conv_share": round(share, 4), "conv_gflops": round(gflops, 2)}
        values.update({f"{op}_ms": round(medians[m][op], 3) for op in unet.OPS})
        if peak:
            values["peak_share"] = round(gflops / peak, 4)
        if baseline:
            values[f"speedup_vs_{baseline}"] = round(sum(medians[baseline].values()) / total, 3)
        events.result(f"{m}/unet", **values)
    print(flush=True)
    return ok


def _unet_reference(weights: dict[str, list[Any]], batch: int, height: int, width: int, seed: int) -> Any:
    import torch
    import torch.nn.functional as F

    from workloads.conv import unet

    tensors = [torch.from_numpy(w) for w in weights["conv"]]
    up = [torch.from_numpy(u) for u in weights["up"]]
    x = unet.input_tensor("nchw", batch, height, width, seed)
    with torch.inference_mode():
        return unet.forward(x, lambda t, i: F.conv2d(t, tensors[i], padding=tensors[i].shape[2] // 2),
                            up, unet.OpTimer()).numpy()
