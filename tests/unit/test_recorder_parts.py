"""The recorder's parts on their own, without a subprocess: the rate bound, the stdout epoch
parser, the output pump (progress bars included), the cancel escalation, the status line,
the input relay."""

from __future__ import annotations

import io
import os
import signal

import pytest

from devicewatch.recorder import OutputPump, RateBound, StdoutEpochs, Terminal, Workload
from devicewatch.recorder.stdout_epochs import parse
from devicewatch.recorder.terminal import status_text


class Clock:
    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the rate bound ----------------------------------------------------------------------------

def test_the_bound_lets_a_burst_through_then_the_rate_and_counts_the_rest():
    clock = Clock()
    bound = RateBound(rate=4, burst=3, run_time=clock, clock=clock)
    assert [bound.take() for _ in range(4)] == [True, True, True, False]
    clock.now = 0.5                      # half a second earns 2 tokens
    assert sum(bound.take() for _ in range(7)) == 2
    clock.now = 100.0                    # however long the pause, at most a burst
    assert sum(bound.take() for _ in range(7)) == 3


def test_drops_are_noted_after_a_quiet_second_every_five_seconds_and_at_the_end():
    clock = Clock()
    bound = RateBound(rate=1, burst=1, run_time=clock, clock=clock)
    assert bound.due(final=True) is None            # nothing dropped: nothing to say
    bound.drop("lines", 3, size=12)
    clock.now = 0.5
    bound.drop("lines", 1, size=4)
    assert bound.due() is None                      # dropping still, for under 5 s
    clock.now = 1.6                                 # quiet for 1.1 s
    drops = bound.due()
    assert (drops.counts, drops.size, drops.first, drops.last, drops.total) == ({"lines": 4}, 16, 0.0, 0.5, 4)
    assert bound.due(final=True) is None            # the count started afresh
    for second in range(6):                         # a drop every second for 5 s
        clock.now = 10.0 + second
        bound.drop("marker")
    assert bound.due().total == 6                   # 5 s since the first: noted while it goes on


# -- epochs from printed output ----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Epoch 3/20", (3, 20, False)),                                              # Keras
    ("  Epoch 12/12  ", (12, 12, False)),
    ("Epoch 0:  45%|████▌     | 45/100 [00:01<00:02, 30.12it/s, v_num=0]", (0, None, False)),  # Lightning, tqdm
    ("Epoch 2/9 ━━━━━━━━━━━━━━━━ 45/100 0:00:01 • 0:00:02 30.12it/s v_num: 0", (2, 10, True)),  # Lightning, rich
    ("epoch 4: 100%|██████████| 50/50 [00:02<00:00, 22.1it/s, loss=0.31]", (4, None, False)),   # a tqdm desc
    ("Epoch 3/10:  12%|█▏        | 6/50 [00:00<00:03, 13.2it/s]", (3, 10, False)),
    ("{'loss': 2.3012, 'grad_norm': 1.4, 'learning_rate': 4e-05, 'epoch': 0.5}", (1, None, False)),  # Hugging Face
    ("{'eval_loss': 2.1, 'eval_runtime': 0.4, 'epoch': 1.0}", (1, None, False)),
    ("{'loss': 1.9, 'epoch': 1.25}", (2, None, False)),
])
def test_what_scripts_print_about_their_epochs_is_read(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", [
    "Epoch 3: loss 0.412 accuracy 0.88",    # printed once, often at the END of the epoch
    "Epoch 3/20 done in 4.2s, loss 0.3",
    "Epochs: 20", "epoch", "Loading checkpoint epoch_3.pt", "{'loss': 2.3}", "32/32 ━━━━━━━━ 1s 3ms/step",
])
def test_lines_that_only_mention_an_epoch_are_not_taken(text):
    assert parse(text) is None


def epochs_writing(reported: bool = False) -> tuple[StdoutEpochs, list[dict]]:
    written: list[dict] = []
    clock = iter(float(i) for i in range(1000))
    return StdoutEpochs(as_written(written), lambda: next(clock), lambda: reported), written


def test_printed_epochs_open_and_close_epoch_phases_counting_from_one():
    epochs, written = epochs_writing()
    for text in ("Epoch 0:  10%|█ | 1/10 [00:00<00:01, 9.0it/s]", "Epoch 0:  90%|█████████ | 9/10 [00:01<00:00, 9.0it/s]",
                 "Epoch 1:  10%|█ | 1/10 [00:00<00:01, 9.0it/s]"):
        assert epochs.feed(text)
    epochs.close()
    assert [(r["kind"], r["epoch"], r["source"]) for r in written] == [
        ("phase_begin", 1, "stdout"), ("phase_end", 1, "stdout"), ("phase_begin", 2, "stdout"), ("phase_end", 2, "stdout")]
    assert {r["name"] for r in written} == {"epoch"}


