"""The columnar form of a finished run: its sample columns as raw arrays in one file beside the
journal, memory-mapped by readers, so that a day-long run opens in seconds.

The JSONL journal stays the truth (flushed line by line, it is what a crash cannot take away);
this file is only a faster way to read it. ``RUN.jsonl.columns`` holds:

    8 bytes   MAGIC
    8 bytes   length of the meta, little-endian
    meta      JSON: format version, the layout (a digest of ``samples.COLUMNS``), the journal's
              fingerprint, the Samples' state, every array's dtype, shape and offset, and where
              the journal's other lines are
    data      from the next multiple of 64: each array, C order, 64-byte aligned; then the
              journal's lines that are not samples (header, events, logs, notices…), as written

A reader believes it only when the version, the layout and the journal's fingerprint (its
size and a digest of its head, its tail and 16 blocks between) all match; anything else, a
damaged file included, means reading the journal (``runfile.load``).

While a run is written, ``Spill`` keeps its columns a chunk at a time in an unnamed temporary
file; ``assemble`` joins the chunks into the columnar file at the end without holding them in
memory (the kernel copies them).
"""

from __future__ import annotations

import mmap
import os
import zlib
from typing import Any, BinaryIO
from collections.abc import Iterator

import numpy as np
import orjson

from .percent import MISSING_PERCENT, percent_to_float, whole_percents
from .schema import BY_NAME, COLUMNS

SUFFIX = ".columns"
MAGIC = b"DWCOLS\x00\n"
VERSION = 1
ALIGN = 64
HEAD = TAIL = 1 << 16    # bytes of the journal's start and end in its fingerprint
PROBES, PROBE = 16, 1 << 12  # and blocks spread between them
# The columns' declaration as a checksum: a change to COLUMNS makes every older columnar file stale.
LAYOUT = zlib.crc32(repr([(c.name, c.dtype, c.family, c.dims, c.group) for c in COLUMNS]).encode())


def path_for(journal: str | os.PathLike[str]) -> str:
    """Where the columnar form of the journal at ``journal`` is (``RUN.jsonl.columns``)."""
    return os.fspath(journal) + SUFFIX


