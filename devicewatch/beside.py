"""Work started in a thread beside the caller's, in a daemon thread: a process that quits does
not wait for it.

The comparison works out run B beside run A, and the comparison view works out its figures
beside the drawing; NumPy lets go of the GIL for most of that work, so two cores share it. A
``concurrent.futures`` pool (asyncio's default executor included) would be joined when the
process ends, holding a quitting dashboard for the second or two the figures of two days take.
"""

from __future__ import annotations

import threading
from typing import Any, Generic, TypeVar
from collections.abc import Callable

T = TypeVar("T")


class Beside(Generic[T]):
    """``work(*args)`` running in a daemon thread; ``result()`` waits for it (and raises what it raised)."""

    def __init__(self, work: Callable[..., T], *args: Any, name: str = "devicewatch-beside"):
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work, args), name=name, daemon=True)
        self._thread.start()

    def _run(self, work: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            self._result = work(*args)
        except BaseException as exc:
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set by the thread, which has finished
