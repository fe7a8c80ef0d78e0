"""The control channel's commands, as the dashboard writes them and the recorder reads them."""

from __future__ import annotations

import json
import os

from devicewatch import control


def test_each_command_line_reads_back_as_its_command():
    assert control.parse_command(control.marker_line("warm-up done").strip()) == {"kind": "marker", "label": "warm-up done"}
    assert control.parse_command(control.stop_line("terminal closed").strip()) == {"kind": "stop", "reason": "terminal closed"}
    assert control.parse_command(control.detach_line().strip()) == {"kind": "detach"}
    assert control.parse_command(b'{"kind": "stop"}') == {"kind": "stop", "reason": None}


def test_anything_else_is_ignored():
    for line in (b'{"kind": "shutdown"}', b"not json", json.dumps({"kind": "marker", "label": 3}).encode(),
                 b"[1, 2]", b'{"kind": "marker", "label": "' + b"x" * 5000 + b'"}'):
        assert control.parse_command(line) is None


def followed(commands: bytes) -> tuple[list[dict], list[str]]:
    """What the recorder does with COMMANDS written and then the writing end closed."""
    read_fd, write_fd = os.pipe()
    written: list[dict] = []
    cancelled: list[str] = []
    thread = control.follow(read_fd, lambda record: written.append(record if isinstance(record, dict) else record.to_json()),
                            lambda: 2.5, cancelled.append)
    os.write(write_fd, commands)
    os.close(write_fd)
    thread.join(5)
    os.close(read_fd)
    return written, cancelled


def test_markers_are_written_as_dashboard_events():
    written, cancelled = followed(control.marker_line("look") + control.detach_line())
    assert written[0] == {"type": "event", "t": 2.5, "kind": "marker", "label": "look", "source": "dashboard"}
    assert written[1]["type"] == "notice" and cancelled == []


def test_end_of_input_without_detaching_cancels_the_run_as_the_dashboard_gone():
    _, cancelled = followed(control.marker_line("look"))
    assert cancelled == [control.DASHBOARD_GONE]


def test_a_stop_cancels_with_its_reason():
    _, cancelled = followed(control.stop_line("terminal closed") + control.detach_line())
    assert cancelled == ["terminal closed"]


def test_typed_keys_and_a_new_size_reach_the_workloads_terminal_as_sent():
    read_fd, write_fd = os.pipe()
    typed: list[bytes] = []
    sizes: list[tuple[int, int]] = []
    # A paste longer than one command is cut into several; every character arrives, in order.
    text = "héllo\x03\x1b[A" + "x" * (control.MAX_INPUT + 10)
    thread = control.follow(read_fd, lambda _r: None, lambda: 0.0, lambda _why: None,
                            send_input=typed.append, resize=sizes.append)
    os.write(write_fd, control.input_lines(text) + control.resize_line(40, 120) + control.detach_line())
    os.close(write_fd)
    thread.join(5)
    os.close(read_fd)
    assert b"".join(typed).decode() == text and len(typed) == 2
    assert sizes == [(40, 120)]


def test_a_size_that_is_no_terminals_is_ignored():
    for rows, columns in ((0, 80), (24, -1), (24, 10_001), ("24", 80), (True, 80)):
        assert control.parse_command(json.dumps({"kind": "resize", "rows": rows, "columns": columns}).encode()) is None


def passed_on(commands: bytes) -> tuple[list[str], list[str]]:
    """The signals passed on and the cancels of COMMANDS written and then the writing end closed."""
    read_fd, write_fd = os.pipe()
    signals: list[str] = []
    cancelled: list[str] = []
    thread = control.follow(read_fd, lambda _r: None, lambda: 0.0, cancelled.append, pass_on=signals.append)
    os.write(write_fd, commands)
    os.close(write_fd)
    thread.join(5)
    os.close(read_fd)
    return signals, cancelled


def test_a_signal_is_passed_on_by_name_and_after_an_ending_one_the_dashboards_going_cancels_nothing():
    # SIGUSR1 leaves the run going: the dashboard's going then ends it, as without a signal.
    assert passed_on(control.signal_line("SIGUSR1")) == (["SIGUSR1"], [control.DASHBOARD_GONE])
    # After SIGTERM the workload has its grace, and the recorder ends it then: no cancel (whose
    # SIGINT would reach the workload too).
    for name in control.ENDING_SIGNALS:
        assert passed_on(control.signal_line(name)) == ([name], [])


def test_only_the_signals_a_dashboard_passes_on_are_read():
    for name in ("SIGKILL", "SIGSTOP", "SIGINT", "TERM", 15, None):
        assert control.parse_command(json.dumps({"kind": "signal", "signal": name}).encode()) is None
    assert control.parse_command(control.signal_line("SIGQUIT").strip()) == {"kind": "signal", "signal": "SIGQUIT"}


def test_the_channels_signals_are_the_ones_the_recorder_passes_on():
    from devicewatch.recorder.workload import ENDING_SIGNALS, PASSED_SIGNALS
    from devicewatch.tui import outside_signals

    assert control.SIGNALS == tuple(sig.name for sig in PASSED_SIGNALS) == tuple(s.name for s in outside_signals.PASSED)
    assert control.ENDING_SIGNALS == tuple(sig.name for sig in ENDING_SIGNALS) == \
        tuple(s.name for s in outside_signals.ENDING)
