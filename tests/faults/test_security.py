"""What the recorder exposes: no shell, a private FIFO, no leaked descriptors, sane file modes."""

from __future__ import annotations

import json
import os
import stat

import pytest

from devicewatch.runformat import runfile

from .conftest import PY, no_traceback, run_recorder, script


def test_no_shell_is_involved(tmp_path):
    marker = tmp_path / "touched"
    hostile = [f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", f"| touch {marker}", "*"]
    out = tmp_path / "run.jsonl"
    code, _, err = run_recorder(out, PY, script("argv.py"), *hostile)
    no_traceback(err)
    assert code == 0
    assert not marker.exists()
    [log] = runfile.load(out).logs
    assert json.loads(log.line) == hostile   # each arrived as one literal argument


def _inside_view(tmp_path):
    out = tmp_path / "run.jsonl"
    code, _, err = run_recorder(out, PY, script("fds.py"))
    no_traceback(err)
    assert code == 0
    [log] = runfile.load(out).logs
    return out, json.loads(log.line)


def test_event_fifo_is_private_and_removed_after_the_run(tmp_path):
    _, seen = _inside_view(tmp_path)
    fifo = seen["events"]
    assert stat.S_ISFIFO(seen["stat"]["fifo"]["mode"])
    assert stat.S_IMODE(seen["stat"]["fifo"]["mode"]) == 0o600
    assert stat.S_IMODE(seen["stat"]["folder"]["mode"]) == 0o700   # nobody else can even reach it
    assert seen["stat"]["folder"]["uid"] == seen["stat"]["fifo"]["uid"] == os.getuid()
    assert not os.path.exists(fifo) and not os.path.exists(os.path.dirname(fifo))


def test_recorder_descriptors_are_not_inherited(tmp_path):
    out, seen = _inside_view(tmp_path)
    targets = seen["fds"]
    # 0, 1 and 2 are the recorder's pipes (its stdin relayed into 0); one more is the listing of /proc/self/fd.
    others = {fd: target for fd, target in targets.items() if fd not in ("0", "1", "2")}
    assert all(target.startswith("/proc/") for target in others.values()), targets
    assert targets["0"].startswith("pipe:")
    assert targets["1"].startswith("pipe:") and targets["2"].startswith("pipe:")
    assert str(out) not in targets.values() and seen["events"] not in targets.values()


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077, 0o000])
def test_run_file_mode_follows_umask_and_is_never_world_writable(tmp_path, umask):
    out = tmp_path / "run.jsonl"
    code, _, err = run_recorder(out, PY, "-c", "pass", preexec_fn=lambda: os.umask(umask))
    no_traceback(err)
    assert code == 0
    mode = stat.S_IMODE(out.stat().st_mode)
    assert mode == 0o664 & ~umask
    assert not mode & stat.S_IWOTH and not mode & 0o111
