"""The cores a recorded workload may use, on real processes: an affinity set before the run and
changed during it, and a CPU quota on a cgroup made for the test where the machine allows it."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devicewatch.probes.cpu_limits import AFFINITY, QUOTA, CpuLimits, CpuLimitsProbe, cpu_list_text
from devicewatch.runformat import runfile

from .conftest import PY, read_pids, records, run_recorder, start_recorder, wait_for

CORES = os.cpu_count() or 1
OURS = tuple(sorted(os.sched_getaffinity(0)))   # what the recorder and its workload inherit
needs_two_cores = pytest.mark.skipif(CORES < 2 or len(os.sched_getaffinity(0)) < 2,
                                     reason="an affinity narrower than the machine needs two cores to choose from")

# A workload that says its pid and runs until the test lets it go (the file GO appears).
WAITER = ("import os, sys, time\n"
          "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
          "while not os.path.exists(sys.argv[2]):\n"
          "    time.sleep(0.02)\n")


def readings(path: Path) -> list[dict]:
    return [r for r in records(path) if r.get("type") == "cpu_limits"]


@needs_two_cores
def test_a_recorder_started_on_one_core_says_so_for_itself_and_its_workload(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    code, _, err = run_recorder(out, PY, "-c", "pass", preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    assert code == 0, err
    run = runfile.load(out)
    assert run.header.host.cpu_limits is not None
    assert run.header.host.cpu_limits.affinity == (0,)
    assert run.header.host.cpu_limits.text() == f"1 core allowed of {CORES} (affinity)"
    over = run.cpu_limits
    assert over is not None and over.of_workload and not over.changes
    assert over.initial.allowed == 1.0 and over.initial.bound_by == (AFFINITY,)
    assert run.bad_lines == 0


@needs_two_cores
def test_a_workload_under_its_own_taskset_is_limited_and_the_recorder_is_not(tmp_path: Path, reap: list[int]) -> None:
    out, pidfile, go = tmp_path / "run.jsonl", tmp_path / "pid", tmp_path / "go"
    recorder = start_recorder(out, "taskset", "-c", "1", PY, "-c", WAITER, str(pidfile), str(go))
    reap.append(recorder.pid)
    reap.extend(read_pids(pidfile))
    # taskset narrows its own affinity, then becomes the workload (exec): the reading at launch
    # may be of the instant before, and then the next one, a second on, says core 1.
    wait_for(lambda: [r for r in readings(out) if r["affinity"] == "1"], timeout=10, what="a reading of core 1")
    go.touch()
    assert recorder.wait(timeout=30) == 0
    run = runfile.load(out)
    over = run.cpu_limits
    assert run.header.host.cpu_limits is not None and run.header.host.cpu_limits.affinity == OURS
    assert over is not None and over.latest.affinity == (1,)
    assert over.latest.text() == f"1 core allowed of {CORES} (affinity)"


@needs_two_cores
def test_an_affinity_changed_during_the_run_is_recorded_when_it_changes(tmp_path: Path, reap: list[int]) -> None:
    out, pidfile, go = tmp_path / "run.jsonl", tmp_path / "pid", tmp_path / "go"
    recorder = start_recorder(out, PY, "-c", WAITER, str(pidfile), str(go))
    reap.append(recorder.pid)
    [pid] = read_pids(pidfile)
    reap.append(pid)
    first = wait_for(lambda: readings(out), what="the reading at launch")
    assert first[0]["pid"] == pid and first[0]["affinity"] == cpu_list_text(OURS)
    os.sched_setaffinity(pid, {0})
    changed = wait_for(lambda: [r for r in readings(out) if r["affinity"] == "0"], timeout=10,
                       what="a cpu_limits record of the narrowed affinity")
    go.touch()
    assert recorder.wait(timeout=30) == 0
    over = runfile.load(out).cpu_limits
    assert over is not None and len(over.readings) == 2
    assert over.initial.affinity == OURS
    (change,) = over.changes
    assert change.t == changed[0]["t"] and change.limits == CpuLimits(CORES, (0,), over.initial.cpuset)
    assert over.at(change.t - 0.001) == over.initial and over.tightest.allowed == 1.0


# -- a CPU quota on a cgroup of the test's own ---------------------------------------------------

def _cgroup_quota(tmp_name: str) -> Iterator[tuple[Path, list[Path]]]:
    """A cgroup with a CPU quota of half a core (its parent's, for a child without one of its
    own): (the child's folder, the folders to remove, innermost first). Skips with the reason
    where the machine refuses."""
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    tails = [(line.split()[4], line.split(" - ")[1].split()) for line in mounts if " - " in line]
    v1 = [point for point, tail in tails if tail[0] == "cgroup" and "cpu" in tail[2].split(",")]
    v2 = [point for point, tail in tails if tail[0] == "cgroup2"]
    if v1:
        parent = Path(v1[0]) / tmp_name
        child = parent / "inner"
        try:
            parent.mkdir()
            child.mkdir()
            (parent / "cpu.cfs_quota_us").write_text("50000")
        except OSError as exc:
            _remove([child, parent])
            pytest.skip(f"the cgroup v1 cpu hierarchy at {v1[0]} refused a cgroup with a quota: {exc}")
        yield child, [child, parent]
        return
    if not v2:
        pytest.skip("no cgroup hierarchy with the cpu controller is mounted")
    top = Path(v2[0])
    controllers = (top / "cgroup.controllers").read_text().split()
    if "cpu" not in controllers:
        pytest.skip(f"the cpu controller is not available in cgroup v2 at {top} (cgroup.controllers: "
                    f"{' '.join(controllers) or 'none'}; it is bound to a v1 hierarchy or switched off)")
    parent = top / tmp_name
    child = parent / "inner"
    try:
        if "cpu" not in (top / "cgroup.subtree_control").read_text().split():
            (top / "cgroup.subtree_control").write_text("+cpu")
        parent.mkdir()
        (parent / "cgroup.subtree_control").write_text("+cpu")
        child.mkdir()
        (parent / "cpu.max").write_text("50000 100000")
    except OSError as exc:
        _remove([child, parent])
        pytest.skip(f"cgroup v2 at {top} refused a cgroup with a CPU quota: {exc}")
    yield child, [child, parent]


def _remove(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass


@pytest.fixture
def quota_cgroup() -> Iterator[Path]:
    made = _cgroup_quota(f"devicewatch-test-{uuid.uuid4().hex[:8]}")
    child, folders = next(made)
    try:
        yield child
    finally:
        # Only the test's own processes are in it; a failed test leaves them running.
        for pid in (child / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not (child / "cgroup.procs").read_text().strip(), timeout=10, what="the cgroup to empty")
        _remove(folders)
        assert not folders[-1].exists(), f"{folders[-1]} was left behind"


def test_a_workload_in_a_cgroup_with_a_quota_is_recorded_at_half_a_core(tmp_path: Path, reap: list[int],
                                                                        quota_cgroup: Path) -> None:
    out, pidfile, go = tmp_path / "run.jsonl", tmp_path / "pid", tmp_path / "go"
    # The workload moves itself into the cgroup, then becomes the Python waiter (exec: same pid).
    wrapper = f'echo $$ > "{quota_cgroup}/cgroup.procs" && exec "$0" "$@"'
    recorder = start_recorder(out, "sh", "-c", wrapper, PY, "-c", WAITER, str(pidfile), str(go))
    reap.append(recorder.pid)
    [pid] = read_pids(pidfile)
    reap.append(pid)
    # The quota is the parent's: the workload's own cgroup has none.
    limits = CpuLimitsProbe(pid).read()
    assert limits is not None and limits.quota_cores == 0.5 and limits.affinity == OURS
    wait_for(lambda: [r for r in readings(out) if r["quota_cores"] == 0.5], timeout=10,
             what="a cpu_limits record of the quota")
    go.touch()
    assert recorder.wait(timeout=30) == 0
    run = runfile.load(out)
    over = run.cpu_limits
    assert over is not None and over.latest.allowed == 0.5 and over.latest.bound_by == (QUOTA,)
    assert over.latest.text() == f"0.5 cores allowed of {CORES} (CPU quota)"
    # The recorder itself was not in the cgroup: its own limits in the header have no quota.
    assert run.header.host.cpu_limits is not None and run.header.host.cpu_limits.quota_cores is None


@pytest.fixture
def one_core_cpuset() -> Iterator[Path]:
    """A cgroup v1 cpuset of core 0 alone; skips with the reason where the machine refuses."""
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    tails = [(line.split()[4], line.split(" - ")[1].split())
             for line in Path("/proc/self/mountinfo").read_text().splitlines() if " - " in line]
    v1 = [point for point, tail in tails if tail[0] == "cgroup" and "cpuset" in tail[2].split(",")]
    if not v1:
        pytest.skip("no cgroup v1 cpuset hierarchy is mounted (the v2 cpuset is read the same way, "
                    "tested on literal files)")
    folder = Path(v1[0]) / f"devicewatch-test-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
        (folder / "cpuset.cpus").write_text("0")
        (folder / "cpuset.mems").write_text((Path(v1[0]) / "cpuset.mems").read_text().strip() or "0")
    except OSError as exc:
        _remove([folder])
        pytest.skip(f"the cgroup v1 cpuset hierarchy at {v1[0]} refused a cpuset of core 0: {exc}")
    try:
        yield folder
    finally:
        for pid in (folder / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not (folder / "cgroup.procs").read_text().strip(), timeout=10, what="the cpuset to empty")
        _remove([folder])
        assert not folder.exists(), f"{folder} was left behind"


@needs_two_cores
def test_a_workload_in_a_cpuset_of_one_core_is_limited_by_the_cpuset(tmp_path: Path, reap: list[int],
                                                                     one_core_cpuset: Path) -> None:
    out, pidfile, go = tmp_path / "run.jsonl", tmp_path / "pid", tmp_path / "go"
    wrapper = f'echo $$ > "{one_core_cpuset}/cgroup.procs" && exec "$0" "$@"'
    recorder = start_recorder(out, "sh", "-c", wrapper, PY, "-c", WAITER, str(pidfile), str(go))
    reap.append(recorder.pid)
    reap.extend(read_pids(pidfile))
    wait_for(lambda: [r for r in readings(out) if r["cpuset"] == "0"], timeout=10, what="a reading of the cpuset")
    go.touch()
    assert recorder.wait(timeout=30) == 0
    over = runfile.load(out).cpu_limits
    assert over is not None and over.latest.cpuset == (0,)
    # The kernel narrowed the affinity to the cpuset: the cpuset is what limits.
    assert over.latest.affinity == (0,) and over.latest.text() == f"1 core allowed of {CORES} (cpuset)"