def test_printed_epochs_write_nothing_once_the_workload_reports_phases():
    epochs, written = epochs_writing(reported=True)
    assert epochs.feed("Epoch 1/3")
    assert written == [] and epochs.epoch == 1     # still followed, for the status line


class Pipe:
    """A pipe that hands over its bytes in the chunks given, as a workload's writes arrive."""

    def __init__(self, chunks: list[bytes]):
        self.chunks = list(chunks)

    def read1(self, _size: int) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    def close(self) -> None:
        pass


def as_written(written: list[dict]):
    """A writer that keeps each record as the run file gets it (a typed one as its ``to_json``)."""
    return lambda record: written.append(record if isinstance(record, dict) else record.to_json())


def pump_of(data: bytes | list[bytes], echo: bool = False) -> tuple[list[dict], StdoutEpochs, io.StringIO]:
    written: list[dict] = []
    clock = iter(float(i) / 10 for i in range(10_000))
    t = lambda: next(clock)  # noqa: E731
    shown = io.StringIO()
    keep = as_written(written)
    epochs = StdoutEpochs(keep, t, lambda: False)
    terminal = Terminal(shown, shown, echo, False, keep, t)
    pump = OutputPump("stderr", keep, t, terminal, epochs)
    pump.pump(Pipe(data if isinstance(data, list) else [data]))
    return written, epochs, shown


@pytest.mark.parametrize("chunked", [True, False], ids=["update by update", "all at once"])
def test_a_progress_bar_is_followed_live_and_recorded_as_each_epoch_ended(chunked):
    updates = [b"\rEpoch %d: %3d%%|##  | %d/4 [00:01<00:00, 3.9it/s]" % (e, 25 * s, s)
               for e in (0, 1) for s in range(1, 5)] + [b"\ndone\n"]
    written, epochs, _ = pump_of(updates if chunked else b"".join(updates))
    logs = [r["line"] for r in written if r["type"] == "log" and not r.get("partial")]
    assert logs == ["Epoch 0: 100%|##  | 4/4 [00:01<00:00, 3.9it/s]",     # the first epoch's last update
                    "Epoch 1: 100%|##  | 4/4 [00:01<00:00, 3.9it/s]", "done"]
    phases = [(r["kind"], r["epoch"]) for r in written if r["type"] == "event"]
    assert phases == [("phase_begin", 1), ("phase_end", 1), ("phase_begin", 2)]
    # The second epoch began at its first update, before the bar's line was finished.
    begin_2 = next(r["t"] for r in written if r.get("kind") == "phase_begin" and r["epoch"] == 2)
    assert begin_2 < next(r["t"] for r in written if r.get("line") == "done")


def test_a_bar_that_never_ends_its_line_holds_no_memory_and_is_recorded_as_it_ended():
    updates = b"".join(b"\r%6d/100000 steps" % i for i in range(100_000))   # 1.7 MB, never a newline
    written, _, _ = pump_of(updates)
    (log,) = [r for r in written if r["type"] == "log" and not r.get("partial")]
    assert log["line"] == " 99999/100000 steps" and "cut_from" not in log


def test_echo_shows_the_output_as_written_and_a_line_past_the_limit_is_cut_and_says_its_length():
    written, _, shown = pump_of([b"one\n" + b"x" * 40_000, b"x" * 30_000 + b"\nlast"], echo=True)
    logs = [r for r in written if r["type"] == "log" and not r.get("partial")]
    assert [r["line"][:3] for r in logs] == ["one", "xxx", "las"]
    assert logs[1]["cut_from"] == 70_000 and len(logs[1]["line"]) == 64 * 1024
    assert shown.getvalue() == "one\n" + "x" * 70_000 + "\nlast"   # no newline added, none taken


def test_an_open_line_is_recorded_as_a_terminal_shows_it_and_its_end_replaces_it():
    written, _, _ = pump_of([b"loading", b"...", b"\rxy", b" done\n"])
    logs = [(r["line"], bool(r.get("partial"))) for r in written if r["type"] == "log"]
    # Each chunk came at once (no time between them): the first open state is recorded at
    # once, the later ones within PARTIAL_EVERY are left to the line's end.
    assert logs[0] == ("loading", True) and logs[-1] == ("xy done", False)
    assert all(partial for _, partial in logs[:-1])


