"""The event channel abused: a million events, binary garbage, invalid UTF-8, a 10 MB line.

The recorder must keep sampling on schedule, keep its memory and CPU bounded, record what is
valid, note what is not, and say what its event bound dropped.
"""

from __future__ import annotations

import json
import threading

import psutil

from devicewatch.runformat import runfile
from devicewatch.recorder import EVENT_BURST, EVENT_RATE

from .conftest import INTERVAL, PY, no_traceback, reap, script, start_recorder  # noqa: F401

# The recorder reads the FIFO in 64 KB chunks and holds at most one partial line of up to
# MAX_EVENT_LINE (1 MB) besides; everything else goes straight to the file. Its resting size
# (Python, psutil, numpy and rich, imported for the closing summary) is some tens of MB. A
# million recorded events held in memory as dicts would take several hundred MB, and a 10 MB
# line held whole would add 10 MB or more per copy; 150 MB lies far from both.
RSS_BOUND = 150 * 1024 * 1024


def _record_watching_memory(tmp_path, reap, *args: str):
    """Run flood.py under the recorder; return (run, peak RSS while recording, stderr)."""
    out = tmp_path / "run.jsonl"
    recorder = start_recorder(out, PY, script("flood.py"), *args)
    reap.append(recorder.pid)
    me = psutil.Process(recorder.pid)
    peak = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not stop.wait(0.05):
            try:
                if out.exists() and b'"type":"end"' in _tail(out):
                    return   # the recording is over; what follows is the closing summary
                peak = max(peak, me.memory_info().rss)
            except (psutil.Error, OSError):
                return

    watcher = threading.Thread(target=watch)
    watcher.start()
    _, err = recorder.communicate(timeout=150)
    stop.set()
    watcher.join()
    return runfile.load(out), peak, err.decode(errors="replace"), recorder.returncode


def _tail(path) -> bytes:
    with open(path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 300))
        return f.read()


def _sample_gaps_ok(run: runfile.Run) -> None:
    """Samples arrived throughout: no gap longer than one second (20 intervals) on a shared
    machine, and the samples span the run from its start to its end."""
    times = [s["t"] for s in run.samples]
    assert times[0] <= 5 * INTERVAL
    assert run.end.t - times[-1] <= 1.0
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= 1.0, max(gaps)


def test_a_million_events(tmp_path, reap):
    # This test once asserted that all million markers were recorded: the flood then cost the
    # recorder half a core. Markers and results are now bounded (EVENT_RATE a second after a
    # burst of EVENT_BURST) and the rest counted in notices; phases, epochs and run info are
    # never dropped. So: every phase event and the run info arrive, the markers written and
    # the markers counted as dropped add up to the million, and no more were written than the
    # bound allows over the run.
    count = 1_000_000
    run, peak, err, code = _record_watching_memory(tmp_path, reap, "events", str(count), "0.5")
    no_traceback(err)
    assert code == 0 and run.end.status == "ok"
    kinds = [e["kind"] for e in run.events]
    assert kinds.count("run_info") == 1
    phases = [(e["kind"], e["epoch"]) for e in run.events if e["kind"] in ("phase_begin", "phase_end")]
    assert phases == [(kind, epoch) for epoch in range(1, 11) for kind in ("phase_begin", "phase_end")]
    written = kinds.count("marker")
    drops = [n for n in run.notices if n.dropped is not None]
    assert drops and all(n.level == "warning" and set(n.dropped) == {"marker"} for n in drops)
    assert written + sum(n.dropped["marker"] for n in drops) == count
    assert EVENT_BURST <= written <= EVENT_BURST + EVENT_RATE * run.end.duration + 1
    assert all(a.dropped_to <= b.dropped_from for a, b in zip(drops, drops[1:]))
    assert run.bad_lines == 0 and not run.cut_last_line
    _sample_gaps_ok(run)
    assert 0 < peak < RSS_BOUND, f"recorder peak RSS {peak / 2**20:.0f} MB"


def test_garbage_invalid_utf8_and_a_10mb_line(tmp_path, reap):
    run, peak, err, code = _record_watching_memory(tmp_path, reap, "garbage")
    no_traceback(err)
    assert code == 0 and run.end.status == "ok"
    # Five bad lines went in, each noted once: binary noise, invalid UTF-8, a JSON list, an
    # object without kind, the 10 MB line. The valid event after them is recorded.
    noted = [n.message for n in run.notices if n.level == "warning"]
    assert len(noted) == 5, noted
    assert sum("over" in m and "dropped" in m for m in noted) == 1
    assert not any("in all" in m for m in noted)
    assert [e["label"] for e in run.events if e.get("kind") == "marker"] == ["after the garbage"]
    # The file holds no 10 MB line and no invalid UTF-8: every line is valid JSON.
    raw = (tmp_path / "run.jsonl").read_bytes()
    assert max(len(line) for line in raw.split(b"\n")) < 64 * 1024
    for line in raw.splitlines():
        json.loads(line.decode("utf-8"))
    _sample_gaps_ok(run)
    assert 0 < peak < RSS_BOUND, f"recorder peak RSS {peak / 2**20:.0f} MB"
