"""The cores a process may use: the probe on literal /proc and cgroup files, the figures, and
how a run file keeps them (header, ``cpu_limits`` records, ``Run.cpu_limits``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from devicewatch.probes.cpu_limits import (AFFINITY, CPUSET, QUOTA, CgroupFiles, CpuLimits, CpuLimitsProbe,
                                           cpu_list_text, parse_cpu_list)
from devicewatch.runformat import records, runfile
from devicewatch.runformat.header import CpuLimitsOverRun, Header, Host, LimitsReading

PID = 4242


# -- the kernel's lists of cores ---------------------------------------------------------------

@pytest.mark.parametrize("text, cores", [
    ("0-3\n", (0, 1, 2, 3)), ("0,2,4-5", (0, 2, 4, 5)), ("7", (7,)), ("\n", ()), ("", ()),
    ("3-1", None), ("a-b", None), ("1,,2", (1, 2)), ("-1", None), ("0-", None),
])
def test_cpu_lists_read_as_the_kernel_writes_them(text: str, cores: tuple[int, ...] | None) -> None:
    assert parse_cpu_list(text) == cores


@given(st.sets(st.integers(0, 300)))
def test_cpu_lists_written_read_back(cores: set[int]) -> None:
    assert parse_cpu_list(cpu_list_text(cores)) == tuple(sorted(cores))


def test_cpu_list_text_joins_runs() -> None:
    assert cpu_list_text([5, 0, 1, 2, 3, 8, 9, 11]) == "0-3,5,8-9,11"


# -- the figures -------------------------------------------------------------------------------

def test_nothing_limits_a_process_that_may_use_every_core() -> None:
    limits = CpuLimits(2, (0, 1), (0, 1), None)
    assert (limits.allowed, limits.limited, limits.bound_by) == (2.0, False, ())
    assert limits.text() == "all 2 cores allowed"


def test_an_affinity_narrower_than_the_cpuset_is_what_limits() -> None:
    limits = CpuLimits(64, (0, 1, 2, 3), tuple(range(64)))
    assert (limits.allowed, limits.bound_by) == (4.0, (AFFINITY,))
    assert limits.text() == "4 cores allowed of 64 (affinity)"
    assert CpuLimits(2, (0,), (0, 1)).text() == "1 core allowed of 2 (affinity)"


def test_a_container_cpuset_is_named_not_the_affinity_that_follows_it() -> None:
    # In a container on cores 0-3 the kernel narrows every affinity to them too.
    assert CpuLimits(64, (0, 1, 2, 3), (0, 1, 2, 3)).bound_by == (CPUSET,)
    assert CpuLimits(64, None, (0, 1, 2, 3)).text() == "4 cores allowed of 64 (cpuset)"


def test_affinity_and_cpuset_each_leaving_out_cores_count_what_both_allow() -> None:
    limits = CpuLimits(64, (0, 1, 2, 3), (2, 3, 4, 5))
    assert (limits.cores, limits.allowed, limits.bound_by) == (2, 2.0, (AFFINITY, CPUSET))


def test_a_quota_may_allow_a_fraction_of_a_core_and_binds_below_the_sets() -> None:
    limits = CpuLimits(64, tuple(range(64)), tuple(range(64)), 2.5)
    assert (limits.allowed, limits.limited, limits.bound_by) == (2.5, True, (QUOTA,))
    assert limits.text() == "2.5 cores allowed of 64 (CPU quota)"
    assert CpuLimits(64, None, (0, 1, 2, 3), 4.0).text() == "4 cores allowed of 64 (cpuset, CPU quota)"
    # A quota of more cores than the sets allow limits nothing beyond them.
    assert CpuLimits(64, (0, 1), None, 8.0).bound_by == (AFFINITY,)
    assert not CpuLimits(4, None, None, 8.0).limited


def test_limits_read_back_as_written() -> None:
    limits = CpuLimits(64, (0, 1, 2, 3, 8), tuple(range(32)), 2.5)
    stored = json.loads(json.dumps(limits.to_json()))
    assert stored == {"host_cores": 64, "affinity": "0-3,8", "cpuset": "0-31", "quota_cores": 2.5, "allowed": 2.5}
    assert CpuLimits.from_json(stored) == limits
    assert CpuLimits.from_json({"host_cores": 2}) == CpuLimits(2)


@pytest.mark.parametrize("value", [
    None, [], "2", {}, {"host_cores": 0}, {"host_cores": True}, {"host_cores": 2.0},
    {"host_cores": 2, "affinity": [0, 1]}, {"host_cores": 2, "affinity": "x"}, {"host_cores": 2, "cpuset": 3},
    {"host_cores": 2, "quota_cores": 0}, {"host_cores": 2, "quota_cores": "1"}, {"host_cores": 2, "quota_cores": True},
])
def test_limits_not_as_written_are_none(value: object) -> None:
    assert CpuLimits.from_json(value) is None


def test_allowed_is_worked_out_again_not_taken_as_written() -> None:
    limits = CpuLimits.from_json({"host_cores": 4, "affinity": "0", "allowed": 4})
    assert limits is not None and limits.allowed == 1.0


# -- the probe on literal files ----------------------------------------------------------------

HYBRID_MOUNTS = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_MOUNTS = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def machine(tmp_path: Path, cgroup: str, mountinfo: str, files: dict[str, str],
            affinity: tuple[int, ...] | None = (0, 1, 2, 3, 4, 5, 6, 7)) -> CpuLimitsProbe:
    """A /proc with PID's cgroup file and our mount table, and the cgroup files FILES under ROOT."""
    proc, root = tmp_path / "proc", tmp_path / "root"
    (proc / str(PID)).mkdir(parents=True)
    (proc / "self").mkdir()
    (proc / str(PID) / "cgroup").write_text(cgroup)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    for path, text in files.items():
        place = root / path.lstrip("/")
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_text(text)
    return CpuLimitsProbe(PID, proc=str(proc), root=str(root), host_cores=8, affinity=lambda _pid: affinity)