def test_a_line_that_is_not_utf8_keeps_its_bytes():
    import base64

    line = bytes(b for b in range(256) if b not in b"\n\r")   # a \r redraws the line: recorded as it ends
    written, _, _ = pump_of(line + b"\n")
    (log,) = [r for r in written if r["type"] == "log" and not r.get("partial")]
    assert base64.b64decode(log["raw"]) == line and "\ufffd" in log["line"]


def test_a_pseudo_terminals_crlf_is_undone_even_split_between_reads():
    written: list[dict] = []
    keep = as_written(written)
    epochs = StdoutEpochs(keep, lambda: 0.0, lambda: False)
    pump = OutputPump("stdout", keep, lambda: 0.0, Terminal(io.StringIO(), io.StringIO(), False, False,
                      keep, lambda: 0.0), epochs, terminal_newlines=True)
    pump.pump(Pipe([b"a\r\nb\r", b"\nc\r\n"]))
    assert [r["line"] for r in written if r["type"] == "log" and not r.get("partial")] == ["a", "b", "c"]


# -- the workload: cancel escalation ---------------------------------------------------------

def test_a_cancel_escalates_sigint_then_sigterm_then_sigkill_one_grace_period_apart(monkeypatch):
    workload = Workload(["true"], {}, marker="/tmp/x", grace=3.0)
    sent: list[tuple[float, int]] = []
    monkeypatch.setattr(workload, "signal_tree", lambda sig, pids=(): sent.append((now, sig)))
    for now in (0.0, 0.1, 2.9, 3.0, 5.0, 6.0, 9.0, 12.0):
        workload.cancel_step(now, [])
    # Each but SIGKILL followed by SIGCONT: a stopped workload takes it at once.
    assert sent == [(0.0, signal.SIGINT), (0.0, signal.SIGCONT), (3.0, signal.SIGTERM), (3.0, signal.SIGCONT),
                    (6.0, signal.SIGKILL)]


def test_each_process_of_the_tree_is_signalled_once_the_group_at_once_and_one_that_left_it_by_itself(monkeypatch):
    import subprocess
    import sys

    script = (
        "import subprocess, sys, time\n"
        "sleep = [sys.executable, '-c', 'import time; time.sleep(60)']\n"
        "child = subprocess.Popen(sleep)\n"
        "loner = subprocess.Popen(sleep, start_new_session=True)\n"
        "print(child.pid, loner.pid, flush=True)\n"
        "time.sleep(60)\n")
    workload = Workload([sys.executable, "-c", script], dict(os.environ), marker="/tmp/x", grace=3.0)
    workload.start(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    child, loner = (int(pid) for pid in workload.process.stdout.readline().split())
    tree = [workload.pid, child, loner]
    killed: list[tuple[int, int]] = []
    real_kill = os.kill
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append((pid, sig)) or real_kill(pid, sig))
    try:
        workload.signal_tree(signal.SIGCONT, tree)   # harmless to all three
        # The group (the workload and its child) had it from killpg: only the one that left it is signalled by itself.
        assert killed == [(loner, signal.SIGCONT)]
    finally:
        workload.signal_tree(signal.SIGKILL, tree)
        workload.process.wait()
        workload.process.stdout.close()


