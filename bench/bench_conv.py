"""The figures of docs/workload-conv.md: every CPU method on SqueezeNet v1.1, Tiny-darknet and
U-Net in one interleaved run, the output saved under bench/out/.

    python -m bench.bench_conv [extra workload options, e.g. --repeats 9]
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import sys

from workloads.conv import main as conv_main

DEFAULT_ARGS = ["--net", "squeezenet,tinydarknet,unet", "--input-size", "224", "--unet-shape", "128x191",
                "--width", "16", "--repeats", "15"]


def main(argv: list[str] | None = None) -> int:
    args = DEFAULT_ARGS + list(sys.argv[1:] if argv is None else argv)
    out_dir = pathlib.Path(__file__).resolve().parent / "out"
    out_dir.mkdir(exist_ok=True)
    buffer = io.StringIO()

    class Tee(io.TextIOBase):
        def write(self, text: str) -> int:
            sys.__stdout__.write(text)
            buffer.write(text)
            return len(text)

    with contextlib.redirect_stdout(Tee()):
        print("python -m workloads.conv " + " ".join(args))
        code = conv_main(args)
    (out_dir / "conv.txt").write_text(buffer.getvalue())
    return code


if __name__ == "__main__":
    sys.exit(main())