def test_v2_the_smallest_quota_on_the_path_binds(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/jobs/train\n", V2_MOUNTS, {
        "/sys/fs/cgroup/cpuset.cpus.effective": "0-7\n",
        "/sys/fs/cgroup/jobs/cpuset.cpus.effective": "0-3\n",
        "/sys/fs/cgroup/jobs/cpu.max": "250000 100000\n",
        "/sys/fs/cgroup/jobs/train/cpu.max": "max 100000\n",
    })
    assert probe.read() == CpuLimits(8, tuple(range(8)), (0, 1, 2, 3), 2.5)


def test_v2_a_child_quota_below_its_parent_binds(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/jobs/train\n", V2_MOUNTS, {
        "/sys/fs/cgroup/jobs/cpu.max": "400000 100000\n",
        "/sys/fs/cgroup/jobs/train/cpu.max": "50000 100000\n",
    })
    limits = probe.read()
    assert limits is not None and (limits.cpuset, limits.quota_cores, limits.allowed) == (None, 0.5, 0.5)


def test_v2_without_a_limit_anywhere(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/user.slice\n", V2_MOUNTS, {
        "/sys/fs/cgroup/cpuset.cpus.effective": "0-7\n",
        "/sys/fs/cgroup/user.slice/cpu.max": "max 100000\n",
    })
    limits = probe.read()
    assert limits == CpuLimits(8, tuple(range(8)), tuple(range(8)), None) and not limits.limited


