"""What the workload said about itself and how the run ended, in words: run info, results,
the last error line, why a run failed (``failure``), the instrumentation's line, the status,
GPU names, the driver's rate; and the names of an epoch row's loop and data wait, which every
view shows the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..phase_kinds import kind_of
from ..runformat.records import LogLine
from ..runformat.runfile import NO_END_RECORD, Run
from ..safe_text import inert


def run_info(run: Run) -> dict[str, Any]:
    """All run_info events merged, later keys winning: framework, device, params, data, …"""
    info: dict[str, Any] = {}
    for event in run.run_info_events:
        info.update(event.info)
    return info


def results(run: Run) -> list[dict[str, Any]]:
    """Each result event as one flat row: its name and its values."""
    return [{"name": e.name, **e.values} for e in run.result_events]


def last_error_line(run: Run) -> str | None:
    """The workload's last line on stderr: a workload that fails says why there."""
    lines = last_error_lines(run, 1)
    return lines[0].strip() if lines else None


def last_error_lines(run: Run, count: int) -> list[str]:
    """The workload's last COUNT lines on stderr (blank ones left out), oldest first: a
    traceback's last frames and its error."""
    out: list[str] = []
    for line in reversed(run.logs):
        if line.stream == "stderr" and line.line.strip():
            out.append(line.line.rstrip())
            if len(out) >= count:
                break
    return out[::-1]


# -- why a run failed ------------------------------------------------------------------------
# A failure is the first thing every view shows of a run (the dashboard at any size, the line
# printed when it quits, report, compare, try), and each shows the same reason, worked out here.

FAILED_STATUSES = ("failed", "error")   # the workload failed, or could not be started
TRACEBACK = "Traceback (most recent call last):"
FAILURE_TAIL = 200   # the output lines searched for why a run failed: a traceback's are the last


@dataclass(frozen=True)
class Failure:
    """Why a run failed, said once for every view.

    ``how`` is how it ended (``exit code 1``, ``killed by SIGSEGV``; for a command that could
    not start, its start error); ``said`` is what the workload said about it, where it said
    anything: a Python exception's last line (``ZeroDivisionError: division by zero``), else
    its last line on stderr, else (its stderr shared its terminal with its output, as in the
    dashboard) its last line of output; ``source`` says which of them it is (``start``,
    ``exception``, ``stderr``, ``output``, or ``none``)."""

    how: str
    said: str | None
    source: str

    @property
    def text(self) -> str:
        """One line: ``cannot start nosuchcmd: No such file or directory``, ``failed (exit code
        1): ZeroDivisionError: division by zero``, ``failed (exit code 1); its last output:
        …``, ``failed (killed by SIGKILL) without a line of output``."""
        if self.source == "start":
            return self.how
        if self.source == "output":
            return f"failed ({self.how}); its last output: {self.said}"
        if self.said is None:
            return f"failed ({self.how}) without a line of output"
        return f"failed ({self.how}): {self.said}"

    def of(self, subject: str) -> str:
        """The failure said of SUBJECT (``A``, ``the script as written``): ``A failed (exit
        code 1): ValueError: …``, ``A could not be started: cannot start nosuchcmd: …``."""
        if self.source == "start":
            return f"{subject} could not be started: {self.text}"
        return f"{subject} {self.text}"

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "said": self.said, "source": self.source, "text": self.text}


def failure(run: Run) -> Failure | None:
    """Why RUN failed, or None where it did not (it finished, was ended on purpose or
    cancelled, or has no end record yet: ``status_text`` says which)."""
    end = run.end
    if end is None or end.status not in FAILED_STATUSES:
        return None
    if end.status == "error":   # the recorder could not start the command: its reason says why
        return Failure(inert(end.reason or "the workload could not be started"), None, "start")
    how = inert(end.reason) if end.reason else \
        f"killed by {end.signal}" if end.signal else f"exit code {end.exit_code}"
    errors, output = _tail(run.logs)
    for lines in (errors, output):
        found = exception_line(lines)
        if found is not None:
            return Failure(how, found, "exception")
    if errors:
        return Failure(how, errors[-1].strip(), "stderr")
    if output:
        return Failure(how, output[-1].strip(), "output")
    return Failure(how, None, "none")


# The verdicts that judge nothing: too few samples. Beside a failure they are not the news, and
# a view that shows the failure leaves them out (``verdict_beside``).
NOT_JUDGED = frozenset({"too short", "too early"})


def verdict_beside(found: Failure | None, label: str) -> bool:
    """Whether a view shows a verdict labelled LABEL beside FOUND (the run's failure, or None):
    always where the run did not fail; beside a failure only a verdict that judged something,
    after the failure (a run that failed in its first second has no "too few samples" news)."""
    return found is None or label not in NOT_JUDGED


def failure_text(run: Run) -> str | None:
    """``failure(run).text``, or None where the run did not fail."""
    found = failure(run)
    return found.text if found is not None else None


