"""The output bound: a workload printing far more than anyone reads is recorded up to a rate,
and the run file says exactly how much was left out; Keras's epoch lines are never dropped."""

from __future__ import annotations

from devicewatch import analysis, recorder
from devicewatch.runformat import runfile

from .conftest import PY, run_recorder


def test_a_flood_of_output_is_bounded_and_every_line_is_accounted_for(tmp_path):
    total = recorder.LOG_BURST + 150_000
    work = tmp_path / "flood.py"
    work.write_text(
        "import sys\n"
        f"for i in range({total}):\n"
        "    sys.stdout.write(f'line {i}\\n')\n"
        "    if i == 300_000:\n"
        "        sys.stdout.write('Epoch 1/1\\n')\n")
    out = tmp_path / "run.jsonl"
    code, _, err = run_recorder(out, PY, str(work), timeout=120)
    assert code == 0, err
    run = runfile.load(out)
    kept = [r.line for r in run.logs if r.stream == "stdout"]
    dropped = [n for n in run.notices if n.stream == "stdout"]
    assert dropped, "a flood this size must go over the bound"
    assert "Epoch 1/1" in kept                               # never dropped
    assert kept[:recorder.LOG_BURST] == [f"line {i}" for i in range(recorder.LOG_BURST)]  # the burst, whole
    assert len(kept) - 1 + sum(n.dropped_lines for n in dropped) == total   # nothing unaccounted for
    assert any(p.name == "epoch" for p in analysis.phases(run))  # the epoch line still marks an epoch
