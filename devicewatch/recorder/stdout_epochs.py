"""Epoch marks from what an unmodified script prints, for runs that report no phases themselves.

The last resort: the zero-code instrumentation and the callbacks give phases; a script they do
not reach (another framework, instrumentation switched off) often still says which epoch it is
in. Recognised, on a line or on a progress bar's carriage-return update:

* Keras: a line that is only ``Epoch 3/20`` (counted from 1);
* tqdm bars and Lightning's progress bar: ``Epoch 3:`` or ``Epoch 3/20:`` at the start of a
  line that is a progress bar (``45%|███▌ |``, ``it/s``); a line printed once, such as
  ``Epoch 3: loss 0.41``, is not taken: many scripts print it when the epoch ENDS (Lightning
  counts from 0: a run whose first epoch printed is 0 is shifted to count from 1, as every view
  does);
* Lightning's rich progress bar: ``Epoch 2/9 ━━━━…`` (counted from 0, and 9 is the last index);
* Hugging Face's log dicts: ``{'loss': 0.9, …, 'epoch': 1.5}`` (the fraction of epochs done: 1.5
  is in the second epoch, 1.0 ends the first).

Each new epoch number closes the previous epoch's phase (name ``epoch``, ``source: "stdout"``)
and opens the next; the run's end closes the last. Once the workload says its phases itself
(its run info, or a phase of its own), nothing more is written here: its phases are better
than these (``phase_source``).
"""

from __future__ import annotations

import math
import re
from typing import Any
from collections.abc import Callable

from .. import events, phase_source
from ..runformat import records

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
KERAS = re.compile(r"^\s*Epoch (\d+)/(\d+)\s*$")
RICH_BAR = "━"
BAR = re.compile(r"^\s*[Ee]poch\s*(\d+)(?:\s*/\s*(\d+))?(?![\d.])")
# What tells a progress bar from a line printed once (``Epoch 3: loss 0.4``, often printed at
# an epoch's END, which would shift every phase by an epoch): tqdm's bar, its rate, rich's bar.
BAR_SIGNS = ("%|", "it/s", "s/it", RICH_BAR)
LOG_DICT = re.compile(r"^\s*\{.*['\"]epoch['\"]:\s*([0-9]+(?:\.[0-9]+)?)\s*[,}]")


def parse(text: str) -> tuple[int, int | None, bool] | None:
    """(epoch number as printed, the total if printed, whether it surely counts from 0), or
    None. Lightning's rich bar always counts from 0; whether another bar does is told by the
    first number a run prints."""
    keras = KERAS.match(text)
    if keras:
        return int(keras.group(1)), int(keras.group(2)), False
    bar = BAR.match(text)
    if bar and any(sign in text for sign in BAR_SIGNS):
        total = int(bar.group(2)) if bar.group(2) else None
        if RICH_BAR in text:  # Lightning's rich bar: "Epoch 2/9" is the third of ten
            return int(bar.group(1)), None if total is None else total + 1, True
        return int(bar.group(1)), total, False
    log = LOG_DICT.match(text)
    if log:
        done = float(log.group(1))
        return max(1, math.ceil(done)), None, False
    return None


class StdoutEpochs:
    """Follows the printed epoch and writes its phases while the workload reports none.

    ``reported()`` says whether the workload says its phases itself; ``on_epoch``
    learns every epoch printed (the status line shows it either way).
    """

    def __init__(self, write: Callable[[records.Writable], None], t: Callable[[], float],
                 reported: Callable[[], bool],
                 on_epoch: Callable[[int, int | None], None] = lambda epoch, epochs: None):
        self._write, self._t, self._reported, self._on_epoch = write, t, reported, on_epoch
        self._offset: int | None = None   # added to a printed number: 1 when the script counts from 0
        self.epoch: int | None = None     # the epoch printed last (counted from 1)
        self._open: int | None = None     # the epoch whose phase is open

    @staticmethod
    def might_mark(data: bytes) -> bool:
        """A cheap test before parsing: every recognised line holds "poch" (Epoch, 'epoch')."""
        return b"poch" in data

    def feed(self, line: bytes | str) -> bool:
        """Look at one line (or a progress bar's update); True if it is an epoch line."""
        text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
        if "\x1b" in text:
            text = ANSI.sub("", text)
        found = parse(text)
        if found is None:
            return False
        number, total, from_zero = found
        if self._offset is None:
            self._offset = 1 if from_zero or number == 0 else 0
        epoch = number + self._offset
        if epoch != self.epoch:
            self.epoch = epoch
            self._on_epoch(epoch, total)
            if not self._reported():
                self.close()
                self._open = epoch
                self._write_phase(events.PHASE_BEGIN, epoch, **({"epochs": total} if total else {}))
        return True

    def close(self) -> None:
        """End the open epoch phase (the next epoch began, or the run ended)."""
        if self._open is not None:
            self._write_phase(events.PHASE_END, self._open)
            self._open = None

    def _write_phase(self, kind: str, epoch: int, **extra: Any) -> None:
        self._write(records.Phase(self._t(), kind == events.PHASE_BEGIN, "epoch", epoch, events.DEFAULT_LANE,
                                  {**extra, "source": phase_source.PRINTED}))