def exception_line(lines: list[str]) -> str | None:
    """The last Python exception's line in LINES (a traceback's first line after its frames at
    its own indent: ``ValueError: bad batch``), or None where LINES hold no traceback that got
    so far. Of chained exceptions, the last one's: the one that ended the program; in an
    exception group, drawn inside ``|`` margins, its last exception with a traceback."""
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip().endswith(TRACEBACK)), None)
    if start is None:
        return None
    header = lines[start]
    margin = header[:len(header) - len(header.lstrip(" |+"))].replace("+", "|")   # "" outside a group
    for line in lines[start + 1:]:
        if line.startswith(margin) and line[len(margin):].strip() and not line[len(margin):][:1].isspace():
            return line[len(margin):].strip()
    return None


def _tail(logs: list[LogLine]) -> tuple[list[str], list[str]]:
    """The workload's stderr and its other output among its last lines (``FAILURE_TAIL`` of
    each at most), oldest first, escape sequences removed; blank lines are left out, and so is
    a partial line that a later line of its stream replaced."""
    errors: list[str] = []
    output: list[str] = []
    later: set[str] = set()   # streams with a line after the one at hand
    for line in logs[-2 * FAILURE_TAIL:][::-1]:
        replaced = line.partial and line.stream in later
        later.add(line.stream)
        text = inert(line.line)
        if replaced or not text.strip():
            continue
        kept = errors if line.stream == "stderr" else output
        if len(kept) < FAILURE_TAIL:
            kept.append(text.rstrip())
    return errors[::-1], output[::-1]


def instrumentation_text(run: Run) -> str | None:
    """What the zero-code instrumentation did, in one line (from the header's ``instrument``
    and the end record's): ``active in 2 processes (torch, lightning)``, or why not. None for a
    run recorded before it existed."""
    offered = run.header.instrument
    summary = run.end.instrument if run.end else None
    if summary is None:
        if offered is None:
            return None
        return "offered (the run has no end record to say more)" if offered.offered \
            else f"not offered: {offered.reason}"
    if not summary.get("active"):
        return f"not active: {summary.get('reason')}"
    n = summary.get("processes", 0)
    text = f"active in {n} process{'es' * (n != 1)}"
    if summary.get("frameworks"):
        text += f" ({', '.join(map(str, summary['frameworks']))})"
    errors = summary.get("errors")
    if isinstance(errors, list) and errors:
        text += f"; {len(errors)} hook(s) failed and disarmed themselves, first: {errors[0]}"
    if summary.get("left_out"):
        text += f"; {summary['left_out']} of its events over its budget left out"
    return text


def status_text(run: Run) -> str:
    """How the run ended, in words: "ok", "failed (exit code 1)", or the recorder's death."""
    if run.end is None:
        return NO_END_RECORD
    status = run.end.status
    if status == "trial":
        return "trial (ended on purpose once its window was measured)"
    if run.end.exit_code not in (0, None):
        status += f" (exit code {run.end.exit_code})"
    return status


def gpu_label(run: Run, index: int) -> str:
    """The name the header gives GPU ``index``, or "GPU N" where it gives none."""
    names = run.gpu_names
    return names[index] if index < len(names) and names[index] else f"GPU {index}"


def driver_rate_text(period: float | None) -> str:
    """One line for the views and the report: how often the driver itself samples utilization."""
    if period is None:
        return "GPU utilization: driver sample period unknown (one-second averages)"
    return f"GPU utilization: driver samples every {period * 1000:.0f} ms"


# -- the data figure of an epoch row ---------------------------------------------------------
# One figure per row says how long the training loop waited on its input: the data wait, in
# seconds and as its share of the loop (the share the verdict judges). Where it is shown, the
# seconds of the row's ``data`` phases are not shown beside it: they are that wait (or the part
# of it long enough to draw), and two "data" figures on one row read as two different things.
# The report, the comparison and the dashboard's panels take their names and legend from here.

LOOP = "loop"
DATA_WAIT = "data wait"
DATA_WAIT_LEGEND = (f"{LOOP}: the training loop, its data wait included; "
                    f"{DATA_WAIT}: the loop's seconds waiting on input, and their share of the loop")


def data_wait_text(seconds: float | None, share: float | None) -> str:
    """``0.22s 17%``: a row's data wait and its share of the loop; ``-`` where not measured."""
    if seconds is None:
        return "-"
    text = f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.1f}s"
    return text + (f" {share:.0%}" if share is not None else "")


def shown_phases(names: list[str], data_wait_shown: bool) -> list[str]:
    """The phases whose seconds an epoch row shows: all of NAMES, but those of kind ``data``
    where the row shows its data wait (one data figure per row)."""
    if not data_wait_shown:
        return list(names)
    return [n for n in names if kind_of(n) != "data"]
