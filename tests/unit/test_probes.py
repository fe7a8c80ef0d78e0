"""The CPU and process probes: /proc read directly agrees with psutil, and the psutil path
still works where there is no such /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from devicewatch.probes import cpu as cpu_probe
from devicewatch.probes import procfs
from devicewatch.probes import process as process_probe
from devicewatch.probes.process import ProcessTreeProbe, SelfProbe

pytestmark = pytest.mark.skipif(not procfs.available(), reason="Linux /proc")

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_core_times_agree_with_psutil_over_one_interval():
    cores = procfs.CoreTimes()
    psutil.cpu_percent(percpu=True)
    _spin(0.5)
    ours, theirs = cores.percent(), psutil.cpu_percent(percpu=True)
    assert len(ours) == len(theirs) == len(psutil.cpu_percent(percpu=True))
    assert all(0.0 <= value <= 100.0 for value in ours)
    assert max(ours) >= 50.0  # the core that spun
    # One source, read a few microseconds apart: the sums agree to a clock tick or two.
    assert sum(ours) == pytest.approx(sum(theirs), abs=10.0)


def test_meminfo_agrees_with_psutil():
    memory = procfs.MemInfo().read()
    virtual, swap = psutil.virtual_memory(), psutil.swap_memory()
    assert memory is not None
    assert memory["total"] == virtual.total
    assert memory["used"] == pytest.approx(virtual.total - virtual.available, abs=64 << 20)
    assert memory["swap_total"] == swap.total
    assert memory["swap_used"] == pytest.approx(swap.used, abs=64 << 20)


def test_proc_file_reads_a_file_longer_than_its_first_buffer():
    whole = open(f"/proc/{os.getpid()}/status", "rb").read()
    data = procfs.ProcFile(f"/proc/{os.getpid()}/status", size=16).read()
    assert data.split(b"\n")[0] == whole.split(b"\n")[0] and len(data) > 16
    assert data.count(b"\n") == whole.count(b"\n")


def test_task_stat_reads_cpu_rss_threads_and_ends_with_the_process():
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=1.0)])
    try:
        stat = procfs.TaskStat(child.pid)
        proc = psutil.Process(child.pid)
        ran, started = sum(proc.cpu_times()[:2]), time.monotonic()
        assert stat.read()[0] == 0.0  # primes
        time.sleep(0.5)
        cpu, rss, threads = stat.read()
        ran, took = sum(proc.cpu_times()[:2]) - ran, time.monotonic() - started
        # What the kernel says it ran over the same half second: a whole core on a quiet machine,
        # its share on a busy one.
        assert cpu > 0.0 and cpu == pytest.approx(100.0 * ran / took, abs=10.0)
        assert rss == pytest.approx(proc.memory_info().rss, rel=0.2)
        assert threads == proc.num_threads()
        child.wait()
        assert stat.read() is None  # gone: the descriptor does not follow a reused PID
    finally:
        child.kill()
        child.wait()


def test_task_stat_reads_a_zombie_until_it_is_reaped():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = procfs.TaskStat(child.pid)
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    cpu, rss, _threads = stat.read()
    assert (cpu, rss) == (0.0, 0)
    child.wait()
    assert stat.read() is None


def test_task_stat_keeps_the_state_letter_it_read_and_the_tree_hands_them_on():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        tree = ProcessTreeProbe(child.pid)
        tree.sample()
        assert tree.states()[child.pid] == proc_state_letter(child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
            time.sleep(0.01)
        assert tree.states()[child.pid] != b"T"   # as of the last sample, not read again
        tree.sample()
        assert tree.states()[child.pid] == b"T"
    finally:
        child.kill()
        child.wait()


def proc_state_letter(pid: int) -> bytes:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[1].split()[0]


def test_own_cpu_counts_every_thread_of_this_process():
    ran: list[float] = []

    def spin() -> None:
        began = time.thread_time()
        _spin(0.4)
        ran.append(time.thread_time() - began)

    own, started = procfs.OwnCpu(), time.monotonic()
    spinners = [threading.Thread(target=spin) for _ in range(2)]
    for thread in spinners:
        thread.start()
    for thread in spinners:
        thread.join()
    percent, took = own.percent(), time.monotonic() - started
    # At least what the two spinners ran, each by its own clock: whatever share of a core a busy
    # machine gave them, the process's figure holds both threads (times() counts in 10 ms ticks).
    assert len(ran) == 2 and percent >= 100.0 * (sum(ran) - 0.03) / took


def _tree_readings(monkeypatch, on_proc: bool) -> tuple[dict, dict, float | None, float]:
    """The tree's, the machine's and our own readings over 0.6 s of a workload and its child
    spinning, and the CPU % the kernel says the two ran over the same interval."""
    if not on_proc:
        monkeypatch.setattr(procfs, "available", lambda: False)
    workload = subprocess.Popen([sys.executable, "-c",
                                 "import subprocess, sys\n"
                                 f"child = subprocess.Popen([sys.executable, '-c', {SPIN.format(seconds=5)!r}])\n"
                                 f"exec({SPIN.format(seconds=5)!r})\nchild.wait()\n"])
    try:
        deadline = time.monotonic() + 10  # the child has started (a loaded machine starts Python slowly)
        while not psutil.Process(workload.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        tree = ProcessTreeProbe(workload.pid)
        processes = [psutil.Process(workload.pid), *psutil.Process(workload.pid).children()]
        tree.sample()
        ran, started = sum(sum(p.cpu_times()[:2]) for p in processes), time.monotonic()
        probe, me = cpu_probe.CpuProbe(), SelfProbe(os.getpid())
        time.sleep(0.6)
        proc = tree.sample()
        ran, took = sum(sum(p.cpu_times()[:2]) for p in processes) - ran, time.monotonic() - started
        return proc, probe.sample(), me.sample(), 100.0 * ran / took
    finally:
        for process in [*psutil.Process(workload.pid).children(recursive=True), workload]:
            process.kill()  # the spinning child too: nothing left behind
        workload.wait()


@pytest.mark.parametrize("on_proc", [True, False], ids=["proc", "psutil"])
def test_probes_read_the_same_on_both_paths(monkeypatch, on_proc):
    proc, system, me, ran = _tree_readings(monkeypatch, on_proc)
    assert proc["count"] == 2 and proc["threads"] >= 2
    # What the kernel says the two spinners ran, whatever share a busy machine gave them: each
    # process's time comes in 10 ms ticks, and the two reads are a few milliseconds apart.
    assert proc["cpu"] > 0.0 and proc["cpu"] == pytest.approx(ran, abs=10.0) and proc["rss"] > 1 << 20
    assert len(system["cpu"]) == psutil.cpu_count()
    assert system["mem"]["total"] == psutil.virtual_memory().total
    assert 0 < system["mem"]["used"] < system["mem"]["total"]
    assert me is not None and me >= 0.0


def test_a_proc_file_gone_before_it_opens_raises_once_and_leaves_nothing_to_clean(monkeypatch):
    import gc

    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(FileNotFoundError):
        procfs.ProcFile("/proc/999999999/stat")
    gc.collect()  # its __del__ runs on the half-made object: no "Exception ignored" from it
    assert unraisable == []


MEMINFO = (b"MemTotal:       24683656 kB\nMemFree:        23158220 kB\nMemAvailable:   24207640 kB\n"
           b"Buffers:           50088 kB\nSwapCached:            0 kB\nSwapTotal:       2097148 kB\n"
           b"SwapFree:        1048576 kB\nHugePages_Total:       0\n")


def _meminfo_of(tmp_path, text: bytes) -> procfs.MemInfo:
    path = tmp_path / "meminfo"
    path.write_bytes(text)
    memory = procfs.MemInfo.__new__(procfs.MemInfo)
    memory._file = procfs.ProcFile(str(path))
    return memory


def test_meminfo_reads_its_four_lines_by_name_wherever_they_are(tmp_path):
    kib = 1024
    assert _meminfo_of(tmp_path, MEMINFO).read() == {
        "used": (24683656 - 24207640) * kib, "total": 24683656 * kib,
        "swap_used": (2097148 - 1048576) * kib, "swap_total": 2097148 * kib}
    # Lines in another order, the last without its newline, SwapCached before SwapTotal.
    shuffled = b"\n".join(reversed(MEMINFO.rstrip(b"\n").split(b"\n")))
    assert _meminfo_of(tmp_path, shuffled).read() == _meminfo_of(tmp_path, MEMINFO).read()
    # No swap lines: no swap. No MemAvailable (a kernel before 3.14): None, psutil estimates it.
    no_swap = b"".join(line + b"\n" for line in MEMINFO.split(b"\n") if line and not line.startswith(b"Swap"))
    assert _meminfo_of(tmp_path, no_swap).read()["swap_total"] == 0
    assert _meminfo_of(tmp_path, MEMINFO.replace(b"MemAvailable", b"MemAvail")).read() is None


def test_the_cpu_frequency_is_psutils_without_reading_it_twice(monkeypatch):
    freq = psutil.cpu_freq()
    probe = cpu_probe.CpuProbe()
    if probe._clocks.source == "cpuinfo":   # the clocks just read give it: psutil is not asked
        def asked_again():
            raise AssertionError("psutil read /proc/cpuinfo a second time")
        monkeypatch.setattr(cpu_probe.psutil, "cpu_freq", asked_again)
    reading = probe.sample()   # the first sample reads the slow readings
    if freq is None:
        assert reading["freq_mhz"] is None
        return
    # Clocks move between two reads: within a tenth (a virtual machine's stay put).
    assert reading["freq_mhz"] == pytest.approx(freq.current, rel=0.1)


# -- the tree's refresh, left out while nothing can have joined it -------------------------------

# Waits for a file, then starts a grandchild that sleeps (or, with "exit", one that exits at once
# and is never reaped: a zombie), and sleeps on.
PARENT = """
import os, subprocess, sys, time
go, how = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.01)
child = subprocess.Popen([sys.executable, "-c", "pass" if how == "exit" else "import time; time.sleep(30)"])
open(go + ".started", "w").close()
time.sleep(30)
"""


def _wait(condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _refreshes(tree: ProcessTreeProbe, times: int) -> dict:
    """TIMES refreshes: each REFRESH_EVERY samples; the last sample's reading."""
    from devicewatch.probes.process import REFRESH_EVERY

    reading = None
    for _ in range(times * REFRESH_EVERY):
        reading = tree.sample()
    assert reading is not None
    return reading


