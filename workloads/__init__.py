"""Demo workloads, each runnable as ``python -m workloads.NAME``.

Every module here defines ``TITLE`` (one line: what it demonstrates), ``SOURCE`` (the
experiment it recreates, or ""), ``build_parser()`` returning its ``argparse`` parser, and
``main(argv=None) -> int``. Heavy frameworks (torch, TensorFlow, numba) are imported inside
``main`` or the functions it calls, never at module level, so listing the workloads and
showing their options stays instant. From devicewatch they import ``devicewatch.events`` only.
"""

import errno
import os
import signal
import sys
from collections.abc import Callable

DISK_FULL = 74   # EX_IOERR: the output could not be written (disk full, file size limit)


class Stopped(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C is, so every clean-up written for Ctrl-C runs for it too."""


def run(name: str, main: Callable[[], int]) -> int:
    """Run a workload's ``main`` so that it ends with one line and a meaningful status, never a
    traceback: 130 on SIGINT, 143 on SIGTERM, 74 when its output cannot be written (ENOSPC,
    EFBIG from a file size limit, EDQUOT), the status of ``main`` otherwise."""
    if hasattr(signal, "SIGXFSZ"):  # a file size limit fails the write (EFBIG) instead of killing us
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # Started in the background, a process inherits SIGINT ignored; a cancel must still stop it.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def stop(_signum: int, _frame: object) -> None:
        raise Stopped()

    signal.signal(signal.SIGTERM, stop)
    try:
        code = main()
        sys.stdout.flush()
    except Stopped:
        _leave(_end(name, "stopped (SIGTERM)", 143))
    except KeyboardInterrupt:
        _leave(_end(name, "cancelled (SIGINT)", 130))
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EPIPE):
            raise
        if exc.errno == errno.EPIPE:
            return _end(name, "its output was closed", 141)
        return _end(name, f"stopped: cannot write its output ({exc.strerror})", DISK_FULL)
    return code


def _leave(code: int) -> None:
    """Exit now with ``code``: the workload's own clean-ups have run while the interrupt unwound
    it, and a framework's exit handlers must not turn a cancel into a death by signal."""
    sys.stderr.flush()
    os._exit(code)


def _end(name: str, message: str, code: int) -> int:
    """Say how the run ended, once; output that can no longer be written is dropped, not retried."""
    for stream in (sys.stdout,):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:  # whatever is still buffered would fail again at exit, with a traceback-like message
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    try:
        print(f"{name}: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return code
