"""A run's samples encoded again from their columns, a block at a time, on another time axis:
how ``devicewatch merge`` writes each node's samples (a day of 8 GPUs without a dict per
sample). The lines are ``encode.chunk_lines``'s, derived from the sample table like every codec.
"""

from __future__ import annotations

import numpy as np

from .encode import as_stored, chunk_lines, python_round, ranges
from .percent import MISSING_PERCENT
from .samples import Samples
from .schema import NUMBER, PLAIN, TIME, Chunk, Encoder

# The system readings a sample's record carries (``Samples.record``), the merge's input before
# it worked on columns: any other system field of the probes was written as null.
SYSTEM_READINGS = ("freq_mhz", "mem_used", "mem_total", "mem_swap_used", "mem_swap_total")


class Reencoder:
    """A run's samples on another time axis (``shift + t × rate``, as ``label``'s samples),
    encoded from its columns a block at a time into the very records one reader's record per
    sample (``Samples.record``) taken through the writer's encoder would give: the same values
    and the same JSON, and the values as stored (``schema.Chunk``), from which the columns of
    the run they are written into are made."""

    def __init__(self, samples: Samples, label: str, shift: float, rate: float, encoder: Encoder):
        self.samples = samples
        self.label = label
        self.shift, self.rate = shift, rate
        self.t = samples.t
        self.merged_t = self.moved(self.t)
        self.gpus = samples.gpus
        self.percent = samples.core_percent()  # whole percents as bytes: no float copy of every core
        group_sources = {"sys": self._system, "proc": self._proc, "gpu": self._gpu, "gpu_proc": self._gpu_proc}
        self.sources = {group: [(group_sources[group](name), scale, digits) for name, scale, digits
                                in zip(encoder.fields[group], encoder.scale[group], encoder.digits[group])]
                        for group in group_sources}
        self.proc_readings = [samples.proc(name) for name in samples.fields["proc"]]
        # The driver's buffered samples of each GPU by time, each GPU's after the one before, and
        # the per-process readings by time, then GPU, then file order (a sample's are one run):
        # orders a recorder writes them in already, so no sort is needed and no index kept.
        util_t, util_gpu = samples.util_t, samples.util_gpu
        rows_type = np.int32 if len(util_t) < 2 ** 31 else np.int64
        index, times, self.util_base, self.util_in_file_order = [], [], [0], True
        for g in range(self.gpus):
            rows = np.flatnonzero(util_gpu == g).astype(rows_type)
            at = util_t[rows]
            if not (at[1:] >= at[:-1]).all():
                order = np.argsort(at, kind="stable")
                rows, at = rows[order], at[order]
                self.util_in_file_order = False
            index.append(rows)
            times.append(at)
            self.util_base.append(self.util_base[-1] + len(rows))
        self.util_index = np.concatenate(index) if index else np.zeros(0, rows_type)
        self.util_sorted_t = np.concatenate(times) if times else np.zeros(0)
        procs_t, procs_gpu = samples.procs_t, samples.procs_gpu
        ordered = ((procs_t[1:] > procs_t[:-1]) | ((procs_t[1:] == procs_t[:-1]) & (procs_gpu[1:] >= procs_gpu[:-1]))).all()
        self.procs_index = None if ordered else np.lexsort((np.arange(len(procs_t)), procs_gpu, procs_t))
        self.procs_sorted_t = procs_t if self.procs_index is None else procs_t[self.procs_index]

    def __len__(self) -> int:
        return len(self.t)

    def moved(self, t: np.ndarray) -> np.ndarray:
        return python_round(self.shift + t * self.rate, 6)

    # Where each field the writer stores comes from: the node's reading of that name as a
    # sample's record carries it, or None (null).
    def _system(self, name: str) -> np.ndarray | None:
        if name == "mem_total" or (name in SYSTEM_READINGS and name in self.samples.fields["sys"]):
            return self.samples.sys(name)
        return None

    def _proc(self, name: str) -> np.ndarray | None:
        return self.samples.proc(name) if name in self.samples.fields["proc"] else None

    def _gpu(self, name: str) -> np.ndarray | None:
        return self.samples.gpu(name) if name in self.samples.gpu_fields else None

    def _gpu_proc(self, name: str) -> np.ndarray | None:
        return self.samples.procs(name) if name in self.samples.fields["gpu_proc"] else None

    def _group(self, group: str, rows: np.ndarray) -> np.ndarray:
        """The group's stored values for these rows (of samples, or of per-process readings)."""
        sources = self.sources[group]
        shape = (len(rows), *(() if group in ("sys", "proc", "gpu_proc") else (self.gpus,)))
        out = np.full((*shape, len(sources)), np.nan)
        for j, (source, scale, digits) in enumerate(sources):
            if source is not None:
                out[..., j] = as_stored(source[rows], scale, digits)
        return out

    def block(self, idx: np.ndarray) -> tuple[list[bytes], Chunk]:
        """Samples ``idx`` of the node (in the order given): their lines and their values as stored."""
        samples, k, gpus = self.samples, len(idx), self.gpus
        t, merged_t = self.t[idx], self.merged_t[idx]
        if self.percent is not None:
            whole = self.percent[idx]
            cpu = whole.astype(np.float64)
            cpu[whole == MISSING_PERCENT] = np.nan
        else:
            with np.errstate(invalid="ignore"):
                cpu = np.rint(samples.cpu[idx].astype(np.float64))
            cpu[~np.isfinite(cpu)] = np.nan
        system = self._group("sys", idx)
        proc = self._group("proc", idx)
        # A sample whose process readings are all missing has none (``"proc": null``).
        no_proc = np.isnan(np.array([reading[idx] for reading in self.proc_readings]).reshape(-1, k)).all(axis=0)
        proc[no_proc] = np.nan
        present = samples.gpu_present[idx]
        gpu = self._group("gpu", idx)
        gpu[~present] = np.nan

        # The driver's buffered samples a sample's record carries: those of each GPU it drained,
        # after the node's sample before it and up to its own time.
        buffered = samples.util_buffered[idx, :gpus] & present[:, None]
        after = np.where(idx > 0, self.t[np.maximum(idx - 1, 0)], -np.inf)
        until = t + 1e-9
        first, last = np.zeros((k, gpus), np.int64), np.zeros((k, gpus), np.int64)
        for g in range(gpus):
            times = self.util_sorted_t[self.util_base[g]:self.util_base[g + 1]]
            first[:, g] = self.util_base[g] + np.searchsorted(times, after, "right")
            last[:, g] = self.util_base[g] + np.searchsorted(times, until, "right")
        counts = np.where(buffered, np.maximum(last - first, 0), 0).ravel()
        rows = self.util_index[ranges(first.ravel(), counts)]
        window = np.repeat(np.arange(k * gpus), counts)
        if not self.util_in_file_order:  # each window's samples in file order, as a mask gives them
            order = np.lexsort((rows, window))
            rows, window = rows[order], window[order]
        owner = window // max(gpus, 1)
        near = np.abs(samples.util_t[rows] - t[owner]) < 1e9
        rows, owner = rows[near], owner[near]
        util = np.column_stack([samples.util_gpu[rows].astype(np.float64),
                                np.rint((self.moved(samples.util_t[rows]) - merged_t[owner]) * 1000),
                                as_stored(samples.util_value[rows], 1, 1)])

        # Per-process readings: those at the sample's own time, GPU by GPU.
        start = np.searchsorted(self.procs_sorted_t, t, "left")
        counts = np.where(present, np.searchsorted(self.procs_sorted_t, t, "right") - start, 0)
        rows = ranges(start, counts)
        if self.procs_index is not None:
            rows = self.procs_index[rows]
        procs_owner = np.repeat(np.arange(k), counts)
        mine = samples.procs_gpu[rows] < gpus
        rows, procs_owner = rows[mine], procs_owner[mine]
        procs = np.column_stack([samples.procs_gpu[rows].astype(np.float64), self._group("gpu_proc", rows)])

        # The plain columns (schema.PLAIN): a number is written where the reading is not missing
        # (null where it is not finite), rounded as the encoder rounds it, or as read where it
        # keeps no digits (a slow GPU poll's time: the merge never moved it onto the merged axis);
        # a per-core reading as whole numbers.
        plain, written = {}, {"proc": ~no_proc}
        for column in PLAIN:
            if column.codec == TIME:
                plain[column.name] = merged_t
            elif column.name == "cpu":
                plain[column.name] = cpu
            elif column.codec == NUMBER:
                raw = getattr(samples, column.name)[idx].astype(np.float64)
                written[column.name] = ~np.isnan(raw)
                plain[column.name] = np.where(np.isfinite(raw), raw, np.nan) if column.digits is None \
                    else as_stored(raw, 1, column.digits)
            else:
                with np.errstate(invalid="ignore"):
                    values = np.rint(getattr(samples, column.name)[idx].astype(np.float64))
                values[~np.isfinite(values)] = np.nan
                plain[column.name] = values
        written["gpus_t"] &= present  # the time of a GPU poll, in a sample that holds one
        for name, flags in written.items():
            if name in plain:
                plain[name] = np.where(flags, plain[name], np.nan)
        chunk = Chunk(plain, system, proc, present, gpu, (util, owner), (procs, procs_owner), [self.label] * k)
        return chunk_lines(chunk, written), chunk