@pytest.fixture
def parent(tmp_path):
    go = tmp_path / "go"
    processes = []

    def start(how: str = "sleep") -> tuple[subprocess.Popen, object]:
        process = subprocess.Popen([sys.executable, "-c", PARENT, str(go), how])
        processes.append(process)
        return process, go

    yield start
    for process in processes:
        for child in psutil.Process(process.pid).children(recursive=True):
            child.kill()
        process.kill()
        process.wait()


class _FixedPid:
    """A last PID that moves only when told to: as if nothing else on the machine started."""

    def __init__(self) -> None:
        self.pid = 1000

    def read(self) -> int:
        return self.pid


def test_a_refresh_with_no_pid_handed_out_since_the_last_walk_is_left_out(parent):
    process, go = parent()
    tree = ProcessTreeProbe(process.pid)
    tree._last_pid = fixed = _FixedPid()
    assert _refreshes(tree, 1)["count"] == 1 and tree.walks == 1
    go.touch()
    _wait(lambda: os.path.exists(f"{go}.started"), "the grandchild")
    # The kernel says no PID was handed out: the walk is left out, so the grandchild is not seen.
    assert _refreshes(tree, 2)["count"] == 1 and tree.walks == 1
    fixed.pid += 1
    assert _refreshes(tree, 1)["count"] == 2 and tree.walks == 2