def fingerprint(journal: str | os.PathLike[str]) -> dict[str, Any]:
    """The journal's size and a checksum of each of its head, its tail and blocks spread between:
    a journal rewritten, grown, cut or replaced by another run gives another fingerprint.
    (A checksum, not a cryptographic digest: it guards against accidents, and hashlib's import
    alone costs a report's start more than reading the blocks.)"""
    with open(journal, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        spots = [(0, HEAD), (max(0, size - TAIL), TAIL)]
        spots += [(size * (i + 1) // (PROBES + 1), PROBE) for i in range(PROBES)]
        sums = [zlib.crc32(os.pread(handle.fileno(), length, offset)) for offset, length in spots]
    return {"size": size, "crc32": sums}


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


# -- while the run is written -------------------------------------------------------------

class Spill:
    """Chunks of columns and lines appended to an unnamed temporary file as a run is written:
    each chunk is a length, a JSON index and its arrays' bytes, then the chunk's other lines."""

    def __init__(self, folder: str):
        import tempfile  # here: a reader never spills

        self.file: BinaryIO = tempfile.TemporaryFile(dir=folder or ".", prefix=".devicewatch-columns-")
        self.chunks: list[dict[str, Any]] = []   # per chunk: arrays [(key, dtype, shape, offset)], lines (offset, length)
        self.size = 0

    def write(self, arrays: dict[str, np.ndarray], lines: list[bytes]) -> None:
        index: dict[str, Any] = {"arrays": []}
        data = []
        offset = self.size
        for key, array in arrays.items():
            if key == "cpu":  # whole percents (schema 2) as bytes
                percent = whole_percents(array)
                array = array if percent is None else percent
            array = np.ascontiguousarray(array)
            index["arrays"].append((key, array.dtype.str, array.shape, offset))
            data.append(array)
            offset += array.nbytes
        blob = b"\n".join(lines)
        index["lines"] = (offset, len(blob)) if lines else (offset, -1)
        for array in data:
            if array.nbytes:
                self.file.write(array.reshape(-1).data.cast("B"))
        self.file.write(blob)
        self.size = offset + len(blob)
        self.chunks.append(index)

    def close(self) -> None:
        try:
            self.file.close()
        except OSError:  # a full disk refusing the last flush: the bytes were not wanted any more
            pass


def assemble(spill: Spill, journal: str, meta: dict[str, Any], sizes: dict[str, int]) -> str:
    """Join the spill's chunks into the columnar file beside ``journal`` (written under a
    temporary name, then renamed: a crash never leaves half a file under the real one).
    ``sizes``: the final cores and GPUs, to which chunks decoded before more were seen are padded."""
    spill.file.flush()
    pieces: dict[str, list[tuple[str, tuple[int, ...], int]]] = {}
    line_pieces = []
    for chunk in spill.chunks:
        for key, dtype, shape, offset in chunk["arrays"]:
            pieces.setdefault(key, []).append((dtype, tuple(shape), offset))
        offset, length = chunk["lines"]
        if length >= 0:
            line_pieces.append((offset, length))
    arrays: dict[str, Any] = {}
    position = 0
    for key, parts in pieces.items():
        column = BY_NAME[key.split(".")[0]]
        trailing = tuple(sizes[d] for d in column.dims)
        dtypes = {dtype for dtype, _, _ in parts}
        dtype = dtypes.pop() if len(dtypes) == 1 else np.dtype(column.dtype).str  # bytes and floats: floats
        rows = sum(shape[0] for _, shape, _ in parts)
        arrays[key] = {"dtype": dtype, "shape": [rows, *trailing], "offset": position}
        position = _aligned(position + rows * int(np.prod(trailing, dtype=np.int64)) * np.dtype(dtype).itemsize)
    lines_length = max(0, sum(length for _, length in line_pieces) + len(line_pieces) - 1)
    meta = dict(meta, version=VERSION, layout=LAYOUT, arrays=arrays, lines=[position, lines_length])
    head = orjson.dumps(meta)
    start = _aligned(16 + len(head))
    target = path_for(journal)
    partial = target + ".partial"
    try:
        with open(partial, "wb") as out:
            out.write(MAGIC + len(head).to_bytes(8, "little") + head)
            out.write(b"\0" * (start - 16 - len(head)))
            for key, parts in pieces.items():
                spec = arrays[key]
                out.seek(start + spec["offset"])
                column = BY_NAME[key.split(".")[0]]
                for dtype, shape, offset in parts:
                    if dtype == spec["dtype"] and list(shape[1:]) == spec["shape"][1:]:
                        _copy(spill.file, out, offset, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
                    else:
                        out.write(_conform(spill.file, dtype, shape, offset, column, spec).tobytes())
            out.seek(start + position)
            for i, (offset, length) in enumerate(line_pieces):
                if i:
                    out.write(b"\n")
                _copy(spill.file, out, offset, length)
            out.truncate(start + position + lines_length)
        os.replace(partial, target)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise
    return target


def _copy(source: BinaryIO, out: BinaryIO, offset: int, length: int) -> None:
    """``length`` bytes of ``source`` from ``offset`` to where ``out`` stands, copied by the kernel."""
    out.flush()
    target = out.tell()
    done = 0
    try:
        while done < length:
            copied = os.copy_file_range(source.fileno(), out.fileno(), length - done,
                                        offset + done, target + done)
            if copied == 0:
                break
            done += copied
    except (OSError, AttributeError):  # another file system, or no copy_file_range: by hand
        pass
    while done < length:
        block = os.pread(source.fileno(), min(length - done, 1 << 24), offset + done)
        if not block:
            raise OSError("the spill ended early")
        os.pwrite(out.fileno(), block, target + done)
        done += len(block)
    out.seek(target + length)


def _conform(source: BinaryIO, dtype: str, shape: tuple[int, ...], offset: int, column: Any,
             spec: dict[str, Any]) -> np.ndarray:
    """A chunk in the final dtype and width: per-core bytes back to floats where another chunk
    had fractions, and padding where the chunk saw fewer cores or GPUs than the run."""
    count = int(np.prod(shape, dtype=np.int64))
    array = np.frombuffer(os.pread(source.fileno(), count * np.dtype(dtype).itemsize, offset),
                          dtype=dtype, count=count).reshape(shape)
    if array.dtype == np.uint8 and np.dtype(spec["dtype"]) != np.uint8:
        array = percent_to_float(array)
    pad = [(0, 0)] + [(0, want - have) for want, have in zip(spec["shape"][1:], shape[1:])]
    fill = MISSING_PERCENT if array.dtype == np.uint8 else column.fill
    return np.pad(array, pad, constant_values=fill) if any(after for _, after in pad) else array


# -- reading --------------------------------------------------------------------------------

def read(journal: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray], Iterator[bytes]] | None:
    """The columnar form beside ``journal`` if it is there and matches it: its meta, its arrays
    (memory-mapped, read-only) and the journal's other lines (read as they are asked for: a
    million events need not be in memory twice); None otherwise."""
    try:
        with open(path_for(journal), "rb") as handle:
            head = handle.read(16)
            if len(head) < 16 or head[:8] != MAGIC:
                return None
            length = int.from_bytes(head[8:], "little")
            if length > 1 << 26:
                return None
            meta = orjson.loads(handle.read(length))
            if not isinstance(meta, dict) or meta.get("version") != VERSION or meta.get("layout") != LAYOUT \
                    or meta.get("journal") != fingerprint(journal):
                return None
            size = os.fstat(handle.fileno()).st_size
            start = _aligned(16 + length)
            view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except (OSError, ValueError):
        return None
    arrays = {}
    try:
        for key, spec in meta["arrays"].items():
            dtype = np.dtype(spec["dtype"])
            shape = tuple(int(n) for n in spec["shape"])
            count = int(np.prod(shape, dtype=np.int64))
            offset = start + int(spec["offset"])
            if dtype.hasobject or min(shape, default=0) < 0 or offset < start or offset + count * dtype.itemsize > size:
                return None
            arrays[key] = np.frombuffer(view, dtype=dtype, count=count, offset=offset).reshape(shape)
        offset, length = (int(n) for n in meta["lines"])
        if offset < 0 or length < 0 or start + offset + length > size:
            return None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return meta, arrays, _lines(view, start + offset, start + offset + length)


def _lines(view: Any, start: int, end: int, block: int = 1 << 22) -> Iterator[bytes]:
    """The lines between ``start`` and ``end`` of ``view``, a few MB of them at a time."""
    pending = b""
    while start < end:
        chunk = pending + bytes(view[start:min(start + block, end)])
        start += block
        lines = chunk.split(b"\n")
        pending = lines.pop() if start < end else b""
        yield from lines
    if pending:
        yield pending