def test_the_workload_state_takes_the_samplers_letters_and_keeps_its_syscall_file(monkeypatch):
    import subprocess
    import sys

    from devicewatch.recorder import workload as workload_module

    workload = Workload([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), marker="/tmp/x",
                        grace=3.0)
    workload.start(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # A letter given is believed: no /proc/PID/stat of its own is opened.
        assert workload.state([], {workload.pid: b"T"}) == workload_module.STOPPED
        assert workload.state([], {workload.pid: b"R"}) == workload_module.RUNNING
        # A sleeping process whose standard input is what it reads: its syscall file opened once.
        opened: list[str] = []
        real = workload_module.ProcFile
        monkeypatch.setattr(workload_module, "ProcFile", lambda path, size: opened.append(path) or real(path, size))
        workload.input_names = {"not what it reads"}
        for _ in range(3):
            assert workload.state([], {workload.pid: b"S"}) == workload_module.RUNNING
        assert opened == ([f"/proc/{workload.pid}/syscall"] if workload_module.READ_CALLS else [])
        workload.process.kill()   # gone: its file is closed and dropped
        workload.process.wait()
        assert workload.state([], {}) == workload_module.RUNNING
        assert workload._syscalls == {}
    finally:
        if workload.process.poll() is None:
            workload.process.kill()
            workload.process.wait()


# -- the status line ---------------------------------------------------------------------------

def test_the_status_line_says_time_epoch_phase_cpu_and_gpus():
    assert status_text(12.34, 3, 20, "train", 54.0, [97.0, 3.0]) == \
        "   12.3s · epoch 3/20 · train · CPU  54.0% · GPU  97%   3%"
    assert status_text(0.5, None, None, None, 2.0, []) == "    0.5s · CPU   2.0%"


# -- what the instrumentation did -----------------------------------------------------------

def test_the_instrumentations_news_sum_up_in_the_end_record():
    from devicewatch.recorder.instrumentation import NOT_ACTIVE, InstrumentationNews

    news = InstrumentationNews({"offered": True})
    assert news.summary() == {"active": False, "reason": NOT_ACTIVE}
    for record in ({"kind": "instrument", "state": "loaded", "pid": 7}, {"kind": "instrument", "state": "armed", "pid": 7, "framework": "torch"},
                   {"kind": "instrument", "state": "loaded", "pid": 8}, {"kind": "instrument", "state": "armed", "pid": 8, "framework": "torch"},
                   {"kind": "instrument", "state": "armed", "pid": 8, "framework": "lightning"},
                   {"kind": "instrument", "state": "error", "pid": 8, "framework": "torch", "detail": "next: ValueError: x"},
                   {"kind": "instrument", "state": "bounded", "pid": 8, "left_out": 12}, {"kind": "marker", "pid": 9}):
        news.take(record)
    assert news.summary() == {"active": True, "processes": 2, "frameworks": ["torch", "lightning"],
                              "errors": ["torch: next: ValueError: x"], "left_out": 12}
    off = InstrumentationNews({"offered": False, "reason": "switched off by --no-instrument"})
    off.take({"kind": "instrument", "state": "loaded", "pid": 1})
    assert off.summary() == {"active": False, "reason": "switched off by --no-instrument"}


def test_the_report_says_what_the_instrumentation_did_in_one_line():
    from devicewatch import analysis
    from devicewatch.runformat.runfile import Run

    def run(header: dict, end: dict | None) -> Run:
        return Run("x.jsonl", {"interval": 0.1, "host": {}, "workload": {}, **header},
                   end=None if end is None else {"type": "end", "t": 1.0, "status": "ok", **end})

    assert analysis.instrumentation_text(run({}, {"status": "ok"})) is None     # recorded before it existed
    assert analysis.instrumentation_text(run({"instrument": {"offered": True}}, {"status": "ok", "instrument": {
        "active": True, "processes": 2, "frameworks": ["torch", "lightning"]}})) == "active in 2 processes (torch, lightning)"
    assert analysis.instrumentation_text(run({"instrument": {"offered": False, "reason": "switched off"}}, None)) == \
        "not offered: switched off"
    assert analysis.instrumentation_text(run({"instrument": {"offered": True}}, {"instrument": {
        "active": True, "processes": 1, "errors": ["torch: boom"]}})) == \
        "active in 1 process; 1 hook(s) failed and disarmed themselves, first: torch: boom"


# -- the workload's terminal and input ------------------------------------------------------------

def test_a_terminal_size_is_columns_by_rows():
    from devicewatch.recorder.pseudo_terminal import parse_size

    assert parse_size("120x40") == (40, 120) and parse_size("80X24") == (24, 80)
    assert parse_size("120") is None and parse_size("0x40") is None and parse_size("ax40") is None


def test_a_pipes_input_ends_with_its_source_and_ctrl_c_is_counted_where_the_terminal_signals():
    from devicewatch.recorder.input_relay import InputRelay

    source_read, source_write = os.pipe()
    sink_read, sink_write = os.pipe()
    interrupts: list[int] = []
    relay = InputRelay(sink_write, owns_fd=True, interrupt_char=lambda: b"\x03", on_interrupt=lambda: interrupts.append(1))
    thread = relay.follow(source_read)
    os.write(source_write, b"one\x03two\x03")
    os.close(source_write)
    thread.join(5)
    received = b""
    while chunk := os.read(sink_read, 4096):   # ends: the relay closed the pipe at its source's end
        received += chunk
    assert received == b"one\x03two\x03" and len(interrupts) == 2
    assert relay.send(b"late") is False
    os.close(source_read)
    os.close(sink_read)


def test_keys_are_sent_as_a_terminal_sends_them():
    pytest.importorskip("textual")
    from devicewatch.tui.output_panel import key_bytes

    assert key_bytes("ctrl+c", None) == "\x03" and key_bytes("enter", "\r") == "\r"
    assert key_bytes("up", None) == "\x1b[A" and key_bytes("a", "a") == "a" and key_bytes("f5", None) is None
