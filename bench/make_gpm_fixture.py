"""Writes ``tests/fixtures/gpu-gpm.jsonl``: a real recorder run against the fake NVML.

GPU 0 is a Hopper GPU that is busy 97% of the time with its SMs only 31% active (a loop of
tiny kernels: launch-bound); GPU 1 has no GPM, so its reason is recorded. The workload is a
short Python script with two epochs of train and validate phases; the GPU figures come from
the fake (``tests/fakes/nvml.py``) through the recorder's own injection point.

    python -m bench.make_gpm_fixture [-o tests/fixtures/gpu-gpm.jsonl]
"""

from __future__ import annotations

import argparse
import io
import os
import sys

from devicewatch.probes.gpu import GpuProbe
from devicewatch.recorder import Recorder, RecordOptions
from tests.fakes.nvml import FakeGpu, FakeNVML

WORKLOAD = """
import time
from devicewatch import events
events.run_info(framework="none", device="cuda", data="synthetic", epochs=2)
for epoch in (1, 2):
    with events.phase("train", epoch):
        time.sleep(1.0)
    with events.phase("validate", epoch):
        time.sleep(0.4)
"""


def fake_gpus() -> FakeNVML:
    return FakeNVML([FakeGpu(name="NVIDIA H100 80GB HBM3", util=97.0),
                     FakeGpu(name="NVIDIA A100-SXM4-40GB", gpm=False, util=0.0, util_period=0.1)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", default=os.path.join("tests", "fixtures", "gpu-gpm.jsonl"))
    args = parser.parse_args()
    options = RecordOptions(output=args.output, command=[sys.executable, "-c", WORKLOAD], interval=0.1,
                            echo=False, status_line=False)
    probe = GpuProbe(nvml_loader=fake_gpus().module)
    code = Recorder(options, gpu_probe=probe, out=io.StringIO(), err=io.StringIO()).run()
    print(f"wrote {args.output} (workload exit {code})")


if __name__ == "__main__":
    main()