def test_a_process_started_between_refreshes_is_found_at_the_next(parent):
    process, go = parent()
    tree = ProcessTreeProbe(process.pid)
    assert tree._last_pid.read() is not None   # this kernel says its last PID: the walks may be left out
    assert _refreshes(tree, 1)["count"] == 1
    go.touch()
    _wait(lambda: os.path.exists(f"{go}.started"), "the grandchild")
    assert _refreshes(tree, 1)["count"] == 2


def test_a_zombie_in_the_tree_keeps_the_walks_going(parent):
    process, go = parent("exit")
    tree = ProcessTreeProbe(process.pid)
    tree._last_pid = _FixedPid()
    go.touch()
    _wait(lambda: os.path.exists(f"{go}.started"), "the grandchild")
    [grandchild] = psutil.Process(process.pid).children()
    _wait(lambda: grandchild.status() == psutil.STATUS_ZOMBIE, "the grandchild to exit")
    _refreshes(tree, 1)
    assert tree.states().get(grandchild.pid) == b"Z"
    walks = tree.walks
    # Its children would go to the subreaper: a zombie's tree is walked again however still the PIDs.
    _refreshes(tree, 2)
    assert tree.walks == walks + 2


def test_the_last_pid_moves_with_a_new_process_and_none_where_the_kernel_does_not_say(tmp_path):
    from devicewatch.probes.process import LastPid

    last = LastPid()
    before = last.read()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    after = last.read()
    assert before is not None and after is not None and after != before
    (tmp_path / "loadavg").write_text("0.00 0.00 0.00 1/100\n")   # no fifth field
    assert LastPid(str(tmp_path / "loadavg")).read() is None
    assert LastPid(str(tmp_path / "missing")).read() is None