def test_v1_quota_and_cpuset_in_their_own_hierarchies(tmp_path: Path) -> None:
    probe = machine(tmp_path, "12:cpuset:/box\n4:cpu,cpuacct:/box\n1:name=systemd:/\n0::/\n", HYBRID_MOUNTS, {
        "/sys/fs/cgroup/cpuset/box/cpuset.effective_cpus": "2-3\n",
        "/sys/fs/cgroup/cpu,cpuacct/box/cpu.cfs_quota_us": "150000\n",
        "/sys/fs/cgroup/cpu,cpuacct/box/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    })
    assert probe.read() == CpuLimits(8, tuple(range(8)), (2, 3), 1.5)


def test_v1_cpuset_cpus_where_there_is_no_effective_file(tmp_path: Path) -> None:
    probe = machine(tmp_path, "12:cpuset:/box\n", HYBRID_MOUNTS, {"/sys/fs/cgroup/cpuset/box/cpuset.cpus": "5\n"})
    limits = probe.read()
    assert limits is not None and limits.cpuset == (5,) and limits.text() == "1 core allowed of 8 (cpuset)"


def test_hybrid_v2_quota_where_v1_mounts_no_cpu_controller(tmp_path: Path) -> None:
    mounts = "\n".join(line for line in HYBRID_MOUNTS.splitlines() if "cpuacct" not in line)
    probe = machine(tmp_path, "12:cpuset:/\n0::/job\n", mounts, {
        "/sys/fs/cgroup/cpuset/cpuset.effective_cpus": "0-7\n",
        "/sys/fs/cgroup/unified/job/cpu.max": "300000 100000\n",
    })
    assert probe.read() == CpuLimits(8, tuple(range(8)), tuple(range(8)), 3.0)


def test_a_container_sees_only_its_own_cgroup(tmp_path: Path) -> None:
    # With a cgroup namespace the container's cgroup is "/" and its parents are not there.
    probe = machine(tmp_path, "0::/\n", V2_MOUNTS, {
        "/sys/fs/cgroup/cpu.max": "200000 100000\n", "/sys/fs/cgroup/cpuset.cpus.effective": "0-3\n"})
    assert probe.read() == CpuLimits(8, tuple(range(8)), (0, 1, 2, 3), 2.0)


def test_a_container_without_a_namespace_shows_its_cgroup_at_the_mount_point(tmp_path: Path) -> None:
    # docker's v1 bind mounts: the hierarchy's /docker/ID is mounted at /sys/fs/cgroup/cpu.
    mounts = "40 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
    probe = machine(tmp_path, "4:cpu,cpuacct:/docker/abc\n", mounts, {
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"})
    limits = probe.read()
    assert limits is not None and limits.quota_cores == 0.5


def test_a_cgroup_outside_the_visible_hierarchy_is_not_read(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/../other\n", V2_MOUNTS, {"/sys/fs/cgroup/cpu.max": "100000 100000\n",
                                                           "/other/cpu.max": "100000 100000\n"})
    assert probe.read() == CpuLimits(8, tuple(range(8)))


def test_mount_points_with_escaped_spaces(tmp_path: Path) -> None:
    files = CgroupFiles.find("0::/a\n", "30 23 0:26 / /cg\\040root rw - cgroup2 cgroup2 rw\n")
    assert files.quota == (("/cg root/a/cpu.max", None), ("/cg root/cpu.max", None))


def test_a_process_moved_to_another_cgroup_is_followed(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/a\n", V2_MOUNTS, {"/sys/fs/cgroup/a/cpu.max": "max 100000\n",
                                                      "/sys/fs/cgroup/b/cpu.max": "100000 100000\n"})
    first = probe.read()
    assert first is not None and first.quota_cores is None
    (tmp_path / "proc" / str(PID) / "cgroup").write_text("0::/b\n")
    second = probe.read()
    assert second is not None and second.quota_cores == 1.0


def test_a_quota_written_is_read_on_the_next_reading(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/a\n", V2_MOUNTS, {"/sys/fs/cgroup/a/cpu.max": "max 100000\n"})
    assert probe.read() == CpuLimits(8, tuple(range(8)))
    (tmp_path / "root/sys/fs/cgroup/a/cpu.max").write_text("150000 100000\n")
    assert probe.read() == CpuLimits(8, tuple(range(8)), None, 1.5)


def test_a_process_gone_reads_none(tmp_path: Path) -> None:
    probe = machine(tmp_path, "0::/\n", V2_MOUNTS, {})
    (tmp_path / "proc" / str(PID) / "cgroup").unlink()
    (tmp_path / "proc" / str(PID)).rmdir()
    assert probe.read() is None


def test_a_machine_without_cgroups_still_has_the_affinity(tmp_path: Path) -> None:
    probe = machine(tmp_path, "", "", {}, affinity=(1, 2))
    assert probe.read() == CpuLimits(8, (1, 2))


# -- in the run file ---------------------------------------------------------------------------

HEADER = {"type": "header", "format": "devicewatch-run", "schema": 2, "started": "2026-01-01T00:00:00+00:00",
          "started_unix": 0.0, "interval": 0.1, "workload": {"command": ["x"]}}


def write_run(path: Path, host: dict, *lines: dict) -> runfile.Run:
    header = dict(HEADER, host=host)
    path.write_text("".join(json.dumps(r) + "\n" for r in (header, *lines)))
    return runfile.load(path)


def test_an_older_header_has_no_limits_and_loads() -> None:
    assert Host.parse({"cpu_count": 4}).cpu_limits is None
    assert Header.parse(dict(HEADER, host={"cpu_count": 4, "cpu_limits": "garbage"})).host.cpu_limits is None


def test_a_run_without_limits_anywhere_has_none(tmp_path: Path) -> None:
    run = write_run(tmp_path / "old.jsonl", {"cpu_count": 2}, {"type": "end", "t": 1.0, "status": "ok"})
    assert run.cpu_limits is None and run.bad_lines == 0


def test_the_header_limits_stand_for_a_run_without_the_workloads(tmp_path: Path) -> None:
    own = CpuLimits(2, (0,), (0, 1))
    run = write_run(tmp_path / "run.jsonl", {"cpu_count": 2, "cpu_limits": own.to_json()})
    assert run.header.host.cpu_limits == own
    assert run.cpu_limits == CpuLimitsOverRun((LimitsReading(0.0, own),), of_workload=False)


def test_the_workloads_readings_and_their_changes(tmp_path: Path) -> None:
    launch, narrowed, quota = CpuLimits(2, (0, 1), (0, 1)), CpuLimits(2, (0,), (0, 1)), CpuLimits(2, (0,), (0, 1), 0.5)
    run = write_run(tmp_path / "run.jsonl", {"cpu_count": 2, "cpu_limits": CpuLimits(2, (0, 1)).to_json()},
                    records.cpu_limits(0.02, 77, launch).to_json(),
                    {"type": "sample", "t": 0.1, "cpu": [10, 20]},
                    records.cpu_limits(3.0, 77, narrowed).to_json(),
                    {"type": "cpu_limits", "t": 4.0, "pid": 77, "host_cores": "two"},   # damaged: a bad line
                    records.cpu_limits(5.0, 77, quota).to_json())
    over = run.cpu_limits
    assert run.bad_lines == 1 and over is not None and over.of_workload
    assert (over.initial, over.latest, over.tightest) == (launch, quota, quota)
    assert [(c.t, c.limits.allowed) for c in over.changes] == [(3.0, 1.0), (5.0, 0.5)]
    assert (over.at(0.0), over.at(2.9), over.at(3.0), over.at(99)) == (launch, launch, narrowed, quota)


def test_a_limits_record_as_written() -> None:
    assert records.cpu_limits(1.5, 9, CpuLimits(64, None, (0, 1, 2, 3), 2.5)).to_json() == {
        "type": "cpu_limits", "t": 1.5, "pid": 9, "host_cores": 64, "affinity": None, "cpuset": "0-3",
        "quota_cores": 2.5, "allowed": 2.5}