# -- threads' waits for a core ----------------------------------------------------------------

def test_a_process_that_shares_its_core_with_another_spinner_waits_for_it_about_half_the_time():
    core = min(os.sched_getaffinity(0))
    pin = f"import os; os.sched_setaffinity(0, {{{core}}})\n"
    spinners = [subprocess.Popen([sys.executable, "-c", pin + SPIN.format(seconds=4)]) for _ in range(2)]
    try:
        delays = procfs.ThreadDelays(spinners[0].pid)
        assert delays.available and delays.threads == 1
        time.sleep(0.5)   # both pinned and spinning
        delays.waited()
        started = time.monotonic()
        time.sleep(1.0)
        waited, took = delays.waited() / 1e9, time.monotonic() - started
        # Two spinners on one core each run about half the time and wait the other half; other
        # programs on that core only add to the wait, and one thread cannot wait longer than it took.
        assert 0.3 * took < waited <= took + 0.05
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_threads_are_read_in_turn_each_once_and_an_ended_one_is_let_go():
    # Five threads that end when a line comes on its stdin.
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, threading, time\n"
                              "done = threading.Event()\n"
                              "for _ in range(5): threading.Thread(target=done.wait, daemon=True).start()\n"
                              "print(flush=True); sys.stdin.readline(); done.set(); time.sleep(30)\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        child.stdout.readline()   # its five threads have started
        delays = procfs.ThreadDelays(child.pid)
        assert delays.threads == 6
        delays.waited(4)
        assert len(delays._last) == 4
        delays.waited(4)   # the last two, then the first two again
        assert len(delays._last) == 6
        child.stdin.write(b"\n")
        child.stdin.flush()
        _wait(lambda: psutil.Process(child.pid).num_threads() == 1, "the five threads to end")
        delays.waited()
        assert delays.threads == 1 and list(delays._last) == [str(child.pid)]
    finally:
        child.kill()
        child.wait()


def test_each_thread_waits_are_read_once_in_two_seconds_of_samples_not_more_often(monkeypatch):
    """46 threads (the main one and 45 waiting): ceil(46 / 20) = 3 read a sample, so that every
    one is read within THREADS_COVER samples; one thread alone, one a sample."""
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, threading\n"
                              "done = threading.Event()\n"
                              "for _ in range(45): threading.Thread(target=done.wait, daemon=True).start()\n"
                              "print(flush=True); sys.stdin.readline()\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lone = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE)
    asked: list[int | None] = []
    original = procfs.ThreadDelays.waited

    def counted(self, most=None):
        asked.append(most)
        return original(self, most)

    try:
        child.stdout.readline()   # its 45 threads have started
        assert process_probe.THREADS_COVER == 20 and process_probe.THREADS_READ >= 3
        monkeypatch.setattr(procfs.ThreadDelays, "waited", counted)
        for pid, threads, each in ((child.pid, 46, 3), (lone.pid, 1, 1)):
            tree = ProcessTreeProbe(pid)
            asked.clear()
            for _ in range(process_probe.THREADS_COVER):
                tree.sample()
            assert asked == [each] * process_probe.THREADS_COVER
            assert tree._delays[pid].threads == threads   # read in turn: 60 reads of 46 threads read each
    finally:
        for proc in (child, lone):
            proc.kill()
            proc.wait()
